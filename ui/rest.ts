/**
 * One typed function per REST route (PROTOCOL.md, Transport 2), over `api()` so each gets the token, the JSON
 * handling and the errors by kind (`SignInRequired` on 401, `ApiError` otherwise). Bodies and answers use the
 * protocol's types; the browser never builds an `/api/...` path anywhere else.
 */
import type {
  Approval,
  ApprovalState,
  AskSet,
  ChangedFile,
  Changes,
  ChangeScope,
  DecisionBody,
  DeliverAs,
  MergeRequestBody,
  MergeRequestComments,
  MergeRequestCommentsSendBody,
  MergeRequestCommentsSendResult,
  MergeRequestView,
  ModelBody,
  PromptImage,
  PromptResult,
  PushSubscribeBody,
  ResumeResult,
  SessionSummary,
  SpawnBody,
  SpawnJob,
} from "../lib/protocol.ts";
import type { ExportFormat, RunSummary, SearchPage } from "../lib/protocol.ts";
import type { BudgetBody, BudgetView, Wheel } from "../lib/protocol.ts";
import type { z } from "zod";
import { api } from "./api.ts";
import type {
  AttemptRow,
  AuditRow,
  Endpoint,
  EndpointRecord,
  GitlabRepo,
  GitlabStatus,
  SpawnResult,
  TokenRow,
  UiEvent,
} from "./types.ts";
import type { Me } from "./roles.ts";
import type { NotifyKind } from "../lib/notify/kinds.ts";

/** `GET /api/hooks/gitlab`: `source` is `env` while `LVMH_GITLAB_HOOK_SECRET` decides. */
export interface GitlabHookStatus {
  enabled: boolean;
  source: "env" | "api" | null;
  path: string;
}

/** A budget as the page sends it (`{}` removes it). */
export type BudgetInput = z.input<typeof BudgetBody>;

function session(id: string): string {
  return `/api/sessions/${encodeURIComponent(id)}`;
}

function json(method: string, body: unknown): RequestInit {
  return { method, body: JSON.stringify(body) };
}

/** `GET /api/sessions`: every session, most recent activity first. */
export function listSessions(): Promise<SessionSummary[]> {
  return api<SessionSummary[]>("/api/sessions");
}

/** `GET /api/sessions/:id`. */
export function getSession(id: string): Promise<SessionSummary> {
  return api<SessionSummary>(session(id));
}

/** `DELETE /api/sessions/:id`: an offline session and its history (409 while online). */
export function deleteSession(id: string): Promise<{ ok: true }> {
  return api<{ ok: true }>(session(id), { method: "DELETE" });
}

/** Which page of `GET /api/sessions/:id/events`: after a seq (ascending), or the latest before one. */
export type EventsPage = { after: number; limit?: number } | { before: number; limit?: number };

/** `GET /api/sessions/:id/events`. */
export function sessionEvents(id: string, page: EventsPage): Promise<UiEvent[]> {
  const q = "before" in page ? `before=${page.before}` : `after=${page.after}`;
  return api<UiEvent[]>(`${session(id)}/events?${q}&limit=${page.limit ?? 1000}`);
}

/**
 * `POST /api/sessions/:id/prompt`, with images when given (409 when the session is offline, or while someone
 * else holds its wheel unless `force`).
 */
export function sendPrompt(
  id: string,
  message: string,
  deliverAs: DeliverAs,
  images?: PromptImage[],
  force = false,
): Promise<PromptResult> {
  const body = images ? { message, deliverAs, images } : { message, deliverAs };
  return api<PromptResult>(`${session(id)}/prompt`, json("POST", force ? { ...body, force } : body));
}

/** `GET /api/sessions/:id/images/:sha256`: where the daemon serves an image a web prompt sent. */
export function imageUrl(sessionId: string, sha256: string): string {
  return `${session(sessionId)}/images/${encodeURIComponent(sha256)}`;
}

/** `PUT /api/sessions/:id/model`: taken (202); the plugin's `command_result` answers `commandId`. */
export function setModel(id: string, body: ModelBody): Promise<{ commandId: string }> {
  return api<{ commandId: string }>(`${session(id)}/model`, json("PUT", body));
}

