/**
 * A minimal tar writer (POSIX ustar + pax extended headers for long paths), enough for build contexts and
 * for copying small files into containers through `PUT /containers/{id}/archive`.
 */

/** One tar member. `data` is required for files; `linkname` for symlinks. */
export interface TarEntry {
  path: string;
  type: "file" | "dir" | "symlink";
  data?: Uint8Array;
  /** Defaults: 0o644 for files, 0o755 for directories, 0o777 for symlinks. */
  mode?: number;
  uid?: number;
  gid?: number;
  linkname?: string;
  /** Seconds since the epoch; 0 keeps build-cache keys stable. */
  mtime?: number;
}

const BLOCK = 512;
const encoder = new TextEncoder();

/** The tar end marker: two zero blocks. */
export const TAR_END = new Uint8Array(BLOCK * 2);

/**
 * Encode one member: its header block(s) followed by its data, padded to 512 bytes.
 * @throws {TypeError} on an absolute path, a `..` segment, or a missing linkname.
 */
export function tarEntry(entry: TarEntry): Uint8Array {
  const path = entry.type === "dir" && !entry.path.endsWith("/") ? entry.path + "/" : entry.path;
  if (path.startsWith("/") || path.split("/").includes("..")) {
    throw new TypeError(`tar path must be relative without "..": ${JSON.stringify(entry.path)}`);
  }
  if (entry.type === "symlink" && !entry.linkname) throw new TypeError(`symlink ${path} has no target`);
  const data = entry.type === "file" ? entry.data ?? new Uint8Array(0) : new Uint8Array(0);
  const parts: Uint8Array[] = [];
  const pax: Record<string, string> = {};
  const pathBytes = encoder.encode(path);
  if (pathBytes.length > 100) pax.path = path;
  if (entry.linkname && encoder.encode(entry.linkname).length > 100) pax.linkpath = entry.linkname;
  if (Object.keys(pax).length > 0) {
    const body = encoder.encode(Object.entries(pax).map(([k, v]) => paxRecord(k, v)).join(""));
    parts.push(header({ name: "PaxHeader", type: "x", size: body.length, mode: 0o644 }), pad(body));
  }
  const mode = entry.mode ?? (entry.type === "dir" ? 0o755 : entry.type === "symlink" ? 0o777 : 0o644);
  parts.push(header({
    name: truncateUtf8(path, 100),
    type: entry.type === "file" ? "0" : entry.type === "dir" ? "5" : "2",
    size: data.length,
    mode,
    uid: entry.uid,
    gid: entry.gid,
    linkname: entry.linkname ? truncateUtf8(entry.linkname, 100) : "",
    mtime: entry.mtime,
  }));
  if (data.length) parts.push(pad(data));
  return concatAll(parts);
}

/** A whole archive in memory: the members followed by the end marker. Throws as `tarEntry` does. */
export function createTar(entries: TarEntry[]): Uint8Array {
  return concatAll([...entries.map(tarEntry), TAR_END]);
}

function paxRecord(key: string, value: string): string {
  // The length prefix counts itself, so grow it until it is consistent.
  const rest = ` ${key}=${value}\n`;
  let len = encoder.encode(rest).length;
  while (String(len).length + encoder.encode(rest).length !== len) {
    len = String(len).length + encoder.encode(rest).length;
  }
  return `${len}${rest}`;
}

function header(h: {
  name: string;
  type: string;
  size: number;
  mode: number;
  uid?: number;
  gid?: number;
  linkname?: string;
  mtime?: number;
}): Uint8Array {
  const b = new Uint8Array(BLOCK);
  const put = (offset: number, len: number, text: string) =>
    b.set(encoder.encode(text).subarray(0, len), offset);
  const octal = (offset: number, len: number, n: number) =>
    put(offset, len, n.toString(8).padStart(len - 1, "0") + "\0");
  put(0, 100, h.name);
  octal(100, 8, h.mode & 0o7777);
  octal(108, 8, h.uid ?? 0);
  octal(116, 8, h.gid ?? 0);
  octal(124, 12, h.size);
  octal(136, 12, h.mtime ?? 0);
  put(148, 8, "        "); // checksum is computed with this field as spaces
  put(156, 1, h.type);
  put(157, 100, h.linkname ?? "");
  put(257, 6, "ustar\0");
  put(263, 2, "00");
  let sum = 0;
  for (const byte of b) sum += byte;
  put(148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  return b;
}

function pad(data: Uint8Array): Uint8Array {
  const rem = data.length % BLOCK;
  if (rem === 0) return data;
  const out = new Uint8Array(data.length + BLOCK - rem);
  out.set(data);
  return out;
}

function truncateUtf8(text: string, max: number): string {
  let out = text;
  while (encoder.encode(out).length > max) out = out.slice(0, -1);
  return out;
}

function concatAll(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
