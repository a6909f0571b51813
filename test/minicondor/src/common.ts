// Shared plumbing: MINICONDOR_HOME, config, sqlite state, faults, output helpers.
import type { Security } from "./security.ts";
import { Database } from "bun:sqlite";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Ad } from "./classad.ts";

/**
 * True in the compiled tools (test/minicondor/compile.ts), whose main module is in Bun's embedded file
 * system: the emulator's folder is then found from the program, `<root>/.build/minicondor`.
 */
const COMPILED = Bun.main.startsWith("/$bunfs/");
export const SRC_DIR = COMPILED ? path.resolve(path.dirname(process.execPath), "..", "src") : import.meta.dir;
export const ROOT_DIR = path.resolve(SRC_DIR, "..");
export const BIN_DIR = path.join(ROOT_DIR, "bin");
export const LIBEXEC_DIR = path.join(ROOT_DIR, "libexec");
export const MAIN_TS = path.join(SRC_DIR, "main.ts");

export const VERSION = "$CondorVersion: 25.14.0 2026-11-22 PRE-RELEASE-UWCS $";
export const PLATFORM = "$CondorPlatform: X86_64-Debian_12 $";

export function homeDir(): string {
  const h = process.env.MINICONDOR_HOME;
  if (h) return path.resolve(h);
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  return path.join(process.env.TMPDIR || "/tmp", `minicondor-${uid}`);
}

/** One line of $MINICONDOR_HOME/calls.log: every tool call, as the tests and the benchmark count them. */
export function logCall(home: string, tool: string, argv: string[], ms: number, code: number): void {
  try {
    fs.mkdirSync(home, { recursive: true });
    fs.appendFileSync(path.join(home, "calls.log"), `${new Date().toISOString()} ${tool} ${JSON.stringify(argv)} ${Math.round(ms)} ${code}\n`);
  } catch { /* ignore */ }
}

export function bunPath(): string {
  return process.env.MINICONDOR_BUN || process.execPath;
}

/** The command line that runs `tool` of this emulator: the compiled tools when this is them, else Bun on main.ts. */
export function toolArgv(tool: string, ...args: string[]): string[] {
  return COMPILED ? [process.execPath, tool, ...args] : [bunPath(), MAIN_TS, tool, ...args];
}

/** The programs the emulator's own processes run (resolved): Bun, and the compiled tools. */
export function emulatorPrograms(): string[] {
  const candidates = [process.execPath, bunPath(), path.join(ROOT_DIR, "..", "..", "node_modules", ".bin", "bun"), path.join(ROOT_DIR, ".build", "minicondor")];
  return [
    ...new Set(candidates.flatMap((p) => {
      try {
        return [fs.realpathSync(p)];
      } catch {
        return [];
      }
    })),
  ];
}

// ---------------------------------------------------------------- output
function writeAll(fd: number, s: string): void {
  if (!s) return;
  let buf = Buffer.from(s);
  while (buf.length) {
    try {
      const n = fs.writeSync(fd, buf);
      buf = buf.subarray(n);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EAGAIN") {
        Bun.sleepSync(1);
        continue;
      }
      if (code === "EPIPE") return;
      throw e;
    }
  }
}
/** Where out() and err() write: the process's stdout and stderr, or a call the schedd serves (service.ts). */
export type Output = { out(s: string): void; err(s: string): void };
let sink: Output | null = null;
export const out = (s: string) => (sink ? sink.out(s) : writeAll(1, s));
export const err = (s: string) => (sink ? sink.err(s) : writeAll(2, s));
/** Runs `fn` with out() and err() going to `to`. */
export function capturing<T>(to: Output, fn: () => T): T {
  const prev = sink;
  sink = to;
  try {
    return fn();
  } finally {
    sink = prev;
  }
}

// ---------------------------------------------------------------- identity
let ownerCache: string | null = null;
export function ownerName(): string {
  if (process.env.MINICONDOR_OWNER) return process.env.MINICONDOR_OWNER;
  if (ownerCache) return ownerCache;
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  try {
    for (const line of fs.readFileSync("/etc/passwd", "utf8").split("\n")) {
      const f = line.split(":");
      if (f.length > 2 && Number(f[2]) === uid && f[0]) return (ownerCache = f[0]);
    }
  } catch { /* ignore */ }
  let n = "";
  try {
    n = os.userInfo().username;
  } catch { /* ignore */ }
  ownerCache = n && n !== "unknown" ? n : process.env.USER || process.env.LOGNAME || `uid${uid}`;
  return ownerCache;
}
export function userHome(): string {
  try {
    return os.userInfo().homedir;
  } catch {
    return process.env.HOME || "/";
  }
}
export function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}

