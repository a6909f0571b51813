// condor_chirp (libexec), run by a job. spec: htcondor-cli §5.4; observed §7 and the chirp string table
import * as fs from "node:fs";
import { Ad, tryParse, unparse } from "./classad.ts";
import { bumpGen, getJob, openDb, out, err, putJob, tx, loadConfig } from "./common.ts";
import { ulog } from "./userlog.ts";

type ChirpCfg = { home: string; cluster: number; proc: number; scratch: string };

export function chirpConfigPath(): string {
  if (process.env._CONDOR_CHIRP_CONFIG) return process.env._CONDOR_CHIRP_CONFIG;
  if (process.env._CONDOR_SCRATCH_DIR) return `${process.env._CONDOR_SCRATCH_DIR}/.chirp.config`;
  return "./.chirp.config";
}

export function readChirpConfig(): ChirpCfg | null {
  try { return JSON.parse(fs.readFileSync(chirpConfigPath(), "utf8")) as ChirpCfg; } catch { return null; }
}

const EINVAL = "\tError: 22 (Invalid argument)\n";

function noConnect(): number {
  out("\tError: 2 (No such file or directory)\n");
  err(`Can't open ${chirpConfigPath()} file\ncannot chirp_connect to condor_starter\n`);
  return 255;
}

/** the shadow's view of a chirped value (observed table): \" → ", \\ kept, newline or non-expression → undefined */
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
  const db = openDb(cfg.home);
  const job = getJob(db, cfg.cluster, cfg.proc);
  if (!job || job.num("JobStatus") !== 2) return noConnect();
  const io = job.bool("WantIOProxy") === true;
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "set_job_attr": {
      if (rest.length !== 2) { err("Usage: condor_chirp set_job_attr AttributeName AttributeValue\n"); return 1; }
      if (!io) { out(EINVAL); return 255; }
      const [name, value] = rest as [string, string];
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) { out(EINVAL); return 255; }
      const text = chirpValueText(value);
      let ad: Ad | null = null;
      tx(db, () => {
        ad = getJob(db, cfg.cluster, cfg.proc);
        if (!ad) return;
        ad.setText(name, text);
        putJob(db, ad);
        bumpGen(db);
      });
      if (ad) ulog(ad, 33, `Setting job attribute ${name} to ${text}`);
      return 0;
    }
    case "set_job_attr_delayed": {
      if (rest.length !== 2) { err("Usage: condor_chirp set_job_attr_delayed AttributeName AttributeValue\n"); return 1; }
      const [name, value] = rest as [string, string];
      if (!/^chirp/i.test(name) || value.length > 993 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) { out(EINVAL); return 255; }
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
      if (rest.length !== 1) { err(`Usage: condor_chirp ${cmd} AttributeName\n`); return 1; }
      if (!io && cmd === "get_job_attr") { out("(null)\n"); return 0; }
      const t = job.get(rest[0]!);
      out((t ?? "UNDEFINED") + "\n");
      return 0;
    }
    case "ulog": {
      if (rest.length !== 1) { err("Usage: condor_chirp ulog Message\n"); return 1; }
      if (!io) { out(EINVAL); return 255; }
      ulog(job, 8, rest[0]!.slice(0, 128));
      return 0;
    }
    case "phase":
      return 0;
    default:
      err(`Unknown command: ${cmd ?? ""}\nusage: condor_chirp <command> [args]\n  set_job_attr <name> <value>\n  set_job_attr_delayed <name> <value>\n  get_job_attr <name>\n  ulog <message>\n`);
      return 1;
  }
}

/** apply due (or, with all=true, every) delayed chirp updates; called by the schedd */
export function applyDelayed(all: boolean, cluster?: number, proc?: number): void {
  const db = openDb();
  const now = Date.now();
  const rows = (cluster !== undefined
    ? db.query("SELECT rowid, * FROM delayed WHERE cluster = ? AND proc = ? ORDER BY rowid").all(cluster, proc ?? 0)
    : db.query("SELECT rowid, * FROM delayed WHERE due <= ? ORDER BY rowid").all(all ? Number.MAX_SAFE_INTEGER : now)) as { rowid: number; cluster: number; proc: number; name: string; text: string; due: number }[];
  if (!rows.length) return;
  tx(db, () => {
    for (const r of rows) {
      if (!all && r.due > now) continue;
      const ad = getJob(db, r.cluster, r.proc);
      if (ad) { ad.setText(r.name, r.text); putJob(db, ad); }
      db.query("DELETE FROM delayed WHERE rowid = ?").run(r.rowid);
    }
  });
}
