/**
 * A real PostgreSQL server for tests and benchmarks: `initdb` in a fresh temp dir, `postgres` on a free loopback
 * port, run as the `postgres` OS user when we are root (both refuse to run as root), a password user and its
 * database created, everything stopped and removed by `close()`. Starting takes about a second, so a test file
 * starts one and hands each case a database of its own (`newDatabase()`).
 */
import postgres from "postgres";
import { freePort } from "./ports.ts";

/** A running throwaway server. */
export interface Postgres extends AsyncDisposable {
  /** `postgres://lvmh:…@127.0.0.1:PORT/lvmh`: a password (SCRAM) user owning its database. */
  url: string;
  /** The superuser's URL on the same server (for what a test does behind the store's back). */
  adminUrl: string;
  port: number;
  /** With `tls`: the PEM file of the throwaway CA that signed the server's certificate; otherwise null. */
  caFile: string | null;
  /** A fresh empty database owned by the same user, as a URL (isolates one test case from the others). */
  newDatabase(): Promise<string>;
  /**
   * Stop the server (its connections cut, as a crash or a failover does) and start it again on the same port
   * and files, after `downMs` (default 0) with it stopped.
   */
  restart(downMs?: number): Promise<void>;
  /** The server's main process (the postmaster), read from its pid file: what a bench counts the CPU of. */
  serverPid(): number;
  /** Stop the server and remove its files. */
  close(): Promise<void>;
  /**
   * The same, done before it returns: for an `unload` handler, which cannot wait. The watchdog alone could
   * not be trusted there: a test file run with `--parallel` ends in a worker whose end killed the watchdog
   * before it stopped the server (one server left after the PostgreSQL pass of the suite).
   */
  closeSync(): void;
}

export interface PostgresOptions {
  /**
   * Keep PostgreSQL's durability settings (fsync, synchronous commit): benchmarks want what production pays.
   * Tests default to false, which only changes what a power cut would lose.
   */
  durable?: boolean;
  /**
   * Serve TLS too (`ssl=on`) with a certificate for 127.0.0.1 and localhost signed by a throwaway CA made with
   * `openssl` (see `caFile`); clients still choose whether to use it.
   */
  tls?: boolean;
}

const PASSWORD_BYTES = 18;
const START_TRIES = 3;

/** The directory holding `initdb`, `pg_ctl` and `postgres`, or null when PostgreSQL is not installed. */
export async function postgresBinDir(): Promise<string | null> {
  // Debian keeps each major version apart; the newest one wins.
  try {
    const versions: number[] = [];
    for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
      if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
    }
    for (const v of versions.sort((a, b) => b - a)) {
      const dir = `/usr/lib/postgresql/${v}/bin`;
      if (await isFile(`${dir}/initdb`) && await isFile(`${dir}/pg_ctl`)) return dir;
    }
  } catch {
    // No Debian layout: look on PATH.
  }
  for (const dir of (Deno.env.get("PATH") ?? "").split(":").filter(Boolean)) {
    if (await isFile(`${dir}/initdb`)) {
      // pg_ctl finds `postgres` beside its own real path, not beside a symlink to it.
      const real = await Deno.realPath(`${dir}/initdb`);
      return real.slice(0, real.lastIndexOf("/"));
    }
  }
  return null;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

/** Run a PostgreSQL program, as the `postgres` user when we are root. */
async function run(bin: string, args: string[], asPostgres: boolean): Promise<void> {
  const command = asPostgres ? "runuser" : bin;
  const argv = asPostgres ? ["-u", "postgres", "--", bin, ...args] : args;
  const out = await new Deno.Command(command, { args: argv, stdout: "piped", stderr: "piped", stdin: "null" })
    .output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${bin.split("/").pop()} failed (exit ${out.code}): ${text.trim().slice(-2000)}`);
  }
}

async function userIds(name: string): Promise<{ uid: number; gid: number }> {
  for (const line of (await Deno.readTextFile("/etc/passwd")).split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new Error(`There is no "${name}" OS user: install Debian's postgresql package`);
}

function secret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(PASSWORD_BYTES));
  return btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, "x");
}