/** `PUT /api/sessions/:id/name`: taken (202); the plugin's `command_result` answers `commandId`. */
export function renameSession(id: string, name: string): Promise<{ commandId: string }> {
  return api<{ commandId: string }>(`${session(id)}/name`, json("PUT", { name }));
}

/** `POST /api/sessions/:id/abort` (409 when the session is offline, or someone else steers unless `force`). */
export function abortSession(id: string, force = false): Promise<{ ok: true }> {
  return api<{ ok: true }>(`${session(id)}/abort`, json("POST", force ? { force } : {}));
}

/** `PUT /api/sessions/:id/budget`: set a session's budget; `{}` removes it. */
export function setBudget(id: string, body: BudgetInput): Promise<BudgetView> {
  return api<BudgetView>(`${session(id)}/budget`, json("PUT", body));
}

/** `POST /api/sessions/:id/wheel`: steer the session for `minutes` (others' prompts and aborts then wait). */
export function takeWheel(id: string, minutes: number): Promise<Wheel> {
  return api<Wheel>(`${session(id)}/wheel`, json("POST", { minutes }));
}

/** `DELETE /api/sessions/:id/wheel`: release it. */
export function releaseWheel(id: string): Promise<{ ok: true }> {
  return api<{ ok: true }>(`${session(id)}/wheel`, { method: "DELETE" });
}

/** `DELETE /api/sessions/:id/container`: stop a spawned session's container (its storage is kept). */
export function stopContainer(id: string): Promise<{ ok: true }> {
  return api<{ ok: true }>(`${session(id)}/container`, { method: "DELETE" });
}

/** `POST /api/sessions/:id/resume`: a new worker on a stopped or crashed spawned session's storage. */
export function resumeSession(id: string): Promise<ResumeResult> {
  return api<ResumeResult>(`${session(id)}/resume`, json("POST", {}));
}

/** `GET /api/sessions/:id/bundle`: where the browser downloads a spawned session's work (a git bundle). */
export function bundleUrl(id: string): string {
  return `${session(id)}/bundle`;
}

/** `GET /api/sessions/:id/container/logs`: where the browser reads a spawned session's worker logs. */
export function containerLogsUrl(id: string, tail = 1000): string {
  return `${session(id)}/container/logs?tail=${tail}`;
}

/** `GET /api/sessions/:id/approvals`: every approval of one session, oldest first. */
export function sessionApprovals(id: string): Promise<Approval[]> {
  return api<Approval[]>(`${session(id)}/approvals`);
}

/** `GET /api/sessions/:id/changes?scope=`: what the session changed, against its base or its HEAD. */
export function sessionChanges(id: string, scope: ChangeScope): Promise<Changes> {
  return api<Changes>(`${session(id)}/changes?scope=${scope}`);
}

/** `GET /api/sessions/:id/changes/file?path=&scope=`: one changed file with its whole diff. */
export function sessionChangedFile(id: string, path: string, scope: ChangeScope): Promise<ChangedFile> {
  const q = new URLSearchParams({ path, scope });
  return api<ChangedFile>(`${session(id)}/changes/file?${q}`);
}

/** What `POST /api/sessions/:id/merge-request` takes (the protocol's schema, as a browser writes it). */
export type MergeRequestRequest = z.input<typeof MergeRequestBody>;

/** What `POST /api/sessions/:id/merge-request` answers: 201 the first time, 200 after. */
export interface MergeRequestShipped {
  mergeRequest: Pick<MergeRequestView, "iid" | "webUrl" | "state" | "sourceBranch" | "targetBranch" | "sha">;
}

/** `GET /api/sessions/:id/merge-request`: the session's merge request (404 when it has none). */
export function sessionMergeRequest(id: string): Promise<MergeRequestView> {
  return api<MergeRequestView>(`${session(id)}/merge-request`);
}

/**
 * `POST /api/sessions/:id/merge-request`: push the session's work and open or update its merge request
 * (409 nothing to push, 412 GitLab not connected, 422 secrets with `secrets` in the error's body, 502 GitLab).
 */