// ---------------------------------------------------------------- config
export type Config = {
  /** The name of the schedd of this home: the host for the pool's first schedd, `<local>@<host>` for the others. */
  scheddName: string;
  /** The pool's other schedds (config.json `schedds`, local names): each has a home of its own, `schedds/<local>`. */
  schedds: string[];
  host: string;
  cpus: number;
  memory: number; // MiB
  gpus: number;
  disk: number; // KiB
  spoolReleaseMs: number;
  stageOutLingerMs: number;
  pollMs: number;
  periodicIntervalS: number;
  sharedFileSystem: boolean;
  /**
   * CGROUP_MEMORY_LIMIT_POLICY = hard on the execute point: a job whose memory (the resident set of
   * its processes) passes its RequestMemory is OOM killed and held with 34/102 (README: Memory).
   */
  enforceMemory: boolean;
  scheddIdleExitMs: number;
  apptainer: string;
  delayedUpdateMs: number;
  /**
   * How long after the shadow logs a run's end (004, 005) the schedd's reaper sets the new
   * JobStatus: HTCondor's shadow writes the event, then exits, and only then does the schedd
   * change the queue (baseshadow.cpp terminateJob/evictJob, then schedd.cpp's reaper).
   */
  reaperDelayMs: number;
  immutableJobAttrs: string[];
  protectedJobAttrs: string[];
  /** DEFAULT_USERLOG_FORMAT_OPTIONS: words such as "XML", "JSON", "UTC", "SUB_SECOND" (the job event log's format). */
  userlogFormatOptions: string;
  /** The authentication the schedd asks of every tool (security.ts); none when unset, as on a local pool by FS. */
  security?: Security;
};

function readJson(file: string): Record<string, unknown> {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export function loadConfig(home = homeDir()): Config {
  const e = process.env;
  // a second schedd of the pool shares its machine's configuration; its own config.json may add to it
  const pool = poolHomeOf(home);
  const f = { ...(pool === home ? {} : readJson(path.join(pool, "config.json"))), ...readJson(path.join(home, "config.json")) };
  const host: string = f.host !== undefined ? f.host as string : e.MINICONDOR_HOST || os.hostname().split(".")[0] || "localhost";
  const pick = <T>(k: string, envName: string | null, def: T): T => {
    if (f[k] !== undefined) return f[k] as T;
    if (envName === null) return def;
    const v = e[envName];
    if (v !== undefined && v !== "") {
      if (typeof def === "number") return Number(v) as T;
      if (typeof def === "boolean") return (v === "1" || v.toLowerCase() === "true") as T;
      return v as T;
    }
    return def;
  };
  return {
    host,
    scheddName: pool === home ? host : `${path.basename(home)}@${host}`,
    schedds: Array.isArray(f.schedds) ? (f.schedds as unknown[]).map(String) : [],
    cpus: pick("cpus", "MINICONDOR_CPUS", 64),
    memory: pick("memory", "MINICONDOR_MEMORY", 65536),
    gpus: pick("gpus", "MINICONDOR_GPUS", 0),
    disk: pick("disk", "MINICONDOR_DISK", 100 * 1024 * 1024),
    spoolReleaseMs: pick("spoolReleaseMs", "MINICONDOR_SPOOL_RELEASE_MS", 700),
    // test/minicondor/fixtures/spool.txt q-after-transfer: the fetched job is still in condor_q (status 4,
    // StageOutFinish set) until the schedd's next periodic pass, up to a minute on a real pool
    stageOutLingerMs: pick("stageOutLingerMs", "MINICONDOR_STAGEOUT_LINGER_MS", 5000),
    pollMs: pick("pollMs", "MINICONDOR_POLL_MS", 100),
    periodicIntervalS: pick("periodicIntervalS", "MINICONDOR_PERIODIC_INTERVAL", 60),
    // false: the execute side has its own FileSystemDomain, as on any pool whose EPs are other machines,
    // so the default should_transfer_files = IF_NEEDED transfers (docs/htcondor.md#submit-file-rules)
    sharedFileSystem: pick("sharedFileSystem", "MINICONDOR_SHARED_FS", false),
    enforceMemory: pick("enforceMemory", "MINICONDOR_ENFORCE_MEMORY", false),
    scheddIdleExitMs: pick("scheddIdleExitMs", "MINICONDOR_SCHEDD_IDLE_EXIT_MS", 3000),
    // config only: condor_chirp reads it inside the job, whose environment has no MINICONDOR_* variables
    delayedUpdateMs: pick("delayedUpdateMs", null, 5000),
    reaperDelayMs: pick("reaperDelayMs", "MINICONDOR_REAPER_DELAY_MS", 200),
    apptainer: pick("apptainer", "MINICONDOR_APPTAINER", path.join(ROOT_DIR, "shims", "apptainer")),
    // config only (the AP's IMMUTABLE_JOB_ATTRS / PROTECTED_JOB_ATTRS, read by condor_chirp inside the job)
    immutableJobAttrs: attrList(f.immutableJobAttrs),
    protectedJobAttrs: attrList(f.protectedJobAttrs),
    // config only: read by whoever writes an event (schedd, shadow, condor_chirp's attribute updates)
    userlogFormatOptions: pick("userlogFormatOptions", null, ""),
    // config only: what the emulated remote schedd asks of the tools
    security: f.security as Security | undefined,
  };
}

/** A knob's attribute list: "A, B C" as param_and_insert_attrs splits it, or a JSON array. */
function attrList(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String).filter(Boolean);
  if (typeof v === "string") return v.split(/[\s,]+/).filter(Boolean);
  return [];
}