/**
 * Start a throwaway server.
 * @throws {Error} when PostgreSQL is not installed (see `postgresBinDir`) or does not start.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<Postgres> {
  const bin = await postgresBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (no initdb): run scripts/setup.sh --test");
  const asPostgres = Deno.uid() === 0;
  const dir = await Deno.makeTempDir({ prefix: "lvmh-pg-" });
  try {
    if (asPostgres) {
      const { uid, gid } = await userIds("postgres");
      await Deno.chown(dir, uid, gid);
    }
    const data = `${dir}/data`;
    const superPassword = secret();
    const pwfile = `${dir}/pw`;
    await Deno.writeTextFile(pwfile, superPassword + "\n", { mode: 0o600 });
    if (asPostgres) {
      const { uid, gid } = await userIds("postgres");
      await Deno.chown(pwfile, uid, gid);
    }
    await run(`${bin}/initdb`, [
      "-D",
      data,
      "-U",
      "postgres",
      `--pwfile=${pwfile}`,
      "-A",
      "scram-sha-256",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
    ], asPostgres);
    await Deno.remove(pwfile);
    const settings = ["-c listen_addresses=127.0.0.1", `-k ${dir}`, "-c max_connections=200"];
    const caFile = options.tls ? await makeCertificates(dir, asPostgres) : null;
    if (caFile) {
      settings.push("-c ssl=on", `-c ssl_cert_file=${dir}/server.crt`, `-c ssl_key_file=${dir}/server.key`);
    }
    if (!options.durable) {
      settings.push("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off");
    }
    const serve = (port: number) =>
      run(`${bin}/pg_ctl`, [
        "-D",
        data,
        "-w",
        "-t",
        "60",
        "-l",
        `${dir}/log`,
        "-o",
        [`-p ${port}`, ...settings].join(" "),
        "start",
      ], asPostgres);
    let port = 0;
    for (let attempt = 1;; attempt++) {
      port = freePort();
      try {
        await serve(port);
        break;
      } catch (error) {
        // Another process may have taken the port between freePort() and the bind.
        if (attempt >= START_TRIES) throw error;
      }
    }
    const adminUrl = `postgres://postgres:${superPassword}@127.0.0.1:${port}/postgres`;
    const password = secret();
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    let databases = 0;
    const newDatabase = async () => {
      const name = `lvmh${databases++ ? databases : ""}`;
      await admin.unsafe(`CREATE DATABASE ${name} OWNER lvmh`);
      return `postgres://lvmh:${password}@127.0.0.1:${port}/${name}`;
    };
    let url: string;
    try {
      await admin.unsafe(`CREATE ROLE lvmh LOGIN PASSWORD '${password}'`);
      url = await newDatabase();
    } catch (error) {
      await admin.end();
      throw error;
    }
    const watchdog = startWatchdog(bin, data, dir, asPostgres);
    let closed: Promise<void> | undefined;
    const close = () =>
      closed ??= (async () => {
        await admin.end({ timeout: 1 });
        // The watchdog stops the server and removes its files as soon as its input ends.
        watchdog.ref();
        await watchdog.stdin.close();
        await watchdog.status;
      })();
    // The admin client reconnects by itself on its next query.
    const restart = async (downMs = 0) => {
      await run(`${bin}/pg_ctl`, ["-D", data, "-m", "immediate", "-w", "stop"], asPostgres);
      if (downMs) await new Promise((resolve) => setTimeout(resolve, downMs));
      await serve(port);
    };
    const serverPid = () => Number(Deno.readTextFileSync(`${data}/postmaster.pid`).split("\n")[0]);
    const closeSync = () => {
      const stop = [`${bin}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"];
      new Deno.Command(asPostgres ? "runuser" : stop[0], {
        args: asPostgres ? ["-u", "postgres", "--", ...stop] : stop.slice(1),
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).outputSync();
      Deno.removeSync(dir, { recursive: true });
    };
    return {
      url,
      adminUrl,
      port,
      caFile,
      newDatabase,
      restart,
      serverPid,
      close,
      closeSync,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await run(`${bin}/pg_ctl`, ["-D", `${dir}/data`, "-m", "immediate", "-w", "stop"], asPostgres).catch(
      () => {},
    );
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

/**
 * A throwaway CA and a server certificate it signs for 127.0.0.1 and localhost, in `dir`; the key readable by
 * the server alone (it refuses a key others can read). Returns the CA's PEM file.
 */
async function makeCertificates(dir: string, asPostgres: boolean): Promise<string> {
  const openssl = async (...args: string[]) => {
    const out = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped", stdin: "null" })
      .output();
    if (!out.success) {
      throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    `${dir}/ca.key`,
    "-out",
    `${dir}/ca.crt`,
    "-days",
    "2",
    "-subj",
    "/CN=lvmh test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  await openssl(
    "req",
    ...ec,
    "-keyout",
    `${dir}/server.key`,
    "-out",
    `${dir}/server.csr`,
    "-subj",
    "/CN=localhost",
  );
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n" +
      "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  await openssl(
    "x509",
    "-req",
    "-in",
    `${dir}/server.csr`,
    "-CA",
    `${dir}/ca.crt`,
    "-CAkey",
    `${dir}/ca.key`,
    "-CAcreateserial",
    "-out",
    `${dir}/server.crt`,
    "-days",
    "2",
    "-extfile",
    `${dir}/server.ext`,
  );
  await Deno.chmod(`${dir}/server.key`, 0o600);
  if (asPostgres) {
    const { uid, gid } = await userIds("postgres");
    for (const file of ["server.key", "server.crt"]) await Deno.chown(`${dir}/${file}`, uid, gid);
  }
  return `${dir}/ca.crt`;
}

/**
 * A shell that waits for its input to end, then stops the server and removes its files. Only this process holds
 * the other end, so it ends when `close()` closes it and also when this process dies without closing anything
 * (a test killed by a timeout): no server outlives its test. Arguments are passed as `$1…`, never pasted in.
 */
function startWatchdog(bin: string, data: string, dir: string, asPostgres: boolean): Deno.ChildProcess {
  const script = [
    "cat >/dev/null",
    'if [ -n "$4" ]; then runuser -u postgres -- "$1/pg_ctl" -D "$2" -m immediate -w stop; ' +
    'else "$1/pg_ctl" -D "$2" -m immediate -w stop; fi >/dev/null 2>&1',
    'rm -rf "$3"',
  ].join("\n");
  const child = new Deno.Command("sh", {
    args: ["-c", script, "sh", bin, data, dir, asPostgres ? "1" : ""],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  return child;
}
