/**
 * The route table: every path the daemon serves, its module and its auth policy. `auth_test.ts`
 * enumerates it, so a new route cannot skip authentication unnoticed.
 */
import type { RouteDef } from "../lib/router.ts";
import { handler as agentWs } from "./agent/ws.ts";
import { handler as cloneCredential } from "./agent/clone_credential.ts";
import { handler as browserWs } from "./ws.ts";
import { handler as sessions } from "./api/sessions/index.ts";
import { handler as session } from "./api/sessions/[id]/index.ts";
import { handler as sessionEvents } from "./api/sessions/[id]/events.ts";
import { handler as sessionRuns } from "./api/sessions/[id]/runs.ts";
import { handler as sessionExport } from "./api/sessions/[id]/export.ts";
import { handler as sessionPrompt } from "./api/sessions/[id]/prompt.ts";
import { handler as sessionAbort } from "./api/sessions/[id]/abort.ts";
import { handler as sessionModel } from "./api/sessions/[id]/model.ts";
import { handler as sessionName } from "./api/sessions/[id]/name.ts";
import { handler as sessionContainer } from "./api/sessions/[id]/container.ts";
import { handler as sessionContainerLogs } from "./api/sessions/[id]/container/logs.ts";
import { handler as sessionResume } from "./api/sessions/[id]/resume.ts";
import { handler as sessionBundle } from "./api/sessions/[id]/bundle.ts";
import { handler as sessionStream } from "./api/sessions/[id]/stream.ts";
import { handler as sessionImage } from "./api/sessions/[id]/images/[sha256].ts";
import { handler as sessionMergeRequest } from "./api/sessions/[id]/merge-request.ts";
import { handler as sessionMergeRequestComments } from "./api/sessions/[id]/merge-request/comments.ts";
import { handler as sessionMergeRequestSend } from "./api/sessions/[id]/merge-request/comments/send.ts";
import { handler as sessionChanges } from "./api/sessions/[id]/changes/index.ts";
import { handler as sessionChangedFile } from "./api/sessions/[id]/changes/file.ts";
import { handler as daemonStream } from "./api/stream.ts";
import { handler as spawn } from "./api/spawn/index.ts";
import { handler as spawnStatus } from "./api/spawn/status.ts";
import { handler as gitlabConnect } from "./api/gitlab/connect.ts";
import { handler as gitlabStatus } from "./api/gitlab/status.ts";
import { handler as gitlabRepos } from "./api/gitlab/repos.ts";
import { handler as sessionPolicy } from "./api/sessions/[id]/policy.ts";
import { handler as sessionBudget } from "./api/sessions/[id]/budget.ts";
import { handler as sessionWheel } from "./api/sessions/[id]/wheel.ts";
import { handler as usageApi } from "./api/usage.ts";
import { handler as usagePage } from "./usage.tsx";
import { handler as sessionApprovals } from "./api/sessions/[id]/approvals.ts";
import { handler as approvals } from "./api/approvals/index.ts";
import { handler as approval } from "./api/approvals/[id].ts";
import { handler as tokens } from "./api/tokens/index.ts";
import { handler as token } from "./api/tokens/[name].ts";
import { handler as audit } from "./api/audit.ts";
import { handler as me } from "./api/me.ts";
import { handler as health } from "./api/health.ts";
import { handler as search } from "./api/search.ts";
import { handler as webhooks } from "./api/webhooks/index.ts";
import { handler as webhook } from "./api/webhooks/[id]/index.ts";
import { handler as webhookDeliveries } from "./api/webhooks/[id]/deliveries.ts";
import { handler as webhookTest } from "./api/webhooks/[id]/test.ts";
import { handler as hookSettings } from "./api/hooks/gitlab.ts";
import { handler as genericHook } from "./hooks/generic.ts";
import { handler as gitlabHook } from "./hooks/gitlab.ts";
import { handler as pushKey } from "./api/push/key.ts";
import { handler as pushSubscriptions } from "./api/push/subscriptions.ts";
import { handler as pushVisible } from "./api/push/visible.ts";
import { handler as indexPage } from "./index.tsx";
import { handler as sessionPage } from "./sessions/[id].tsx";
import { handler as searchPage } from "./search.tsx";
import { handler as auditPage } from "./audit.tsx";
import { handler as tokensPage } from "./tokens.tsx";
import { handler as notificationsPage } from "./notifications.tsx";
import { handler as webhooksPage } from "./webhooks.tsx";
import { handler as login } from "./login.ts";
import { handler as staticAssets } from "./static.ts";