export function shipMergeRequest(id: string, body: MergeRequestRequest): Promise<MergeRequestShipped> {
  return api<MergeRequestShipped>(`${session(id)}/merge-request`, json("POST", body));
}

/** `GET /api/sessions/:id/merge-request/comments`: its human and inline notes, oldest first. */
export function mergeRequestComments(id: string): Promise<MergeRequestComments> {
  return api<MergeRequestComments>(`${session(id)}/merge-request/comments`);
}

/** `POST /api/sessions/:id/merge-request/comments/send`: the picked comments as one follow-up (409 offline). */
export function sendMergeRequestComments(
  id: string,
  body: MergeRequestCommentsSendBody,
): Promise<MergeRequestCommentsSendResult> {
  return api<MergeRequestCommentsSendResult>(
    `${session(id)}/merge-request/comments/send`,
    json("POST", body),
  );
}

/** `PUT /api/sessions/:id/policy`: the session's ask set. */
export function setPolicy(id: string, ask: AskSet): Promise<{ ask: AskSet }> {
  return api<{ ask: AskSet }>(`${session(id)}/policy`, json("PUT", { ask }));
}

/** `GET /api/approvals?state=…`: approvals of every session, oldest first. */
export function listApprovals(state?: ApprovalState): Promise<Approval[]> {
  return api<Approval[]>(`/api/approvals${state ? `?state=${state}` : ""}`);
}

/** `POST /api/approvals/:id`: answer one (409 when the other answer was stored first). */
export function decideApproval(id: string, body: DecisionBody): Promise<Approval> {
  return api<Approval>(`/api/approvals/${encodeURIComponent(id)}`, json("POST", body));
}

/** `POST /api/spawn`: answered once the container runs. */
export function spawn(body: SpawnBody): Promise<SpawnResult> {
  return api<SpawnResult>("/api/spawn", json("POST", body));
}

/** `GET /api/spawn/status`. */
export function spawnStatus(): Promise<SpawnJob[]> {
  return api<SpawnJob[]>("/api/spawn/status");
}

/** `GET /api/gitlab/status`. */
export function gitlabStatus(): Promise<GitlabStatus> {
  return api<GitlabStatus>("/api/gitlab/status");
}

/** `POST /api/gitlab/connect`: store a personal access token (checked against GitLab first). */
export function gitlabConnect(token: string): Promise<{ username: string }> {
  return api<{ username: string }>("/api/gitlab/connect", json("POST", { token }));
}

/** `DELETE /api/gitlab/connect`. */
export function gitlabDisconnect(): Promise<{ ok: true }> {
  return api<{ ok: true }>("/api/gitlab/connect", { method: "DELETE" });
}

/** `GET /api/gitlab/repos` (`refresh` rereads GitLab instead of the 60 s cache). */
export function gitlabRepos(refresh = false): Promise<GitlabRepo[]> {
  return api<GitlabRepo[]>(`/api/gitlab/repos${refresh ? "?refresh=1" : ""}`);
}

/** `GET /api/me`: who is signed in. */
export function me(): Promise<Me> {
  return api<Me>("/api/me");
}

/** `GET /api/audit` (admin): rows with an id above `after`, oldest first. */
export function auditPage(after: number, limit = 100): Promise<AuditRow[]> {
  return api<AuditRow[]>(`/api/audit?after=${after}&limit=${limit}`);
}

/** `GET /api/tokens` (admin): named tokens, never a value. */
export function listTokens(): Promise<TokenRow[]> {
  return api<TokenRow[]>("/api/tokens");
}

/** `POST /api/tokens` (admin): a new token; the answer is the only time its value is shown. */
export function addToken(name: string, role: string): Promise<{ name: string; role: string; token: string }> {
  return api("/api/tokens", json("POST", { name, role }));
}

/** `DELETE /api/tokens/:name` (admin): revoked at once, also on open sockets and streams. */
export function revokeToken(name: string): Promise<{ ok: true }> {
  return api<{ ok: true }>(`/api/tokens/${encodeURIComponent(name)}`, { method: "DELETE" });
}

/** `GET /api/webhooks` (admin): outbound endpoints with their latest attempt, never a secret. */
export function listWebhooks(): Promise<Endpoint[]> {
  return api<Endpoint[]>("/api/webhooks");
}

