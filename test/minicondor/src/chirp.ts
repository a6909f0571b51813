// condor_chirp (libexec), run by a job. docs/htcondor.md#condor_chirp; docs/htcondor.md#key-observations and
// docs/htcondor.md#what-condor_chirp-does-to-strings
import type { Database } from "bun:sqlite";
import * as fs from "node:fs";
import { Ad, tryParse, unparse } from "./classad.ts";
import { bumpGen, type Config, err, getJob, getRun, jobStatus, loadConfig, openDb, out, putJob, tx } from "./common.ts";
import { ulog } from "./userlog.ts";

export type ChirpCfg = { home: string; cluster: number; proc: number; scratch: string };

export function chirpConfigPath(): string {
  if (process.env._CONDOR_CHIRP_CONFIG) return process.env._CONDOR_CHIRP_CONFIG;
  if (process.env._CONDOR_SCRATCH_DIR) return `${process.env._CONDOR_SCRATCH_DIR}/.chirp.config`;
  return "./.chirp.config";
}

export function readChirpConfig(): ChirpCfg | null {
  try {
    return JSON.parse(fs.readFileSync(chirpConfigPath(), "utf8")) as ChirpCfg;
  } catch {
    return null;
  }
}

const EINVAL = "\tError: 22 (Invalid argument)\n";
const EACCES = "\tError: 13 (Permission denied)\n";

// param_info.in SYSTEM_IMMUTABLE_JOB_ATTRS and SYSTEM_SECURE_JOB_ATTRS (SYSTEM_PROTECTED_JOB_ATTRS is empty)
const SYSTEM_IMMUTABLE = ["Owner", "ClusterId", "JobUniverse", "ProcId", "MyType", "TargetType", "User", "OsUser"];
const SYSTEM_SECURE = [
  "x509userProxySubject",
  "x509UserProxyEmail",
  "x509UserProxyVOName",
  "x509UserProxyFirstFQAN",
  "x509UserProxyFQAN",
  "TotalSubmitProcs",
  "AuthTokenSubject",
  "AuthTokenIssuer",
  "AuthTokenGroups",
  "AuthTokenId",
  "AuthTokenScopes",
  "AuthTokenProject",
  "OsUser",
];

/**
 * What the shadow refuses to forward for a job (remoteresource.cpp allowRemoteWriteAttributeAccess,
 * m_unsettable_attrs): PROTECTED_JOB_ATTRS, SYSTEM_PROTECTED_JOB_ATTRS, IMMUTABLE_JOB_ATTRS and
 * SYSTEM_IMMUTABLE_JOB_ATTRS of the access point, compared without case (classad::References).
 */
export function unsettable(cfg: Config, name: string): boolean {
  const n = name.toLowerCase();
  return [...SYSTEM_IMMUTABLE, ...cfg.immutableJobAttrs, ...cfg.protectedJobAttrs].some((a) => a.toLowerCase() === n);
}
/** The schedd ignores, and reports success for, a job's attempt to set these (IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS). */
function secure(name: string): boolean {
  const n = name.toLowerCase();
  return SYSTEM_SECURE.some((a) => a.toLowerCase() === n);
}

function noConnect(): number {
  out("\tError: 2 (No such file or directory)\n");
  err(`Can't open ${chirpConfigPath()} file\ncannot chirp_connect to condor_starter\n`);
  return 255;
}

/** the shadow's view of a chirped value (docs/htcondor.md#what-condor_chirp-does-to-strings): \" → ", \\ kept, newline or non-expression → undefined */
export function chirpValueText(v: string): string {
  if (v.includes("\n")) return "undefined";
  const n = tryParse(v, true);
  if (!n) return "undefined";
  return unparse(n);
}

export function condorChirp(argv: string[]): number {
  const cfg = readChirpConfig();
  if (!cfg) return noConnect();
  process.env.MINICONDOR_HOME = cfg.home;
  return chirp(cfg, argv) ?? noConnect();
}

/**
 * The starter and the shadow serve chirp while the job runs, and while a held or removed job is
 * being stopped (its run is not over until its processes are gone: README, Memory).
 */
