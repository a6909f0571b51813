// The schedd's service on 127.0.0.1: the calls HTCondor's tools make to a running daemon (a job's
// condor_chirp to its starter; condor_q and condor_history to the schedd), answered by the schedd
// process, so that a call costs the caller a bash script (bin/, libexec/, service-client.bash) and no
// Bun start, as HTCondor's tools are small programs talking to a daemon. The answer is the tool's own,
// byte for byte: the same code runs, with the caller's environment, its stdout and stderr captured.
//
// What the service does not serve, the tool answers as it does without a service (the reply
// "fallback"): a fault (faults.json, or MINICONDOR_FAULT_* in the caller's environment), a schedd
// with security configured, `-name` (another schedd of the pool), `condor_chirp put` (its local file is
// the caller's), a job not connected, a cookie this schedd did not hand out, a caller of another user.
//
// Request: cookie, tool, caller's pid, argc, then each argument, every field ended by NUL. The cookie
// of a chirp call is the job's (its .chirp.config), never the job ids that job-writable file also
// holds; a query's is the schedd's, in <home>/service with the port. Reply: "minicondor", exit code,
// stderr (each ended by NUL), then stdout to the end of the stream; or "minicondor-fallback" NUL.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { type ChirpCfg, servedChirp } from "./chirp.ts";
import { capturing, homeDir, loadConfig, loadFaults, logCall } from "./common.ts";

const FALLBACK: Uint8Array = new TextEncoder().encode("minicondor-fallback\0");
const jobsByCookie = new Map<string, ChirpCfg>();
let port = 0;
let queries = new Map<string, (argv: string[]) => number>();

/** Starts the service of the schedd of `home` (once per schedd process) and names it in <home>/service. */
export async function serveCalls(home: string, log: (s: string) => void): Promise<void> {
  // the tools' code (query.ts starts a schedd, so schedd.ts, which starts this, cannot import it)
  const { condorHistory, condorQ } = await import("./query.ts");
  queries = new Map([["condor_q", condorQ], ["condor_history", condorHistory]]);
  type Conn = { chunks: Uint8Array[]; pending: Uint8Array | null; done: boolean };
  const send = (sock: Bun.Socket<Conn>) => {
    const p = sock.data.pending;
    if (!p) return;
    const n = sock.write(p);
    sock.data.pending = n < p.byteLength ? p.subarray(Math.max(n, 0)) : null;
    if (!sock.data.pending) sock.end();
  };
  const schedd = randomBytes(16).toString("hex");
  const server = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(sock) {
        sock.data = { chunks: [], pending: null, done: false };
      },
      data(sock, chunk) {
        if (sock.data.done) return;
        sock.data.chunks.push(new Uint8Array(chunk));
        const fields = nulFields(Buffer.concat(sock.data.chunks));
        if (fields.length < 4) return;
        const argc = Number(fields[3]);
        if (!Number.isInteger(argc) || argc < 0) return void sock.end();
        if (fields.length < 4 + argc) return;
        sock.data.done = true;
        const [cookie, tool, pid] = fields as [string, string, string];
        const argv = fields.slice(4, 4 + argc);
        let reply: Uint8Array = FALLBACK;
        try {
          reply = answer(home, cookie === schedd, cookie, tool, Number(pid), argv) ?? FALLBACK;
        } catch (e) {
          log(`service: ${tool} failed: ${(e as Error).stack ?? e}`);
        }
        sock.data.pending = reply;
        send(sock);
      },
      drain: send,
      error(_sock, e) {
        log("service: connection error: " + e);
      },
    },
  });
  port = server.port;
  const file = path.join(home, "service");
  fs.writeFileSync(`${file}.${process.pid}`, `${port} ${schedd}\n`);
  fs.renameSync(`${file}.${process.pid}`, file);
}

/** What a job's .chirp.config holds for the service: its port and the job's cookie (none without a service). */
export function chirpEndpoint(cfg: ChirpCfg): { chirpPort?: number; chirpCookie?: string } {
  if (!port) return {};
  const cookie = randomBytes(16).toString("hex");
  jobsByCookie.set(cookie, cfg);
  return { chirpPort: port, chirpCookie: cookie };
}

/** The complete NUL-ended fields of `buf` (a last field not yet ended is left out). */
function nulFields(buf: Buffer): string[] {
  const fields: string[] = [];
  let at = 0;
  for (let i = buf.indexOf(0); i >= 0; i = buf.indexOf(0, at)) {
    fields.push(buf.toString("utf8", at, i));
    at = i + 1;
  }
  return fields;
}

/** The reply to one call, or undefined when the tool must answer it (see above). */
function answer(home: string, ours: boolean, cookie: string, tool: string, pid: number, argv: string[]): Uint8Array | undefined {
  const t0 = performance.now();
  let stdout = "", stderr = "";
  const to = { out: (s: string) => void (stdout += s), err: (s: string) => void (stderr += s) };
  const code = asCaller(pid, () => {
    const faults = loadFaults(home);
    if (faults.tools?.[tool] || faults.tools?.["all"]) return undefined;
    if (tool === "condor_chirp") {
      const cfg = jobsByCookie.get(cookie);
      if (!cfg) return undefined;
      // as the tool: a job's environment has no MINICONDOR_HOME, its chirp config names the home
      process.env.MINICONDOR_HOME = cfg.home;
      return capturing(to, () => servedChirp(cfg, argv));
    }
    const query = queries.get(tool);
    if (!ours || !query || argv.includes("-name")) return undefined;
    if (homeDir() !== home || faults.scheddDown || faults.stopped || loadConfig(home).security) return undefined;
    return capturing(to, () => query(argv));
  });
  if (code === undefined) return undefined;
  logCall(home, tool, argv, performance.now() - t0, code);
  return Buffer.concat([Buffer.from(`minicondor\0${code}\0${stderr}\0`), Buffer.from(stdout)]);
}

/**
 * Runs `fn` with the environment of the caller `pid` (its bin script, whose environment the tool
 * would have had); undefined for a caller that is gone or another user's.
 */
function asCaller(pid: number, fn: () => number | undefined): number | undefined {
  const env: Record<string, string> = {};
  try {
    if (!Number.isInteger(pid) || fs.statSync(`/proc/${pid}`).uid !== process.getuid!()) return undefined;
    for (const kv of fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      const i = kv.indexOf("=");
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
  } catch {
    return undefined;
  }
  const saved = process.env;
  process.env = env;
  try {
    return fn();
  } finally {
    process.env = saved;
  }
}