/** `POST /api/webhooks` (admin): a new endpoint; the answer is the only time its signing secret is shown. */
export function addWebhook(url: string, events: NotifyKind[]): Promise<EndpointRecord> {
  return api<EndpointRecord>("/api/webhooks", json("POST", { url, events }));
}

/** `DELETE /api/webhooks/:id` (admin): what it still had queued is dropped. */
export function removeWebhook(id: string): Promise<unknown> {
  return api(`/api/webhooks/${encodeURIComponent(id)}`, { method: "DELETE" });
}

/** `POST /api/webhooks/:id/test` (admin): queue a signed test delivery. */
export function testWebhook(id: string): Promise<{ ok: true; deliveryId: string }> {
  return api(`/api/webhooks/${encodeURIComponent(id)}/test`, { method: "POST" });
}

/** `GET /api/webhooks/:id/deliveries` (admin): the latest attempts, newest first. */
export function webhookDeliveries(id: string): Promise<AttemptRow[]> {
  return api<AttemptRow[]>(`/api/webhooks/${encodeURIComponent(id)}/deliveries`);
}

/** `GET /api/hooks/gitlab` (admin): whether the GitLab hook has a secret, and where it comes from. */
export function gitlabHookStatus(): Promise<GitlabHookStatus> {
  return api<GitlabHookStatus>("/api/hooks/gitlab");
}

/** `PUT /api/hooks/gitlab` (admin): set the GitLab hook secret (never shown back). */
export function setGitlabHookSecret(secret: string): Promise<{ ok: true; overriddenByEnv: boolean }> {
  return api("/api/hooks/gitlab", json("PUT", { secret }));
}

/** `DELETE /api/hooks/gitlab` (admin): clear the secret set here (the hook answers 404 again). */
export function clearGitlabHookSecret(): Promise<{ ok: true; enabled: boolean }> {
  return api("/api/hooks/gitlab", { method: "DELETE" });
}

/** `GET /api/push/key`: the daemon's VAPID public key (base64url). */
export function pushKey(): Promise<{ publicKey: string }> {
  return api<{ publicKey: string }>("/api/push/key");
}

/** `GET /api/push/subscriptions?endpoint=…`: the kinds this subscription gets, null when the daemon has none. */
export function pushKinds(endpoint: string): Promise<{ kinds: NotifyKind[] | null }> {
  return api<{ kinds: NotifyKind[] | null }>(
    `/api/push/subscriptions?endpoint=${encodeURIComponent(endpoint)}`,
  );
}

/** `POST /api/push/subscriptions`: add or replace this browser's subscription with the kinds wanted. */
export function savePushSubscription(body: PushSubscribeBody): Promise<unknown> {
  return api("/api/push/subscriptions", json("POST", body));
}

/** `DELETE /api/push/subscriptions?endpoint=…`. */
export function removePushSubscription(endpoint: string): Promise<unknown> {
  return api(`/api/push/subscriptions?endpoint=${encodeURIComponent(endpoint)}`, { method: "DELETE" });
}

/** `GET /api/search`: ranked hits over every session (or one); `before` is the previous page's `next`. */
export function searchEvents(query: {
  q: string;
  sessionId?: string;
  type?: "message" | "tool" | "prompt";
  limit?: number;
  before?: string;
}): Promise<SearchPage> {
  const params = new URLSearchParams({ q: query.q, limit: String(query.limit ?? 20) });
  if (query.sessionId) params.set("sessionId", query.sessionId);
  if (query.type) params.set("type", query.type);
  if (query.before) params.set("before", query.before);
  return api<SearchPage>(`/api/search?${params}`);
}

/** `GET /api/sessions/:id/runs`: the session's runs, newest first (those starting below `before`). */
export function sessionRuns(id: string, before?: number): Promise<RunSummary[]> {
  return api<RunSummary[]>(`${session(id)}/runs${before === undefined ? "" : `?before=${before}`}`);
}

/** `GET /api/sessions/:id/export`: where the browser downloads the session as Markdown, JSONL or HTML. */
export function exportUrl(id: string, format: ExportFormat): string {
  return `${session(id)}/export?format=${format}`;
}