function served(db: Database, cfg: ChirpCfg): boolean {
  return jobStatus(db, cfg.cluster, cfg.proc) === 2 || getRun(db, cfg.cluster, cfg.proc) !== null;
}

/** One chirp call of the job `cfg` names; its exit code, or undefined when the job is not connected. */
function chirp(cfg: ChirpCfg, argv: string[]): number | undefined {
  const db = openDb(cfg.home);
  const job = getJob(db, cfg.cluster, cfg.proc);
  if (!job || !served(db, cfg)) return undefined;
  const io = job.bool("WantIOProxy") === true;
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "set_job_attr": {
      if (rest.length !== 2) {
        err("Usage: condor_chirp set_job_attr AttributeName AttributeValue\n");
        return 1;
      }
      if (!io) {
        out(EINVAL);
        return 255;
      }
      const [name, value] = rest as [string, string];
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        out(EINVAL);
        return 255;
      }
      // the shadow answers EACCES for an attribute it may not forward; the starter passes it on as
      // CHIRP_ERROR_NOT_AUTHORIZED, which condor_chirp prints as errno 13 (NTreceivers.cpp CONDOR_set_job_attr,
      // io_proxy_handler.cpp convert, chirp_client.c convert_result, condor_chirp.cpp main)
      if (unsettable(loadConfig(cfg.home), name)) {
        out(EACCES);
        return 255;
      }
      const text = chirpValueText(value);
      if (secure(name)) return 0;
      let ad: Ad | null = null;
      let refused = false;
      let old: string | undefined;
      tx(db, () => {
        ad = getJob(db, cfg.cluster, cfg.proc);
        if (!ad) return;
        const own = jobStatus(db, cfg.cluster, cfg.proc) ?? 2;
        if (name.toLowerCase() === "jobstatus") {
          // qmgmt.cpp SetAttribute: a removed job may only go to held or removed; otherwise the previous value
          // moves to LastJobStatus. The schedd's own view of the job does not change (see putJob).
          const cur = ad.num("JobStatus") ?? 0, next = Number.parseInt(text, 10) || 0;
          if (next !== 5 && next !== 3 && (cur === 3 || ad.num("LastJobStatus") === 3)) {
            refused = true;
            ad = null;
            return;
          }
          if (next !== cur && cur > 0) ad.set("LastJobStatus", cur);
        }
        old = ad.get(name);
        ad.setText(name, text);
        putJob(db, ad, own);
        bumpGen(db);
      });
      if (refused) {
        out(EINVAL);
        return 255;
      }
      // qmgmt.cpp SetAttribute with SHOULDLOG: the value the ad had is named when there was one
      // (condor_event.cpp AttributeUpdate::formatBody); docs/htcondor.md#the-events-as-written
      if (ad) ulog(ad, 33, old === undefined ? `Setting job attribute ${name} to ${text}` : `Changing job attribute ${name} from ${old} to ${text}`);
      return 0;
    }
    case "set_job_attr_delayed": {
      if (rest.length !== 2) {
        err("Usage: condor_chirp set_job_attr_delayed AttributeName AttributeValue\n");
        return 1;
      }
      const [name, value] = rest as [string, string];
      if (!/^chirp/i.test(name) || value.length > 993 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        out(EINVAL);
        return 255;
      }
      const text = chirpValueText(value);
      const delay = loadConfig(cfg.home).delayedUpdateMs;
      tx(db, () => {
        const n = (db.query("SELECT COUNT(DISTINCT name) AS n FROM delayed WHERE cluster = ? AND proc = ?").get(cfg.cluster, cfg.proc) as { n: number }).n;
        if (n >= 100) return;
        db.query("INSERT INTO delayed (cluster, proc, name, text, due) VALUES (?, ?, ?, ?, ?)").run(cfg.cluster, cfg.proc, name, text, Date.now() + delay);
      });
      return 0;
    }
    case "get_job_attr":
    case "get_job_attr_delayed": {
      if (rest.length !== 1) {
        err(`Usage: condor_chirp ${cmd} AttributeName\n`);
        return 1;
      }
      if (!io && cmd === "get_job_attr") {
        out("(null)\n");
        return 0;
      }
      const t = job.get(rest[0]!);
      out((t ?? "UNDEFINED") + "\n");
      return 0;
    }
    case "ulog": {
      if (rest.length !== 1) {
        err("Usage: condor_chirp ulog Message\n");
        return 1;
      }
      if (!io) {
        out(EINVAL);
        return 255;
      }
      ulog(job, 8, rest[0]!.slice(0, 128));
      return 0;
    }
    case "put": {
      // condor_chirp.cpp chirp_put: [-mode m] [-perm octal] local remote; the shadow writes the
      // file, with its cwd the job's Iwd (baseshadow.cpp chdir), O_CREAT|O_WRONLY|O_TRUNC with the
      // mode (NTreceivers.cpp CONDOR_putfile). Not supported here: "-" (stdin) as the local file.
      let at = 0, perm = 0o777;
      while (at + 1 < rest.length && (rest[at] === "-mode" || rest[at] === "-perm")) {
        if (rest[at] === "-perm") perm = Number.parseInt(rest[at + 1]!, 8) || 0;
        at += 2;
      }
      if (rest.length - at !== 2) {
        out("condor_chirp put  [-mode mode] [-perm perm] local_file remote_file\n");
        return 255;
      }
      if (!io) {
        out(EINVAL);
        return 255;
      }
      const [local, remote] = [rest[at]!, rest[at + 1]!];
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(local);
      } catch {
        err(`Can't open local file ${local}\n`);
        return 255;
      }
      try {
        const target = remote.startsWith("/") ? remote : `${job.str("Iwd") ?? "/"}/${remote}`;
        const fd = fs.openSync(target, fs.constants.O_CREAT | fs.constants.O_WRONLY | fs.constants.O_TRUNC, perm);
        try {
          fs.writeSync(fd, bytes);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        err("Couldn't chirp_write as much as we read\n");
        return 255;
      }
      return 0;
    }
    case "phase":
      return 0;
    default:
      err(
        `Unknown command: ${
          cmd ?? ""
        }\nusage: condor_chirp <command> [args]\n  set_job_attr <name> <value>\n  set_job_attr_delayed <name> <value>\n  get_job_attr <name>\n  ulog <message>\n`,
      );
      return 1;
  }
}