export const routes: RouteDef[] = [
  { path: "/agent/ws", handler: agentWs, auth: "agent" },
  { path: "/agent/clone-credential", handler: cloneCredential, auth: "agent" },
  { path: "/ws", handler: browserWs, auth: "token" },
  { path: "/api/sessions", handler: sessions, auth: "token" },
  { path: "/api/sessions/:id", handler: session, auth: "token" },
  { path: "/api/sessions/:id/events", handler: sessionEvents, auth: "token" },
  { path: "/api/sessions/:id/runs", handler: sessionRuns, auth: "token" },
  { path: "/api/sessions/:id/export", handler: sessionExport, auth: "token" },
  { path: "/api/sessions/:id/images/:sha256", handler: sessionImage, auth: "token" },
  { path: "/api/sessions/:id/prompt", handler: sessionPrompt, auth: "token", roles: { POST: "operator" } },
  { path: "/api/sessions/:id/abort", handler: sessionAbort, auth: "token", roles: { POST: "operator" } },
  { path: "/api/sessions/:id/model", handler: sessionModel, auth: "token", roles: { PUT: "operator" } },
  { path: "/api/sessions/:id/name", handler: sessionName, auth: "token", roles: { PUT: "operator" } },
  {
    path: "/api/sessions/:id/container",
    handler: sessionContainer,
    auth: "token",
    roles: { DELETE: "operator" },
  },
  {
    path: "/api/sessions/:id/container/logs",
    handler: sessionContainerLogs,
    auth: "token",
    roles: { GET: "operator" },
  },
  { path: "/api/sessions/:id/resume", handler: sessionResume, auth: "token", roles: { POST: "operator" } },
  { path: "/api/sessions/:id/bundle", handler: sessionBundle, auth: "token", roles: { GET: "operator" } },
  { path: "/api/sessions/:id/policy", handler: sessionPolicy, auth: "token", roles: { PUT: "operator" } },
  { path: "/api/sessions/:id/budget", handler: sessionBudget, auth: "token", roles: { PUT: "operator" } },
  {
    path: "/api/sessions/:id/wheel",
    handler: sessionWheel,
    auth: "token",
    roles: { POST: "operator", DELETE: "operator" },
  },
  { path: "/api/sessions/:id/approvals", handler: sessionApprovals, auth: "token" },
  {
    path: "/api/sessions/:id/merge-request",
    handler: sessionMergeRequest,
    auth: "token",
    roles: { POST: "operator" },
  },
  { path: "/api/sessions/:id/merge-request/comments", handler: sessionMergeRequestComments, auth: "token" },
  {
    path: "/api/sessions/:id/merge-request/comments/send",
    handler: sessionMergeRequestSend,
    auth: "token",
    roles: { POST: "operator" },
  },
  { path: "/api/sessions/:id/changes", handler: sessionChanges, auth: "token" },
  { path: "/api/sessions/:id/changes/file", handler: sessionChangedFile, auth: "token" },
  { path: "/api/approvals", handler: approvals, auth: "token" },
  { path: "/api/usage", handler: usageApi, auth: "token" },
  { path: "/api/approvals/:id", handler: approval, auth: "token", roles: { POST: "operator" } },
  { path: "/api/sessions/:id/stream", handler: sessionStream, auth: "token" },
  { path: "/api/stream", handler: daemonStream, auth: "token" },
  { path: "/api/tokens", handler: tokens, auth: "token", roles: { GET: "admin" } },
  { path: "/api/tokens/:name", handler: token, auth: "token" },
  { path: "/api/audit", handler: audit, auth: "token", roles: { GET: "admin" } },
  { path: "/api/me", handler: me, auth: "token" },
  { path: "/api/search", handler: search, auth: "token" },
  { path: "/api/webhooks", handler: webhooks, auth: "token", roles: { GET: "admin", POST: "admin" } },
  { path: "/api/webhooks/:id", handler: webhook, auth: "token", roles: { DELETE: "admin" } },
  {
    path: "/api/webhooks/:id/deliveries",
    handler: webhookDeliveries,
    auth: "token",
    roles: { GET: "admin" },
  },
  { path: "/api/webhooks/:id/test", handler: webhookTest, auth: "token", roles: { POST: "admin" } },
  { path: "/api/push/key", handler: pushKey, auth: "token" },
  {
    path: "/api/push/subscriptions",
    handler: pushSubscriptions,
    auth: "token",
    roles: { POST: "viewer", DELETE: "viewer" },
  },
  { path: "/api/push/visible", handler: pushVisible, auth: "token", roles: { POST: "viewer" } },
  {
    path: "/api/hooks/gitlab",
    handler: hookSettings,
    auth: "token",
    roles: { GET: "admin", PUT: "admin", DELETE: "admin" },
  },
  { path: "/api/spawn", handler: spawn, auth: "token", roles: { POST: "operator" } },
  { path: "/api/spawn/status", handler: spawnStatus, auth: "token" },
  { path: "/api/gitlab/connect", handler: gitlabConnect, auth: "token" },
  { path: "/api/gitlab/status", handler: gitlabStatus, auth: "token" },
  { path: "/api/gitlab/repos", handler: gitlabRepos, auth: "token" },
  { path: "/", handler: indexPage, auth: "page" },
  { path: "/sessions/:id", handler: sessionPage, auth: "page" },
  { path: "/search", handler: searchPage, auth: "page" },
  { path: "/audit", handler: auditPage, auth: "page" },
  { path: "/usage", handler: usagePage, auth: "page" },
  { path: "/tokens", handler: tokensPage, auth: "page" },
  { path: "/notifications", handler: notificationsPage, auth: "page" },
  { path: "/webhooks", handler: webhooksPage, auth: "page" },
  { path: "/login", handler: login, auth: "public" },
  { path: "/api/health", handler: health, auth: "public" },
  // Hooks check their own credentials: an operator token (generic) or the GitLab hook secret.
  { path: "/hooks/generic", handler: genericHook, auth: "public" },
  { path: "/hooks/gitlab", handler: gitlabHook, auth: "public" },
  { path: "/static/:file", handler: staticAssets, auth: "public" },
];