/** Names under which this machine's schedd and collector are found (-name, -pool). */
function localNames(cfg: Config): string[] {
  return [cfg.host, "localhost", "127.0.0.1", ...(process.env.MINICONDOR_SCHEDD_NAMES ?? "").split(",")].map((x) => x.trim().toLowerCase()).filter(Boolean);
}

// ---------------------------------------------------------------- several schedds in one pool
/**
 * The pool's home for any schedd's home: a second schedd lives in `<pool home>/schedds/<local>`, as a
 * real second schedd has a SPOOL, a queue and a job id counter of its own under one master
 * (docs/htcondor.md#several-schedds-in-one-pool).
 */
export function poolHomeOf(home: string): string {
  const up = path.dirname(home);
  return path.basename(up) === "schedds" ? path.dirname(up) : home;
}

export function scheddHome(poolHome: string, local: string): string {
  return path.join(poolHome, "schedds", local);
}

/** The local name of one of the pool's other schedds that `-name` names (`second@<host>`), if any. */
export function otherScheddOf(name: string, cfg: Config): string | undefined {
  const n = name.toLowerCase();
  const at = n.indexOf("@");
  if (at <= 0) return undefined;
  const local = n.slice(0, at);
  const host = n.slice(at + 1);
  const ok = localNames(cfg);
  if (!ok.includes(host) && !ok.some((h) => host.startsWith(h + "."))) return undefined;
  return cfg.schedds.find((s) => s.toLowerCase() === local);
}

/**
 * Whether the schedd this call talks to is stopped (faults.json `stopped` in its home, written by
 * testkit's stopSchedd): its master took it off, so the collector has no ad for it and `-name` cannot
 * find it, while the collector and the other schedds answer.
 */
export const selection = { stopped: false };

/** -name: this machine's schedd (host, name@host, a sinful string or host:port); anything else is not in the pool. */
export function acceptableSchedd(name: string, cfg: Config): boolean {
  if (selection.stopped) return false;
  const n = name.toLowerCase();
  if (n.includes(":") || n.startsWith("<")) return true;
  const ok = localNames(cfg);
  return ok.includes(n) || ok.some((h) => n.startsWith(h + ".") || n.endsWith("@" + h));
}

/**
 * -name without '@' is a host name the real tools resolve before anything else (get_daemon_name;
 * docs/htcondor.md#a-schedd-name-without--is-a-host-name). minicondor has no DNS: the names under
 * `.invalid`, which never resolve (RFC 6761), are its names that do not resolve.
 */
export function unresolvableHost(name: string): boolean {
  return !name.includes("@") && /\.invalid\.?$/i.test(name);
}

