/** The help texts: the overview (`lvmh --help`) and one per command (`lvmh COMMAND --help`). */
import type { CommandName } from "./commands.ts";
import { DEFAULT_URL } from "./config.ts";

export const HELP: Record<"" | CommandName, string> = {
  "": `lvmh: watch and steer pi sessions through an lvmh daemon.

Usage: lvmh [--url URL] [--token TOKEN] COMMAND [ARGS]

Commands:
  login [URL] [--token T]           check the token and save URL and token to the config file
  sessions [--online] [--json]      list sessions
  tail ID [-f] [--from SEQ] [--json]  show a session's conversation (-f: follow it live)
  prompt ID TEXT [--follow-up] [--image FILE]...   send a message (TEXT "-" reads stdin)
  abort ID                          abort the current run
  approvals [--json]                list the tool calls waiting for a person
  approve ID [--reason R]           let a waiting tool call run
  reject ID [--reason R]            refuse it
  spawn GROUP/PROJECT [--branch B] [--ask bash,edit|all|none]   start a session in a container
  stop ID                           stop a spawned session's container (its work is kept)
  resume ID                         start a stopped or crashed spawned session again, where it was
  logs ID [--tail N]                its container's last log lines (kept after a stop or a crash)
  bundle ID > work.bundle           download its work as a git bundle (git clone work.bundle)
  token add NAME --role ROLE | token list [--json] | token revoke NAME   named tokens (admin)
  changes ID [--stat] [--uncommitted] [--json]   what the session changed (a diff, or --stat a summary)
  mr ID [--title T [--description D] [--target B] [--draft]]   push and open or update its merge request
  mr ID --comments | --send IDS [--note N]    list its review comments, or send the picked ones to the agent
  search QUERY [--session ID] [--type T] [--json]   find what any session said or did
  export ID [--format md|jsonl|html] > FILE   a session as Markdown, JSONL or HTML
  usage [--by repo] [--since 7d] [--json]   runs, tokens and cost by day, session, repo, person or model
  budget ID [--cost D] [--tokens N] [--on ask|stop] [--clear]   show or set its spending limit

Configuration: --url/--token, else LVMH_URL and LVMH_TOKEN, else the file written by "lvmh login"
($XDG_CONFIG_HOME/lvmh/config.json, default ~/.config/lvmh/config.json). LVMH_URL is the daemon's
http(s) base; the plugin's ws://HOST:PORT/agent/ws form works too. Default ${DEFAULT_URL}.
--json prints one JSON object per line. Exit codes: 0 ok, 1 the daemon refused, 2 bad usage,
3 cannot reach the daemon. "lvmh COMMAND --help" tells more.`,
  login: `Usage: lvmh login [URL] [--token TOKEN]
Checks the token against the daemon, then writes URL and token to the config file (mode 600).
Without --token it uses LVMH_TOKEN, else reads one line from stdin.`,
  sessions: `Usage: lvmh sessions [--online] [--json]
Lists sessions, most recent activity first: id, state, name, repo or cwd, model, last activity and how
many approvals wait. --online shows only sessions with a live pi; --json prints each session as JSON.`,
  tail: `Usage: lvmh tail ID [-f|--follow] [--from SEQ] [--json]
Prints a session's conversation: roles, tool calls with their status, run ends. Without --from, the
latest page (1,000 events); --from SEQ starts at event SEQ (0: from the start). -f keeps following,
streaming text as it arrives, and reconnects through daemon restarts without repeating or skipping an
event. --json prints each event (the whole envelope) as one JSON line instead.`,
  prompt: `Usage: lvmh prompt ID TEXT [--follow-up] [--image FILE]... [--json]
Sends TEXT ("-": read it from stdin) to the session: as a steer by default, or as a follow-up once the
current run ends. --image attaches a PNG, JPEG, GIF or WebP file (repeatable). Prints the prompt id.`,
  abort: `Usage: lvmh abort ID
Aborts the session's current run.`,
  approvals: `Usage: lvmh approvals [--json]
Lists the tool calls waiting for a person, oldest first.`,
  approve: `Usage: lvmh approve APPROVAL_ID [--reason R] [--json]
Approves a waiting tool call; the first answer wins.`,
  reject: `Usage: lvmh reject APPROVAL_ID [--reason R] [--json]
Rejects a waiting tool call; the agent gets the reason.`,
  spawn: `Usage: lvmh spawn GROUP/PROJECT [--branch B] [--ask bash,edit|all|none] [--json]
Starts a session in a container from a GitLab repository. Prints the new session's id once it runs.`,
  stop: `Usage: lvmh stop ID
Stops and removes a spawned session's container. Its history and its storage (working copy, conversation)
stay: "lvmh resume ID" starts it again.`,
  resume: `Usage: lvmh resume ID [--json]
Starts a stopped or crashed spawned session again on its kept storage: pi reopens its conversation, under
the same id, with the same model, on the same working copy. Prints the job id (see /api/spawn/status).`,
  logs: `Usage: lvmh logs ID [--tail N]
Prints the last N (1 to 1,000, default 100) log lines of a spawned session's container: the running
one's, or those kept when it stopped or crashed.`,
  bundle: `Usage: lvmh bundle ID > work.bundle
Writes a spawned session's work as a git bundle to stdout: its branch with the uncommitted changes as one
more commit on top. "git clone work.bundle" gives a repository with that history.`,
  token: `Usage: lvmh token add NAME --role admin|operator|viewer|agent
       lvmh token list [--json]
       lvmh token revoke NAME
Named tokens (needs an admin token). "add" prints the new token once.`,
  changes: `Usage: lvmh changes ID [--stat] [--uncommitted] [--json]
Shows what the session changed: its working tree, untracked files included, against its base (a spawned
session's recorded start, a terminal session's merge-base with its upstream), with the commits since.
--uncommitted compares with HEAD instead; --stat prints one line per file instead of the diff. Lockfiles
and binary files are collapsed, very large diffs cut; each is marked.`,
  mr: `Usage: lvmh mr ID --title T [--description D] [--target B] [--draft] [--allow-secrets] [--json]
       lvmh mr ID [--json]
Pushes a spawned session's work (its commits, and its uncommitted changes committed with T as the message)
to its own branch lvmh/<8 hex> and opens a merge request into B (default: the branch it started from), as
a draft with --draft; called again, pushes new work and updates the title and description. Refused when an
added line looks like a secret (the answer names file:line; --allow-secrets needs an admin token). Without
--title, shows the session's merge request. Prints "!IID state: branch → target at SHA" and its URL.
  lvmh mr ID --comments [--json]       lists its review comments (people's notes and inline ones: #ID, author,
                                       path:line), oldest first
  lvmh mr ID --send ID,ID [--note N]   sends the picked comments to the agent as one follow-up (operator)`,
  search: `Usage: lvmh search QUERY [--session ID] [--type message|prompt|tool] [--limit N] [--json]
Finds what any session said or did: prompts, answers and thinking, tool calls and their results, session
names, cwd and repo. QUERY takes words (all must match), "a phrase", deploy* (a prefix) and -word (not
this). Prints the best hits first: session, event seq, kind, when, and the text with «matches» marked;
/sessions/ID?at=SEQ opens one in the browser. --json prints each hit as one JSON line.`,
  export: `Usage: lvmh export ID [--format md|jsonl|html] > FILE
Writes a session to stdout: Markdown (default; the conversation, tool calls as fenced blocks, who
prompted, tokens and cost per run), JSONL (the stored events, one per line, as the events API gives them)
or HTML (one self-contained file, no script).`,
  usage: `Usage: lvmh usage [--by day|session|repo|person|model] [--since 7d] [--json]
Runs, input and output tokens and cost of the last days (30 by default, UTC), grouped by day (default),
session, repository, person (the token that prompted; terminal for prompts typed into pi) or model; the most
expensive first. --json prints each row as one JSON line.`,
  budget: `Usage: lvmh budget ID [--cost D] [--tokens N] [--on ask|stop] [--clear] [--json]
Shows a session's budget (spent of the limits in force, what happens when reached) or sets it (operator):
--cost in dollars and/or --tokens (input+output), --on ask (a card asks to go on; approving raises it by
its size) or stop (prompts refused until raised). What is not given stays as in force. --clear removes it.`,
};