/**
 * A call of job `cfg` that its schedd serves (service.ts), on out() and err(); undefined when the tool
 * must answer it instead: `put` (its local file is the caller's), a job not connected (the tool names
 * the caller's own config path).
 */
export function servedChirp(cfg: ChirpCfg, argv: string[]): number | undefined {
  return argv[0] === "put" ? undefined : chirp(cfg, argv);
}

/** apply due (or, with all=true, every) delayed chirp updates; called by the schedd */
export function applyDelayed(all: boolean, cluster?: number, proc?: number): void {
  const db = openDb();
  const now = Date.now();
  const rows =
    (cluster !== undefined
      ? db.query("SELECT rowid, * FROM delayed WHERE cluster = ? AND proc = ? ORDER BY rowid").all(cluster, proc ?? 0)
      : db.query("SELECT rowid, * FROM delayed WHERE due <= ? ORDER BY rowid").all(all ? Number.MAX_SAFE_INTEGER : now)) as {
        rowid: number;
        cluster: number;
        proc: number;
        name: string;
        text: string;
        due: number;
      }[];
  if (!rows.length) return;
  const cfg = loadConfig();
  tx(db, () => {
    for (const r of rows) {
      if (!all && r.due > now) continue;
      const ad = getJob(db, r.cluster, r.proc);
      // the shadow drops a delayed update of an attribute it may not forward, silently
      if (ad && !unsettable(cfg, r.name) && !secure(r.name)) {
        ad.setText(r.name, r.text);
        putJob(db, ad, jobStatus(db, r.cluster, r.proc) ?? undefined);
      }
      db.query("DELETE FROM delayed WHERE rowid = ?").run(r.rowid);
    }
  });
}