/** HTCondor's print_wrapped_text: words joined by one space, a new line before a word that would reach column 78. */
export function wrappedText(text: string, perLine = 78): string {
  let out = "";
  let count = 0;
  for (const word of text.split(/[ \t]+/).filter(Boolean)) {
    if (word.length < perLine - count) count += word.length;
    else {
      out += "\n";
      count = word.length;
    }
    out += word;
    if (count < perLine) {
      out += " ";
      count++;
    } else {
      out += "\n";
      count = 0;
    }
  }
  return out + "\n";
}

/** -pool: the only collector is this machine's (host[:port]). */
export function acceptablePool(pool: string, cfg: Config): boolean {
  const h = pool.toLowerCase().replace(/:\d*$/, "");
  const ok = localNames(cfg);
  return ok.includes(h) || ok.some((x) => h.startsWith(x + "."));
}

export function scheddAddr(cfg: Config): string {
  const sock = cfg.scheddName === cfg.host ? "schedd_1_1" : `schedd_${cfg.scheddName.replace(/@.*/, "")}`;
  return `<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=${cfg.host}&noUDP&sock=${sock}>`;
}

// ---------------------------------------------------------------- faults
export type Faults = {
  scheddDown?: boolean;
  /** This home's schedd alone is off (the pool, its collector and its other schedds answer). */
  stopped?: boolean;
  tools?: Record<string, string>;
  holdOnStart?: { code: number; subCode?: number; reason?: string; constraint?: string };
};

/**
 * Faults of `home`. Tool calls also read MINICONDOR_* fault variables from their own environment; the
 * schedd does not (`fromEnv` false): it is shared by every later call, so a variable given to the call
 * that happened to start it must not leak into the jobs of other calls.
 */
export function loadFaults(home = homeDir(), fromEnv = true): Faults {
  const f = readJson(path.join(home, "faults.json")) as Faults;
  const res: Faults = { ...f, tools: { ...(f.tools ?? {}) } };
  if (!fromEnv) return res;
  const e = process.env;
  if (e.MINICONDOR_SCHEDD_DOWN && e.MINICONDOR_SCHEDD_DOWN !== "0") res.scheddDown = true;
  for (const [k, v] of Object.entries(e)) {
    if (k.startsWith("MINICONDOR_FAULT_") && v) res.tools![k.slice(17).toLowerCase()] = v;
  }
  const h = envHoldOnStart();
  if (h) res.holdOnStart = h;
  return res;
}

/** MINICONDOR_HOLD_ON_START=<code>[:<reason>] of this process. */
export function envHoldOnStart(): Faults["holdOnStart"] | undefined {
  const v = process.env.MINICONDOR_HOLD_ON_START;
  if (!v) return undefined;
  const [code, ...rest] = v.split(":");
  return { code: Number(code), reason: rest.join(":") || undefined };
}

/** Variables that inject faults into one tool call; the schedd must not inherit them. */
export function isFaultEnv(name: string): boolean {
  return name === "MINICONDOR_SCHEDD_DOWN" || name === "MINICONDOR_HOLD_ON_START" || name.startsWith("MINICONDOR_FAULT_");
}

// ---------------------------------------------------------------- state db
export type JobRow = { cluster: number; proc: number; status: number; owner: string; ad: string };
export type RunRow = {
  cluster: number;
  proc: number;
  pid: number;
  dir: string;
  scratch: string;
  cpus: number;
  memory: number;
  gpus: number;
  gpu_ids: string;
  slot: number;
  started: number;
};

let dbCache: Database | null = null;
export function openDb(home = homeDir()): Database {
  if (dbCache) return dbCache;
  fs.mkdirSync(home, { recursive: true });
  const db = new Database(path.join(home, "state.db"), { create: true });
  db.exec("PRAGMA busy_timeout = 10000");
  const ver = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (ver < 1) {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("BEGIN IMMEDIATE");
    try {
      const v2 = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
      if (v2 < 1) {
        db.exec(`
          CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v);
          CREATE TABLE IF NOT EXISTS jobs (cluster INTEGER, proc INTEGER, status INTEGER, owner TEXT, ad TEXT, PRIMARY KEY (cluster, proc));
          CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY AUTOINCREMENT, cluster INTEGER, proc INTEGER, owner TEXT, ad TEXT);
          CREATE TABLE IF NOT EXISTS running (cluster INTEGER, proc INTEGER, pid INTEGER, dir TEXT, scratch TEXT, cpus INTEGER, memory INTEGER, gpus INTEGER, gpu_ids TEXT, slot INTEGER, started INTEGER, PRIMARY KEY (cluster, proc));
          CREATE TABLE IF NOT EXISTS delayed (cluster INTEGER, proc INTEGER, name TEXT, text TEXT, due INTEGER);
          INSERT OR IGNORE INTO meta VALUES ('next_cluster', 1), ('next_dir', 1), ('gen', 0);
          PRAGMA user_version = 1;
        `);
      }
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
  }
  if ((db.query("PRAGMA user_version").get() as { user_version: number }).user_version < 2) {
    tx(db, () => {
      if ((db.query("PRAGMA user_version").get() as { user_version: number }).user_version >= 2) return;
      // faults captured by condor_submit for one job; kept out of the job ad, which a real schedd would not have
      db.exec(`CREATE TABLE IF NOT EXISTS job_faults (cluster INTEGER, proc INTEGER, hold TEXT, PRIMARY KEY (cluster, proc));
        PRAGMA user_version = 2;`);
    });
  }
  db.exec("PRAGMA synchronous = NORMAL");
  dbCache = db;
  return db;
}

export function tx<T>(db: Database, fn: () => T): T {
  return db.transaction(fn).immediate();
}

export function metaGet(db: Database, k: string): number {
  const r = db.query("SELECT v FROM meta WHERE k = ?").get(k) as { v: number } | null;
  return r ? Number(r.v) : 0;
}
export function metaSet(db: Database, k: string, v: number | string): void {
  db.query("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)").run(k, v);
}
export function bumpGen(db: Database): void {
  db.query("UPDATE meta SET v = v + 1 WHERE k = 'gen'").run();
}

export function rowAd(r: { ad: string }): Ad {
  return Ad.fromObject(JSON.parse(r.ad) as Record<string, string>);
}
export function getJob(db: Database, c: number, p: number): Ad | null {
  const r = db.query("SELECT ad FROM jobs WHERE cluster = ? AND proc = ?").get(c, p) as { ad: string } | null;
  return r ? rowAd(r) : null;
}
export function allJobs(db: Database): Ad[] {
  return (db.query("SELECT ad FROM jobs ORDER BY cluster, proc").all() as { ad: string }[]).map(rowAd);
}
/** The jobs of cluster `from` and later (condor_q's reading of a constraint's ClusterId bound). */
export function jobsFrom(db: Database, from: number): Ad[] {
  if (!Number.isFinite(from)) return [];
  return (db.query("SELECT ad FROM jobs WHERE cluster >= ? ORDER BY cluster, proc").all(from) as { ad: string }[]).map(rowAd);
}
/**
 * `status` is the schedd's own view of the job (the `status` column), which is the ad's JobStatus except
 * when a job chirped another JobStatus into its ad: the real schedd accepts that (qmgmt.cpp SetAttribute
 * has no check for it; only condor_qedit refuses it) while the shadow keeps running the job.
 */
export function putJob(db: Database, ad: Ad, status?: number): void {
  const c = ad.num("ClusterId")!, p = ad.num("ProcId")!;
  db.query("INSERT OR REPLACE INTO jobs (cluster, proc, status, owner, ad) VALUES (?, ?, ?, ?, ?)").run(
    c,
    p,
    status ?? ad.num("JobStatus") ?? 1,
    ad.str("Owner") ?? "",
    JSON.stringify(ad.toObject()),
  );
}

/** The schedd's own status of a job (see putJob), null when it is not in the queue. */
export function jobStatus(db: Database, c: number, p: number): number | null {
  const r = db.query("SELECT status FROM jobs WHERE cluster = ? AND proc = ?").get(c, p) as { status: number } | null;
  return r ? r.status : null;
}
export function deleteJob(db: Database, c: number, p: number): void {
  db.query("DELETE FROM jobs WHERE cluster = ? AND proc = ?").run(c, p);
}
export function toHistory(db: Database, ad: Ad): void {
  const c = ad.num("ClusterId")!, p = ad.num("ProcId")!;
  deleteJob(db, c, p);
  db.query("DELETE FROM job_faults WHERE cluster = ? AND proc = ?").run(c, p);
  db.query("INSERT INTO history (cluster, proc, owner, ad) VALUES (?, ?, ?, ?)").run(c, p, ad.str("Owner") ?? "", JSON.stringify(ad.toObject()));
}
export function getRun(db: Database, c: number, p: number): RunRow | null {
  return db.query("SELECT * FROM running WHERE cluster = ? AND proc = ?").get(c, p) as RunRow | null;
}
export function allRuns(db: Database): RunRow[] {
  return db.query("SELECT * FROM running ORDER BY cluster, proc").all() as RunRow[];
}

/** Set JobStatus with the usual bookkeeping. */
export function setStatus(ad: Ad, status: number, now = nowSec()): void {
  const old = ad.num("JobStatus");
  if (old !== undefined && old !== status) ad.set("LastJobStatus", old);
  ad.set("JobStatus", status);
  ad.set("EnteredCurrentStatus", now);
}

// ---------------------------------------------------------------- processes
export function pidAlive(pid: number): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = st.slice(st.lastIndexOf(")") + 2, st.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

export function killGroup(pid: number, sig: NodeJS.Signals): void {
  if (!pid || pid <= 1) return;
  try {
    process.kill(-pid, sig);
  } catch { /* gone */ }
  try {
    process.kill(pid, sig);
  } catch { /* gone */ }
}

/** Every pid whose environment contains `marker` (e.g. "_CONDOR_SCRATCH_DIR=<dir>"). */
export function pidsWithEnv(marker: string): number[] {
  const res: number[] = [];
  let ents: string[];
  try {
    ents = fs.readdirSync("/proc");
  } catch {
    return res;
  }
  const self = process.pid;
  for (const e of ents) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (pid === self) continue;
    try {
      const env = fs.readFileSync(`/proc/${e}/environ`, "latin1");
      if (env.includes(marker)) res.push(pid);
    } catch { /* gone or no permission */ }
  }
  return res;
}

/** Every pid (but this process and its ancestors) whose environment has exactly the entry `NAME=value`. */
export function pidsWithEnvEntry(entry: string): number[] {
  const res: number[] = [];
  let ents: string[];
  try {
    ents = fs.readdirSync("/proc");
  } catch {
    return res;
  }
  const spare = new Set(ancestors(process.pid));
  for (const e of ents) {
    if (!/^\d+$/.test(e) || spare.has(Number(e))) continue;
    try {
      if (fs.readFileSync(`/proc/${e}/environ`, "latin1").split("\0").includes(entry)) res.push(Number(e));
    } catch { /* gone or no permission */ }
  }
  return res;
}

/** `pid` and its ancestors up to init. */
export function ancestors(pid: number): number[] {
  const res: number[] = [];
  for (let p = pid, i = 0; p > 1 && i < 64; i++) {
    res.push(p);
    const pp = parentPid(p);
    if (pp === null) break;
    p = pp;
  }
  return res;
}

/** The parent of `pid` as the kernel sees it now (null when `pid` is gone). */
export function parentPid(pid: number): number | null {
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/** Every process now: its parent and its resident set, KiB (from /proc/<pid>/stat and statm). */
export function processTable(): Map<number, { ppid: number; rssKiB: number }> {
  const out = new Map<number, { ppid: number; rssKiB: number }>();
  let ents: string[];
  try {
    ents = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of ents) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
      const pages = Number(fs.readFileSync(`/proc/${e}/statm`, "utf8").split(" ")[1]);
      out.set(Number(e), { ppid, rssKiB: (pages * PAGE_SIZE) / 1024 });
    } catch { /* gone */ }
  }
  return out;
}
const PAGE_SIZE = 4096;

/** Kill every process whose environment carries the marker; SIGKILL, repeated until none is left. */
export function killByEnv(marker: string): number {
  let total = 0;
  for (let i = 0; i < 20; i++) {
    const pids = pidsWithEnv(marker).filter(pidAlive);
    if (!pids.length) break;
    total += pids.length;
    for (const p of pids) {
      try {
        process.kill(p, "SIGKILL");
      } catch { /* ignore */ }
    }
    Bun.sleepSync(20);
  }
  return total;
}

// ---------------------------------------------------------------- options
/** HTCondor-style option matching (docs/htcondor.md#conventions-of-every-tool): unique prefix after one dash, full name after two. */
export function isOpt(arg: string, name: string, minLen = 1): boolean {
  if (!arg.startsWith("-")) return false;
  if (arg.startsWith("--")) return arg.slice(2) === name;
  const a = arg.slice(1);
  if (!a.length) return false;
  return a.length >= Math.min(minLen, name.length) && name.startsWith(a);
}

export function fmtDateLog(t: number): string {
  const d = new Date(t * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function jobIdStr(c: number, p: number): string {
  return `${c}.${p}`;
}
