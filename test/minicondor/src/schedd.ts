// The lazily started "schedd + startd + starter" process. One per MINICONDOR_HOME; it starts when a tool
// queues work, runs every job as a child process in its own session, and exits when nothing is left to do.
import type { Database } from "bun:sqlite";
import type { Subprocess } from "bun";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Ad, evalExpr, isTrue, tryParse, unparse } from "./classad.ts";
import { parseEnvV1, parseEnvV2Raw, parseV1Args, parseV2Raw } from "./argsenv.ts";
import {
  allRuns,
  BIN_DIR,
  bumpGen,
  type Config,
  deleteJob,
  emulatorPrograms,
  getJob,
  getRun,
  homeDir,
  isFaultEnv,
  jobStatus,
  killByEnv,
  killGroup,
  loadConfig,
  loadFaults,
  metaGet,
  metaSet,
  nowSec,
  openDb,
  pidAlive,
  pidsWithEnv,
  processTable,
  putJob,
  rowAd,
  type RunRow,
  scheddAddr,
  setStatus,
  toHistory,
  toolArgv,
  tx,
  userHome,
} from "./common.ts";
import { freeResources, machineAd } from "./machine.ts";
import { copyInto, expandTransfer, parseRemaps, sendItems, type Snapshot, snapshot, type XferFailure, type XferItem } from "./files.ts";
import { evictedBody, evictedText, ulog, usageBlock } from "./userlog.ts";
import { applyDelayed } from "./chirp.ts";
import { chirpEndpoint, serveCalls } from "./service.ts";

// ---------------------------------------------------------------- starting the schedd from a tool
function isScheddPid(pid: number, home: string): boolean {
  if (!pidAlive(pid)) return false;
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    // the argument itself: a second schedd's home lies inside the pool's
    const args = cmd.split("\0");
    return args.includes("__schedd") && args.includes(home);
  } catch {
    return false;
  }
}

export function scheddRunning(db: Database, home = homeDir()): boolean {
  return isScheddPid(metaGet(db, "schedd_pid"), home);
}

export function ensureSchedd(db: Database): void {
  const home = homeDir();
  if (scheddRunning(db, home)) return;
  tx(db, () => {
    if (scheddRunning(db, home)) return;
    const logFd = fs.openSync(path.join(home, "schedd.log"), "a");
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !isFaultEnv(k)) env[k] = v;
    const p = Bun.spawn(toolArgv("__schedd", home), {
      cwd: home,
      env: { ...env, MINICONDOR_HOME: home },
      stdin: "ignore",
      stdout: logFd,
      stderr: logFd,
      detached: true,
    });
    p.unref();
    fs.closeSync(logFd);
    metaSet(db, "schedd_pid", p.pid);
  });
}

/** Start the schedd if there is work it should be doing (called by read-only tools too). */
export function maybeEnsureSchedd(db: Database): void {
  const r = db.query('SELECT COUNT(*) AS n FROM jobs WHERE status IN (1, 2, 3) OR (status = 5 AND ad LIKE \'%"HoldReasonCode":"16"%\')').get() as { n: number };
  const runs = (db.query("SELECT COUNT(*) AS n FROM running").get() as { n: number }).n;
  if (r.n > 0 || runs > 0 || lingeringJobs(db) > 0) ensureSchedd(db);
}

/** Spooled jobs whose output condor_transfer_data fetched, waiting to leave the queue. */
function lingeringJobs(db: Database): number {
  return (db.query("SELECT COUNT(*) AS n FROM jobs WHERE status = 4 AND ad LIKE '%StageOutFinish%'").get() as { n: number }).n;
}

/** Delete the spool directory of a spooled job that left the queue. */
export function removeSpool(ad: Ad): void {
  const iwd = ad.str("Iwd");
  if (!ad.has("SUBMIT_Iwd") || !iwd) return;
  // spool/<cluster>/<proc>/cluster<c>.proc<p>.subproc0: the proc's folder goes, the cluster's once empty
  const procDir = path.dirname(iwd);
  try {
    fs.rmSync(procDir, { recursive: true, force: true });
  } catch { /* ignore */ }
  try {
    fs.rmdirSync(path.dirname(procDir));
  } catch { /* other procs still spooled */ }
}

// ---------------------------------------------------------------- the daemon
type Child = {
  key: string;
  c: number;
  p: number;
  proc: Subprocess | null;
  pid: number;
  dir: string;
  scratch: string;
  sandbox: boolean;
  snap: Snapshot;
  exe: string;
  startMs: number;
  termAt?: number;
  killAt?: number;
  done: boolean;
  stdoutPath: string | null;
  stderrPath: string | null;
  /** The largest resident set the job's processes had together, KiB (enforceMemory). */
  peakKiB?: number;
  /** The job went over its memory and is held for it. */
  oom?: boolean;
};

const SIGNUM = os.constants.signals as Record<string, number>;

// MACHINE_MAX_VACATE_TIME's default: what a job without job_max_vacate_time gets
const MACHINE_MAX_VACATE_TIME = 10;

/** kill_sig / remove_kill_sig / hold_kill_sig of the job (SIGTERM when not set). */
function stopSignal(ad: Ad | null, status: number): NodeJS.Signals | number {
  const pick = status === 3 ? ["RemoveKillSig", "KillSig"] : status === 5 ? ["HoldKillSig", "KillSig"] : ["KillSig"];
  for (const a of pick) {
    const v = ad?.get(a);
    if (v === undefined) continue;
    const n = ad!.num(a);
    if (n !== undefined) return n;
    const name = (ad!.str(a) ?? "").toUpperCase();
    const full = name.startsWith("SIG") ? name : "SIG" + name;
    if (SIGNUM[full] !== undefined) return full as NodeJS.Signals;
  }
  return "SIGTERM";
}

/**
 * condor_vacate_job asks the schedd to stop a running job and put it back to idle (schedd.cpp
 * abort_job_myself). Kept beside the queue, not in the ad: the job must not see or forge it.
 */
export function requestVacate(db: Database, c: number, p: number, fast: boolean): void {
  db.query("INSERT OR REPLACE INTO meta VALUES (?, ?)").run(`vacate:${c}.${p}`, fast ? "fast" : "soft");
}

function pendingVacate(db: Database, c: number, p: number): "soft" | "fast" | null {
  const row = db.query("SELECT v FROM meta WHERE k = ?").get(`vacate:${c}.${p}`) as { v: string } | null;
  return row ? (row.v === "fast" ? "fast" : "soft") : null;
}

/** What the starter does when JobMaxVacateTime is up: SIGKILL to everything of the job. */
function hardKill(ch: Child): void {
  killGroup(ch.pid, "SIGKILL");
  killByEnv(`_CONDOR_SCRATCH_DIR=${ch.scratch}`);
}

export async function scheddMain(home: string): Promise<void> {
  process.env.MINICONDOR_HOME = home;
  const db = openDb(home);
  const me = process.pid;
  const log = (s: string) => {
    try {
      fs.appendFileSync(path.join(home, "schedd.log"), `${new Date().toISOString()} [${me}] ${s}\n`);
    } catch { /* ignore */ }
  };
  // claim the schedd role
  const won = tx(db, () => {
    const cur = metaGet(db, "schedd_pid");
    if (cur && cur !== me && isScheddPid(cur, home)) return false;
    metaSet(db, "schedd_pid", me);
    return true;
  });
  if (!won) return;
  log("schedd started");
  await serveCalls(home, log);
  const children = new Map<string, Child>();
  let wake: (() => void) | null = null;
  const poke = () => {
    if (wake) {
      const w = wake;
      wake = null;
      w();
    }
  };
  let stopping = false;
  process.on("SIGTERM", () => {
    stopping = true;
    poke();
  });
  process.on("SIGINT", () => {
    stopping = true;
    poke();
  });

  recoverOrphans(db, children, log);

  let lastGen = -1;
  let lastPeriodic = Date.now();
  let idleSince: number | null = null;
  let forcePass = true;

  for (;;) {
    const cfg = loadConfig(home);
    // a test that deleted the home is over: nobody will ever ask for these jobs again
    if (!fs.existsSync(path.join(home, "state.db"))) {
      stopping = true;
      log("home deleted");
    }
    if (stopping) {
      for (const ch of children.values()) killGroup(ch.pid, "SIGKILL");
      for (const ch of children.values()) killByEnv(`_CONDOR_SCRATCH_DIR=${ch.scratch}`);
      tx(db, () => {
        if (metaGet(db, "schedd_pid") === me) metaSet(db, "schedd_pid", 0);
      });
      log("schedd stopped by signal");
      process.exit(0);
    }
    try {
      applyDelayed(false);
    } catch (e) {
      log("delayed updates failed: " + e);
    }
    const gen = metaGet(db, "gen");
    const now = Date.now();
    // memory enforcement (CGROUP_MEMORY_LIMIT_POLICY = hard): sampled at every poll (README: Memory)
    if (cfg.enforceMemory && children.size) {
      try {
        enforceMemory(db, cfg, children, log);
      } catch (e) {
        log("memory enforcement failed: " + e);
      }
    }
    const timersDue = [...children.values()].some((c) => (c.killAt !== undefined && c.killAt <= now));
    const spoolPending = db.query('SELECT COUNT(*) AS n FROM jobs WHERE status = 5 AND ad LIKE \'%"HoldReasonCode":"16"%\'').get() as { n: number };
    const lingering = lingeringJobs(db) > 0;
    if (gen !== lastGen || forcePass || timersDue || spoolPending.n > 0 || lingering || now - lastPeriodic > cfg.periodicIntervalS * 1000) {
      lastGen = gen;
      forcePass = false;
      try {
        await pass(db, cfg, children, log, () => {
          forcePass = true;
          poke();
        });
      } catch (e) {
        log("pass failed: " + ((e as Error).stack ?? e));
      }
      if (now - lastPeriodic > cfg.periodicIntervalS * 1000) {
        lastPeriodic = now;
        try {
          periodic(db, cfg, children);
        } catch (e) {
          log("periodic failed: " + e);
        }
      }
    }
    // exit when idle
    const busy = children.size > 0 || spoolPending.n > 0 || lingering || hasStartable(db, cfg);
    if (busy) idleSince = null;
    else {
      idleSince ??= Date.now();
      if (Date.now() - idleSince > cfg.scheddIdleExitMs) {
        const exit = tx(db, () => {
          if (children.size > 0 || hasStartable(db, cfg)) return false;
          const rr = (db.query("SELECT COUNT(*) AS n FROM running").get() as { n: number }).n;
          const sp = (db.query('SELECT COUNT(*) AS n FROM jobs WHERE status = 5 AND ad LIKE \'%"HoldReasonCode":"16"%\'').get() as { n: number }).n;
          if (rr > 0 || sp > 0 || lingeringJobs(db) > 0) return false;
          if (metaGet(db, "schedd_pid") === me) metaSet(db, "schedd_pid", 0);
          return true;
        });
        if (exit) {
          log("schedd idle, exiting");
          process.exit(0);
        }
        idleSince = null;
      }
    }
    await new Promise<void>((res) => {
      wake = res;
      setTimeout(() => {
        if (wake === res) {
          wake = null;
          res();
        }
      }, cfg.pollMs);
    });
  }
}

function hasStartable(db: Database, cfg: Config): boolean {
  const f = loadFaults(homeDir(), false);
  if (f.scheddDown || f.stopped) return false;
  const rows = db.query(`SELECT cluster, proc, ${REQUESTS} FROM jobs WHERE status = 1 ORDER BY cluster, proc LIMIT 200`).all() as IdleRow[];
  if (!rows.length) return false;
  const runs = allRuns(db);
  const free = freeResources(cfg, runs);
  const m = machineAd(cfg, free, runs);
  // Not in a transaction: a job may have left the queue since the rows were read.
  return rows.some((r) => {
    if (outOfReach(r, free)) return false;
    const ad = getJob(db, r.cluster, r.proc);
    return ad !== null && fits(ad, free, m);
  });
}

// An idle job's requests as the ad spells them after condor_submit (its JSON keys keep the
// attribute's spelling): read without reading the rest of the ad.
const REQUESTS = "json_extract(ad, '$.RequestCpus') AS cpus, json_extract(ad, '$.RequestMemory') AS memory";
type IdleRow = { cluster: number; proc: number; cpus: unknown; memory: unknown };
const PLAIN_NUMBER = /^\d+(\.\d+)?$/;

/**
 * A job whose CPU or memory request is a plain number larger than what is free cannot fit (fits()
 * checks the requests before anything else), so its ad need not be read. At 50,000 idle jobs,
 * reading every ad on every pass held the queue's lock for seconds and a condor_submit waiting on
 * it timed out; a negotiator likewise rejects a whole autocluster of identical requests at once.
 * A request that is an expression, or spelled otherwise, is left to fits().
 */
function outOfReach(r: IdleRow, free: ReturnType<typeof freeResources>): boolean {
  const over = (v: unknown, left: number) => typeof v === "string" && PLAIN_NUMBER.test(v) && Number(v) > left;
  return over(r.cpus, free.cpus) || over(r.memory, free.memory);
}

function fits(ad: Ad, free: ReturnType<typeof freeResources>, m: Ad): boolean {
  const cpus = ad.num("RequestCpus") ?? 1, mem = ad.num("RequestMemory") ?? 128, gpus = ad.num("RequestGPUs") ?? 0;
  if (cpus > free.cpus || mem > free.memory || gpus > free.gpus) return false;
  const req = ad.get("Requirements");
  if (!req) return true;
  try {
    return isTrue(evalExpr(req, ad, m));
  } catch {
    return false;
  }
}

function recoverOrphans(db: Database, children: Map<string, Child>, log: (s: string) => void): void {
  const runs = allRuns(db);
  for (const r of runs) {
    if (children.has(`${r.cluster}.${r.proc}`)) continue;
    log(`recovering orphaned job ${r.cluster}.${r.proc} (pid ${r.pid})`);
    if (r.pid) killGroup(r.pid, "SIGKILL");
    killByEnv(`_CONDOR_SCRATCH_DIR=${r.scratch}`);
    tx(db, () => {
      db.query("DELETE FROM running WHERE cluster = ? AND proc = ?").run(r.cluster, r.proc);
      const ad = getJob(db, r.cluster, r.proc);
      if (!ad) return;
      const st = jobStatus(db, r.cluster, r.proc);
      releaseRemoteHost(ad);
      if (st === 2) setStatus(ad, 1);
      if (st === 3) {
        finalizeRemoved(ad);
        toHistory(db, ad);
        return;
      }
      putJob(db, ad);
    });
    try {
      fs.rmSync(r.dir, { recursive: true, force: true });
    } catch { /* ignore */ }
  }
}

function releaseRemoteHost(ad: Ad): void {
  const rh = ad.get("RemoteHost");
  if (rh !== undefined) {
    ad.setText("LastRemoteHost", rh);
    ad.delete("RemoteHost");
  }
  ad.set("CurrentHosts", 0);
  const start = ad.num("JobCurrentStartDate");
  if (start !== undefined) {
    const wall = Math.max(0, nowSec() - start);
    ad.setText("LastRemoteWallClockTime", wall.toFixed(1));
    const prev = ad.num("RemoteWallClockTime") ?? 0;
    ad.setText("RemoteWallClockTime", (prev + wall).toFixed(1));
    ad.setText("CumulativeSlotTime", (prev + wall).toFixed(1));
  }
}

export function finalizeRemoved(ad: Ad): void {
  // docs/htcondor.md#clusters-users-and-constraints-one-summary-line: removing a held job moves HoldReason* to
  // LastHoldReason*
  for (const [a, b] of [["HoldReason", "LastHoldReason"], ["HoldReasonCode", "LastHoldReasonCode"], ["HoldReasonSubCode", "LastHoldReasonSubCode"]] as const) {
    const t = ad.get(a);
    if (t !== undefined) {
      ad.setText(b, t);
      ad.delete(a);
    }
  }
  ad.set("LeaveJobInQueue", false);
}

async function pass(db: Database, cfg: Config, children: Map<string, Child>, log: (s: string) => void, onExit: () => void): Promise<void> {
  const faults = loadFaults(homeDir(), false);
  const nowMs = Date.now();
  // 1. spool releases
  const spooled = db.query('SELECT ad FROM jobs WHERE status = 5 AND ad LIKE \'%"HoldReasonCode":"16"%\'').all() as { ad: string }[];
  for (const r of spooled) {
    const ad = rowAd(r);
    const marker = path.join(path.dirname(ad.str("Iwd") ?? ""), ".spooled");
    let t: number;
    try {
      t = Number(fs.readFileSync(marker, "utf8"));
    } catch {
      continue;
    }
    if (nowMs - t < cfg.spoolReleaseMs) continue;
    tx(db, () => {
      const cur = getJob(db, ad.num("ClusterId")!, ad.num("ProcId")!);
      if (!cur || cur.num("JobStatus") !== 5 || cur.num("HoldReasonCode") !== 16) return;
      for (
        const [a, b] of [["HoldReason", "LastHoldReason"], ["HoldReasonCode", "LastHoldReasonCode"], ["HoldReasonSubCode", "LastHoldReasonSubCode"]] as const
      ) {
        const v = cur.get(a);
        if (v !== undefined) {
          cur.setText(b, v);
          cur.delete(a);
        }
      }
      setStatus(cur, 1);
      putJob(db, cur);
    });
  }
  // 2. running jobs whose status was changed by condor_rm / condor_hold: the starter soft-kills the job's own
  // process once, and hard-kills the whole family after JobMaxVacateTime (a wrapper must forward the
  // soft kill to its children itself)
  if (children.size) {
    for (const ch of children.values()) {
      if (ch.done) continue;
      const row = db.query("SELECT status, ad FROM jobs WHERE cluster = ? AND proc = ?").get(ch.c, ch.p) as { status: number; ad: string } | null;
      const st = row ? row.status : 3;
      const vacate = st === 2 && ch.termAt === undefined ? pendingVacate(db, ch.c, ch.p) : null;
      if ((st !== 2 || vacate) && ch.termAt === undefined) {
        const ad = row ? rowAd(row) : null;
        // a fast vacate is the starter's hard kill at once (condor_vacate_job -fast)
        const vac = vacate === "fast" ? 0 : ad?.num("JobMaxVacateTime") ?? MACHINE_MAX_VACATE_TIME;
        ch.termAt = nowMs;
        ch.killAt = nowMs + Math.max(0, vac) * 1000;
        try {
          process.kill(ch.pid, stopSignal(ad, st));
        } catch { /* already gone */ }
        if (vac <= 0) {
          hardKill(ch);
          ch.killAt = nowMs + 1000;
        }
      } else if (ch.killAt !== undefined && ch.killAt <= nowMs) {
        hardKill(ch);
        ch.killAt = nowMs + 1000;
      }
    }
  }
  // 3. stage-out linger: spooled jobs whose output was fetched leave the queue (test/minicondor/fixtures/spool.txt
  //    q-after-transfer)
  const fetched = db.query("SELECT ad FROM jobs WHERE status = 4 AND ad LIKE '%StageOutFinish%'").all() as { ad: string }[];
  for (const r of fetched) {
    const ad = rowAd(r);
    const fin = ad.num("StageOutFinish") ?? 0;
    if (nowMs - fin * 1000 >= cfg.stageOutLingerMs) {
      const gone = tx(db, () => {
        const cur = getJob(db, ad.num("ClusterId")!, ad.num("ProcId")!);
        if (!cur || cur.num("JobStatus") !== 4 || !cur.has("StageOutFinish")) return false;
        toHistory(db, cur);
        bumpGen(db);
        return true;
      });
      if (gone) removeSpool(ad);
    }
  }
  // 4. match idle jobs
  if (faults.scheddDown || faults.stopped) return;
  const claimed: ({ ad: Ad; run: RunRow; hold?: undefined } | { ad: Ad; run?: undefined; hold: Hold })[] = [];
  tx(db, () => {
    const rows = db.query(`SELECT cluster, proc, ${REQUESTS} FROM jobs WHERE status = 1 ORDER BY cluster, proc`).all() as IdleRow[];
    if (!rows.length) return;
    const runs = allRuns(db);
    const free = freeResources(cfg, runs);
    const usedSlots = new Set(runs.map((r) => r.slot));
    const busy = new Set(runs.map((r) => `${r.cluster}.${r.proc}`));
    for (const r of rows) {
      if (free.cpus <= 0 && free.memory <= 0) break;
      if (outOfReach(r, free)) continue;
      const ad = getJob(db, r.cluster, r.proc)!; // read in this transaction: still queued
      if (busy.has(`${ad.num("ClusterId")}.${ad.num("ProcId")}`) || children.has(`${ad.num("ClusterId")}.${ad.num("ProcId")}`)) continue; // still being killed
      const m = machineAd(cfg, free, runs);
      if (!fits(ad, free, m)) continue;
      const c = ad.num("ClusterId")!, p = ad.num("ProcId")!;
      const now = nowSec();
      const hold = injectedHold(db, ad, faults);
      if (hold) {
        // refused before it runs: nothing of a start (JobStartDate, JobRunCount, ...) is recorded
        // (docs/htcondor.md#job-status-and-job-attributes)
        setStatus(ad, 5, now);
        ad.set("HoldReason", hold.reason);
        ad.set("HoldReasonCode", hold.code);
        ad.set("HoldReasonSubCode", hold.sub);
        ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
        ad.set("NumSystemHolds", (ad.num("NumSystemHolds") ?? 0) + 1);
        putJob(db, ad);
        claimed.push({ ad, hold });
        continue;
      }
      const cpus = ad.num("RequestCpus") ?? 1, mem = ad.num("RequestMemory") ?? 128, gpus = ad.num("RequestGPUs") ?? 0;
      let slot = 1;
      while (usedSlots.has(slot)) slot++;
      usedSlots.add(slot);
      const gpuIds = free.gpuIds.splice(0, gpus);
      free.cpus -= cpus;
      free.memory -= mem;
      free.gpus -= gpus;
      const n = metaGet(db, "next_dir") || 1;
      metaSet(db, "next_dir", n + 1);
      const dir = path.join(homeDir(), "execute", `dir_${n}`);
      const run: RunRow = {
        cluster: c,
        proc: p,
        pid: 0,
        dir,
        scratch: path.join(dir, "scratch"),
        cpus,
        memory: mem,
        gpus,
        gpu_ids: gpuIds.join(","),
        slot,
        started: now,
      };
      setStatus(ad, 2, now);
      if (!ad.has("JobStartDate")) ad.set("JobStartDate", now);
      ad.set("JobCurrentStartDate", now);
      ad.set("JobCurrentStartExecutingDate", now);
      ad.set("LastMatchTime", now);
      if (!ad.has("FirstJobMatchDate")) ad.set("FirstJobMatchDate", now);
      ad.set("RemoteHost", `slot1_${slot}@${cfg.host}`);
      ad.set("RemoteSlotID", slot);
      ad.set("CurrentHosts", 1);
      ad.set("NumShadowStarts", (ad.num("NumShadowStarts") ?? 0) + 1);
      ad.set("JobRunCount", (ad.num("JobRunCount") ?? 0) + 1);
      ad.set("NumJobMatches", (ad.num("NumJobMatches") ?? 0) + 1);
      ad.set("CpusProvisioned", cpus);
      ad.set("MemoryProvisioned", mem);
      ad.set("GPUsProvisioned", gpus);
      if (gpus) ad.set("AssignedGPUs", gpuIds.join(","));
      ad.setText("MemoryUsage", "((ResidentSetSize + 1023) / 1024)");
      putJob(db, ad);
      db.query("INSERT OR REPLACE INTO running (cluster, proc, pid, dir, scratch, cpus, memory, gpus, gpu_ids, slot, started) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
        .run(c, p, 0, dir, run.scratch, cpus, mem, gpus, run.gpu_ids, slot, now);
      claimed.push({ ad, run });
    }
  });
  for (const cl of claimed) {
    if (cl.hold) {
      ulog(cl.ad, 12, "Job was held.", `\t${cl.hold.reason}\n\tCode ${cl.hold.code} Subcode ${cl.hold.sub}\n`);
      continue;
    }
    try {
      startJob(db, cfg, cl.ad, cl.run, children, log, onExit);
    } catch (e) {
      log(`start of ${cl.run.cluster}.${cl.run.proc} failed: ${(e as Error).stack ?? e}`);
      holdAfterFailure(db, cl.run, 6, 0, `Error from slot1_${cl.run.slot}@${cfg.host}: Failed to execute '${cl.ad.str("Cmd")}': ${(e as Error).message}`);
    }
  }
}

type Hold = { code: number; sub: number; reason: string };

/**
 * The job's cgroup as the kernel and the starter see it (README: Memory): the resident sets of the
 * job's processes (its descendants, and whatever carries its _CONDOR_SCRATCH_DIR; not the
 * emulator's own tools, which stand in for small C programs) are summed. Above RequestMemory the
 * kernel's OOM killer SIGKILLs the biggest process, and the starter has the job held
 * (vanilla_proc.cpp outOfMemoryEvent, 25.0): the shadow holds it and stops the starter gracefully
 * (baseshadow.cpp holdJob, GRACEFULLY_REMOVE_JOBS), so the job is stopped as any held job is
 * (pass, step 2) and sends nothing back.
 */
function enforceMemory(db: Database, cfg: Config, children: Map<string, Child>, log: (s: string) => void): void {
  const table = processTable();
  const kids = new Map<number, number[]>();
  for (const [pid, p] of table) {
    const list = kids.get(p.ppid);
    if (list) list.push(pid);
    else kids.set(p.ppid, [pid]);
  }
  for (const ch of children.values()) {
    if (ch.done || ch.termAt !== undefined || ch.oom) continue;
    const run = getRun(db, ch.c, ch.p);
    const limitMiB = run?.memory;
    if (!run || !limitMiB || limitMiB <= 0) continue;
    const pids = new Set<number>();
    const todo = [ch.pid];
    while (todo.length) {
      const pid = todo.pop()!;
      if (pids.has(pid) || !table.has(pid)) continue;
      pids.add(pid);
      todo.push(...(kids.get(pid) ?? []));
    }
    for (const pid of pidsWithEnv(`_CONDOR_SCRATCH_DIR=${ch.scratch}`)) if (table.has(pid)) pids.add(pid);
    let total = 0, biggest = 0, biggestKiB = -1;
    for (const pid of pids) {
      if (emulatorTool(pid)) continue;
      const kib = table.get(pid)!.rssKiB;
      total += kib;
      if (kib > biggestKiB) [biggest, biggestKiB] = [pid, kib];
    }
    ch.peakKiB = Math.max(ch.peakKiB ?? 0, Math.round(total));
    if (total <= limitMiB * 1024 || !biggest) continue;
    ch.oom = true;
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${biggest}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 200);
    } catch { /* gone */ }
    log(`${ch.key} over its memory (${Math.round(total)} KiB of ${limitMiB} MiB): OOM kill of pid ${biggest} (${biggestKiB} KiB: ${cmd})`);
    try {
      process.kill(biggest, "SIGKILL");
    } catch { /* gone */ }
    // the usage the starter reports is the limit (STARTER_ALWAYS_HOLD_ON_OOM); the shadow prefixes
    // the slot (pseudo_ops.cpp pseudo_ulog); the job did not exit, so no ExitCode or ExitSignal
    // (docs/status.md#memory-kills)
    const reason = `Error from slot1_${run.slot}@${cfg.host}: Job has gone over cgroup memory limit of ${limitMiB} megabytes. ` +
      `Last measured usage: ${limitMiB} megabytes.  Consider resubmitting with a higher request_memory.`;
    let held: Ad | null = null;
    tx(db, () => {
      const ad = getJob(db, ch.c, ch.p);
      if (!ad || jobStatus(db, ch.c, ch.p) !== 2) return;
      setStatus(ad, 5);
      ad.set("HoldReason", reason);
      ad.set("HoldReasonCode", 34);
      ad.set("HoldReasonSubCode", 102);
      ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
      ad.set("NumSystemHolds", (ad.num("NumSystemHolds") ?? 0) + 1);
      ad.set("ResidentSetSize", ch.peakKiB ?? Math.round(total));
      putJob(db, ad);
      bumpGen(db);
      held = ad;
    });
    if (held) ulog(held as Ad, 12, "Job was held.", `\t${reason}\n\tCode 34 Subcode 102\n`);
  }
}

/**
 * A process of the emulator's own tools (condor_chirp inside a job, a Bun of tens of MiB where
 * HTCondor's is a small C program): not the job's memory. Known by the program it runs, Bun or the compiled tools (so a
 * job of Bun's own is not measured either). A process whose program cannot be read (exiting) is
 * left out as well.
 */
function emulatorTool(pid: number): boolean {
  try {
    // a process that is exiting (or exec-ing) has no program or command line to read: left out too
    return programs().includes(fs.realpathSync(`/proc/${pid}/exe`)) || fs.readFileSync(`/proc/${pid}/cmdline`).byteLength === 0;
  } catch {
    return true;
  }
}
let programList: string[] | undefined;
const programs = () => (programList ??= emulatorPrograms());

/**
 * Hold-on-start fault of a job, in order: captured from MINICONDOR_HOLD_ON_START by condor_submit,
 * +MiniCondorHold* submit attributes, faults.json holdOnStart.
 */
function injectedHold(db: Database, ad: Ad, faults: ReturnType<typeof loadFaults>): Hold | undefined {
  const row = db.query("SELECT hold FROM job_faults WHERE cluster = ? AND proc = ?").get(ad.num("ClusterId")!, ad.num("ProcId")!) as
    | { hold: string | null }
    | null;
  if (row?.hold) {
    const h = JSON.parse(row.hold) as { code: number; subCode?: number; reason?: string };
    return { code: h.code, sub: h.subCode ?? 0, reason: h.reason ?? `Injected hold (code ${h.code})` };
  }
  const hc = ad.num("MiniCondorHoldCode");
  if (hc !== undefined) return { code: hc, sub: ad.num("MiniCondorHoldSubCode") ?? 0, reason: ad.str("MiniCondorHoldReason") ?? `Injected hold (code ${hc})` };
  const h = faults.holdOnStart;
  if (!h) return undefined;
  if (h.constraint) {
    let match = false;
    try {
      match = isTrue(evalExpr(h.constraint, ad));
    } catch {
      match = false;
    }
    if (!match) return undefined;
  }
  return { code: h.code, sub: h.subCode ?? 0, reason: h.reason ?? `Injected hold (code ${h.code})` };
}

function holdAfterFailure(db: Database, run: RunRow, code: number, sub: number, reason: string): void {
  let ad: Ad | null = null;
  tx(db, () => {
    db.query("DELETE FROM running WHERE cluster = ? AND proc = ?").run(run.cluster, run.proc);
    ad = getJob(db, run.cluster, run.proc);
    if (!ad) return;
    releaseRemoteHost(ad);
    setStatus(ad, 5);
    ad.set("HoldReason", reason);
    ad.set("HoldReasonCode", code);
    ad.set("HoldReasonSubCode", sub);
    ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
    ad.set("NumSystemHolds", (ad.num("NumSystemHolds") ?? 0) + 1);
    putJob(db, ad);
  });
  if (ad) ulog(ad, 12, "Job was held.", `\t${reason}\n\tCode ${code} Subcode ${sub}\n`);
  try {
    fs.rmSync(run.dir, { recursive: true, force: true });
  } catch { /* ignore */ }
}

function longAd(ad: Ad): string {
  const o = ad.toObject();
  return Object.keys(o).sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())).map((k) => `${k} = ${o[k]}\n`).join("");
}

function shouldTransfer(ad: Ad, cfg: Config): boolean {
  const stf = (ad.str("ShouldTransferFiles") ?? "IF_NEEDED").toUpperCase();
  if (stf === "YES") return true;
  if (stf === "NO") return false;
  return !cfg.sharedFileSystem;
}

function startJob(db: Database, cfg: Config, ad: Ad, run: RunRow, children: Map<string, Child>, log: (s: string) => void, onExit: () => void): void {
  const c = run.cluster, p = run.proc;
  const iwd = ad.str("Iwd") ?? "/";
  const scratch = run.scratch;
  const userDir = path.join(run.dir, "user");
  fs.mkdirSync(scratch, { recursive: true });
  fs.mkdirSync(userDir, { recursive: true });
  const sandbox = shouldTransfer(ad, cfg);
  const cmd = ad.str("Cmd") ?? "";
  let exe = cmd;
  // input transfer
  if (sandbox) {
    if (cmd && ad.bool("TransferExecutable") !== false) {
      exe = path.join(scratch, path.basename(cmd));
      try {
        fs.copyFileSync(cmd, exe);
        fs.chmodSync(exe, 0o755);
      } catch (e) {
        return holdAfterFailure(
          db,
          run,
          13,
          2,
          `Transfer input files failure at execution point slot1_${run.slot}@${cfg.host} while receiving files from access point ${cfg.host}. Details: reading from file ${cmd}: (errno 2) No such file or directory`,
        ),
          void e;
      }
    }
    for (const f of (ad.str("TransferInput") ?? "").split(",").map((x) => x.trim()).filter(Boolean)) {
      let src = f;
      if (/^file:\/\//i.test(f)) src = f.slice(7);
      else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(f)) continue; // URLs would need a transfer plugin
      src = path.resolve(iwd, src);
      try {
        copyInto(src, scratch, f.endsWith("/"));
      } catch (e) {
        const fl = (e as { failure?: XferFailure }).failure ?? { errno: 2, detail: `reading from file ${src}: (errno 2) No such file or directory` };
        return holdAfterFailure(
          db,
          run,
          13,
          fl.errno,
          `Transfer input files failure at execution point slot1_${run.slot}@${cfg.host} while receiving files from access point ${cfg.host}. Details: ${fl.detail}`,
        );
      }
    }
  }
  const snap = sandbox ? snapshot(scratch) : {};
  const cwd = sandbox ? scratch : iwd;
  // stdio
  const outName = ad.str("Out") ?? "/dev/null", errName = ad.str("Err") ?? "/dev/null";
  const streamOut = ad.bool("StreamOut") === true, streamErr = ad.bool("StreamErr") === true;
  const pathFor = (name: string, sandboxName: string, stream: boolean): string => {
    if (name === "/dev/null") return "/dev/null";
    if (!sandbox || stream) return path.resolve(iwd, name);
    return path.join(scratch, sandboxName);
  };
  const stdoutPath = pathFor(outName, "_condor_stdout", streamOut);
  const stderrPath = outName === errName ? stdoutPath : pathFor(errName, "_condor_stderr", streamErr);
  let outFd: number, inFd: number;
  try {
    outFd = fs.openSync(stdoutPath, "w");
  } catch (e) {
    return holdAfterFailure(
      db,
      run,
      7,
      2,
      `Error from slot1_${run.slot}@${cfg.host}: Failed to open '${stdoutPath}' as standard output: ${(e as Error).message} (errno 2)`,
    );
  }
  const errFd = stderrPath === stdoutPath ? outFd : fs.openSync(stderrPath, "w");
  const inName = ad.str("In") ?? "/dev/null";
  try {
    inFd = fs.openSync(inName === "/dev/null" ? "/dev/null" : path.resolve(iwd, inName), "r");
  } catch {
    fs.closeSync(outFd);
    if (errFd !== outFd) fs.closeSync(errFd);
    return holdAfterFailure(
      db,
      run,
      8,
      2,
      `Error from slot1_${run.slot}@${cfg.host}: Failed to open '${path.resolve(iwd, inName)}' as standard input: No such file or directory (errno 2)`,
    );
  }
  // job ad / machine ad / chirp config
  const jobAdPath = path.join(scratch, ".job.ad");
  const machAdPath = path.join(scratch, ".machine.ad");
  const chirpPath = path.join(userDir, ".chirp.config");
  const runsNow = allRuns(db);
  fs.writeFileSync(jobAdPath, longAd(ad));
  fs.writeFileSync(machAdPath, longAd(machineAd(cfg, freeResources(cfg, runsNow), runsNow)));
  const chirpCfg = { home: homeDir(), cluster: c, proc: p, scratch };
  fs.writeFileSync(chirpPath, JSON.stringify({ ...chirpCfg, ...chirpEndpoint(chirpCfg) }) + "\n");
  // environment (docs/htcondor.md#the-complete-job-environment)
  const env: Record<string, string> = {};
  const envText = ad.get("Environment") !== undefined ? ad.str("Environment") ?? "" : null;
  let userEnv: [string, string][] = [];
  try {
    if (envText !== null) userEnv = parseEnvV2Raw(envText);
    else if (ad.str("Env")) userEnv = parseEnvV1(ad.str("Env")!);
  } catch {
    userEnv = [];
  }
  const cpus = String(run.cpus);
  const gpuIds = run.gpu_ids;
  const tag = `${process.pid}`;
  const base: Record<string, string> = {
    [`_CONDOR_ANCESTOR_${tag}`]: `${process.pid}:${nowSec()}:${Math.floor(Math.random() * 4e9)}`,
    APPTAINER_CACHEDIR: scratch,
    BATCH_SYSTEM: "HTCondor",
    CONDOR_STARTER_PID: tag,
    CUBACORES: cpus,
    CUDA_VISIBLE_DEVICES: gpuIds || "10000",
    GOMAXPROCS: cpus,
    GPU_DEVICE_ORDINAL: gpuIds || "10000",
    HOME: userHome(),
    JULIA_NUM_THREADS: cpus,
    MKL_NUM_THREADS: cpus,
    NUMEXPR_NUM_THREADS: cpus,
    NVIDIA_VISIBLE_DEVICES: gpuIds || "none",
    OMP_NUM_THREADS: cpus,
    OMP_THREAD_LIMIT: cpus,
    OPENBLAS_NUM_THREADS: cpus,
    PYTHON_CPU_COUNT: cpus,
    ROOT_MAX_THREADS: cpus,
    SINGULARITY_CACHEDIR: scratch,
    TEMP: scratch,
    TF_LOOP_PARALLEL_ITERATIONS: cpus,
    TF_NUM_THREADS: cpus,
    TMP: scratch,
    TMPDIR: scratch,
  };
  const condorVars: Record<string, string> = {
    _CHIRP_DELAYED_UPDATE_PREFIX: "Chirp*",
    _CONDOR_AssignedGPUs: gpuIds || "10000",
    _CONDOR_BIN: BIN_DIR,
    _CONDOR_CHIRP_CONFIG: chirpPath,
    _CONDOR_JOB_AD: jobAdPath,
    _CONDOR_JOB_IWD: iwd,
    _CONDOR_JOB_PIDS: "",
    _CONDOR_MACHINE_AD: machAdPath,
    _CONDOR_SCRATCH_DIR: scratch,
    _CONDOR_SLOT: `slot1_${run.slot}`,
  };
  Object.assign(env, base);
  for (const [k, v] of userEnv) env[k] = v.replace(/\$\$\(CondorScratchDir\)/gi, scratch);
  Object.assign(env, condorVars);
  // argv
  let args: string[] = [];
  try {
    if (ad.has("Arguments")) args = parseV2Raw(ad.str("Arguments") ?? "");
    else if (ad.str("Args")) args = parseV1Args(ad.str("Args")!);
  } catch {
    args = [];
  }
  let argv = [exe, ...args];
  if (ad.bool("WantContainer")) {
    let image = ad.str("ContainerImage") ?? "";
    if (ad.has("ContainerImageFullPath") && sandbox) image = path.join(scratch, image);
    else if (!/^[a-z]+:\/\//.test(image) && !path.isAbsolute(image)) image = path.resolve(iwd, image);
    const target = ad.str("ContainerTargetDir");
    const bind = target ? `${scratch}:${target}` : scratch;
    const inner = exe ? [exe, ...args] : args;
    argv = [cfg.apptainer, "-s", "exec", "-S", "/tmp", "-S", "/var/tmp", "--pwd", target ?? scratch, "-B", bind, "--no-home", "-C", image, ...inner];
    for (const [k, v] of Object.entries(env)) if (!k.startsWith("APPTAINER") && !k.startsWith("SINGULARITY")) env[`APPTAINERENV_${k}`] = v;
  }
  // The shadow writes 001 before it serves the job's chirp calls, so 001 comes before any 033 of this run
  // (docs/htcondor.md#the-events-as-written): written before the job can run, unless it cannot be executed.
  let runnable = true;
  try {
    fs.accessSync(argv[0]!, fs.constants.X_OK);
  } catch {
    runnable = false;
  }
  if (runnable) {
    ulog(
      ad,
      1,
      `Job executing on host: <127.0.0.1:9618?addrs=127.0.0.1-9618&alias=${cfg.host}&noUDP&sock=startd_1_1>`,
      `\tSlotName: slot1_${run.slot}@${cfg.host}\n\tCondorScratchDir = "${scratch}"\n\tCpus = ${run.cpus}\n\tMemory = ${run.memory}\n`,
    );
  }
  let proc: Subprocess;
  try {
    proc = Bun.spawn(argv, { cwd, env, stdin: inFd, stdout: outFd, stderr: errFd, detached: true });
  } catch (e) {
    fs.closeSync(outFd);
    if (errFd !== outFd) fs.closeSync(errFd);
    fs.closeSync(inFd);
    const er = e as NodeJS.ErrnoException;
    const errno = er.code === "EACCES"
      ? "errno=13: 'Permission denied'"
      : er.code === "ENOENT"
      ? "errno=2: 'No such file or directory'"
      : `errno=8: 'Exec format error'`;
    return holdAfterFailure(
      db,
      run,
      6,
      er.code === "EACCES" ? 13 : er.code === "ENOENT" ? 2 : 8,
      `Error from slot1_${run.slot}@${cfg.host}: Failed to execute '${argv[0]}': (${errno})`,
    );
  }
  fs.closeSync(outFd);
  if (errFd !== outFd) fs.closeSync(errFd);
  fs.closeSync(inFd);
  const child: Child = {
    key: `${c}.${p}`,
    c,
    p,
    proc,
    pid: proc.pid,
    dir: run.dir,
    scratch,
    sandbox,
    snap,
    exe,
    startMs: Date.now(),
    done: false,
    stdoutPath: stdoutPath === "/dev/null" ? null : stdoutPath,
    stderrPath: stderrPath === "/dev/null" ? null : stderrPath,
  };
  children.set(child.key, child);
  let held = false;
  tx(db, () => {
    db.query("UPDATE running SET pid = ? WHERE cluster = ? AND proc = ?").run(proc.pid, c, p);
    const cur = getJob(db, c, p);
    if (cur) {
      cur.set("NumJobStarts", (cur.num("NumJobStarts") ?? 0) + 1);
      cur.set("StartdIpAddr", `<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=${cfg.host}&noUDP&sock=startd_1_1>`);
      putJob(db, cur);
      held = jobStatus(db, c, p) !== 2;
    }
  });
  // held or removed between the match and the start: the next pass stops it like any other
  if (held) onExit();
  log(`started ${c}.${p} pid ${proc.pid} in ${cwd}`);
  void proc.exited.then(async () => {
    try {
      await finishJob(db, cfg, child, log);
    } catch (e) {
      log(`finish of ${child.key} failed: ${(e as Error).stack ?? e}`);
    }
    children.delete(child.key);
    onExit();
  });
}

/**
 * The output sandbox, sent as the starter's FileTransfer does it (see files.ts for what becomes of symlinks).
 * Everything that can be sent is; the first failure (a link to a directory, an unreadable file) is returned
 * and holds the job.
 */
function transferOutput(ad: Ad, ch: Child, dest: string): { sent: string[]; failure: XferFailure | null } {
  // a spooled job's output stays in the spool under its sandbox names (_condor_stdout, ...):
  // condor_transfer_data applies TransferOutputRemaps when it fetches them (docs/htcondor.md#condor_submit-options,
  // docs/htcondor.md#condor_transfer_data)
  const remaps = ad.has("SUBMIT_Iwd") ? new Map<string, string>() : parseRemaps(ad.str("TransferOutputRemaps"));
  const sent: string[] = [];
  const items: XferItem[] = [];
  const renames = new Map<string, string>();
  const outName = ad.str("Out") ?? "/dev/null", errName = ad.str("Err") ?? "/dev/null";
  // the job's stdout and stderr are sandbox files like any other (the starter adds them to the output list)
  const std = (p: string | null, name: string, other: string | null) => {
    if (!p || p === other || !p.startsWith(ch.scratch + "/")) return;
    const at = items.length;
    expandTransfer(path.basename(p), p, "", items);
    const r = remaps.get(path.basename(p));
    if (items.length > at) renames.set(items[at]!.dest, r ? path.resolve(dest, r) : path.resolve(dest, name));
  };
  std(ch.stdoutPath, outName, null);
  std(ch.stderrPath, errName, ch.stdoutPath);
  const list = ad.get("TransferOutput") !== undefined ? (ad.str("TransferOutput") ?? "").split(",").map((x) => x.trim()).filter(Boolean) : null;
  const add = (name: string, full: string) => {
    const at = items.length;
    expandTransfer(name, full, "", items);
    for (let i = at; i < items.length; i++) {
      const it = items[i]!;
      if (it.kind !== "missing" && !it.dest.includes("/")) sent.push(it.dest);
      const r = remaps.get(name) ?? remaps.get(it.dest);
      if (r && !it.dest.includes("/")) renames.set(it.dest, path.resolve(dest, r));
    }
  };
  if (list) {
    for (const f of list) add(f, path.resolve(ch.scratch, f));
  } else {
    // new or changed top-level files; directories (links to them included) and dangling links are not
    // listed (file_transfer.cpp FindChangedFiles over Directory::Next, which follows links)
    const after = snapshot(ch.scratch);
    const skip = new Set(["_condor_stdout", "_condor_stderr", ".job.ad", ".machine.ad", ".chirp.config", ".update.ad"]);
    for (const [name, sig] of Object.entries(after)) {
      if (skip.has(name) || sig.startsWith("d:")) continue;
      if (ch.snap[name] === sig) continue;
      add(name, path.join(ch.scratch, name));
    }
  }
  let failure: XferFailure | null = null;
  try {
    failure = sendItems(items, dest, { skipMissing: true, rename: (d) => renames.get(d) });
  } catch (e) {
    failure = { errno: 13, detail: `${(e as Error).message}` };
  }
  return { sent, failure };
}

async function finishJob(db: Database, cfg: Config, ch: Child, log: (s: string) => void): Promise<void> {
  ch.done = true;
  const proc = ch.proc!;
  const exitCode = proc.exitCode;
  const sigName = proc.signalCode;
  const sig = sigName ? (SIGNUM[sigName] ?? 9) : null;
  // nothing of the job may survive it (HTCondor's procd / cgroup does the same)
  killGroup(ch.pid, "SIGKILL");
  killByEnv(`_CONDOR_SCRATCH_DIR=${ch.scratch}`);
  try {
    applyDelayed(true, ch.c, ch.p);
  } catch (e) {
    log("delayed updates failed: " + e);
  }
  const first = getJob(db, ch.c, ch.p);
  const status = first ? jobStatus(db, ch.c, ch.p) : undefined;
  let sent: string[] = [];
  let xferFailure: XferFailure | null = null;
  const runSlot = getRun(db, ch.c, ch.p)?.slot ?? 1;
  const vacated = status === 2 && pendingVacate(db, ch.c, ch.p) !== null;
  // an evicted job keeps nothing of its run (when_to_transfer_output = ON_EXIT, the default)
  if (first && status === 2 && ch.sandbox && !vacated) ({ sent, failure: xferFailure } = transferOutput(first, ch, first.str("Iwd") ?? "/"));
  let final: Ad | null = null;
  let event = "none" as "term" | "abort" | "none" | "hold" | "evict";
  let holdInfo: { code: number; sub: number; reason: string } | null = null;
  const decide = () => {
    db.query("DELETE FROM running WHERE cluster = ? AND proc = ?").run(ch.c, ch.p);
    const ad = getJob(db, ch.c, ch.p);
    if (!ad) return;
    const st = jobStatus(db, ch.c, ch.p);
    releaseRemoteHost(ad);
    const now = nowSec();
    db.query("DELETE FROM meta WHERE k = ?").run(`vacate:${ch.c}.${ch.p}`);
    if (st === 2 && vacated) {
      // baseshadow.cpp evictJob: the vacate is recorded in the ad and the job goes back to idle
      ad.set("LastVacateTime", now);
      setStatus(ad, 1, now);
      putJob(db, ad);
      final = ad;
      event = "evict";
    } else if (st === 2 && xferFailure) {
      // the shadow holds a job whose output transfer failed (baseshadow.cpp: UploadFileError at the EP
      // becomes TransferOutputError, 12, with the errno as subcode); its exit is not recorded
      const f = xferFailure as XferFailure;
      const reason =
        `Transfer output files failure at execution point slot1_${runSlot}@${cfg.host} while sending files to access point ${cfg.host}. Details: ${f.detail}`;
      setStatus(ad, 5, now);
      ad.set("HoldReason", reason);
      ad.set("HoldReasonCode", 12);
      ad.set("HoldReasonSubCode", f.errno);
      ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
      ad.set("NumSystemHolds", (ad.num("NumSystemHolds") ?? 0) + 1);
      holdInfo = { code: 12, sub: f.errno, reason };
      putJob(db, ad);
      final = ad;
      event = "hold";
    } else if (st === 2) {
      if (sig !== null) {
        ad.set("ExitBySignal", true);
        ad.set("ExitSignal", sig);
        ad.delete("ExitCode");
      } else {
        ad.set("ExitBySignal", false);
        ad.set("ExitCode", exitCode ?? 0);
        ad.delete("ExitSignal");
      }
      ad.set("ResidentSetSize", 1000);
      ad.set("JobCurrentFinishTransferOutputDate", now);
      if (ad.has("SUBMIT_Iwd")) ad.set("SpooledOutputFiles", sent.join(","));
      // exit policy
      const onExitHold = ad.get("OnExitHold");
      if (onExitHold && isTrue(evalExpr(onExitHold, ad))) {
        setStatus(ad, 5, now);
        const reason = ad.str("OnExitHoldReason") ?? `The job attribute OnExitHold expression '${canon(onExitHold)}' evaluated to TRUE`;
        ad.set("HoldReason", reason);
        ad.set("HoldReasonCode", 3);
        ad.set("HoldReasonSubCode", ad.num("OnExitHoldSubCode") ?? 0);
        ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
        holdInfo = { code: 3, sub: ad.num("OnExitHoldSubCode") ?? 0, reason };
        putJob(db, ad);
        final = ad;
        event = "hold";
        return;
      }
      let remove = true;
      const maxRetries = ad.num("JobMaxRetries");
      if (maxRetries !== undefined) {
        const ok = sig === null && (exitCode ?? 0) === (ad.num("SuccessExitCode") ?? 0);
        const until = ad.get("RetryUntil");
        const stop = ok || (until !== undefined && isTrue(evalExpr(until, ad)));
        if (!stop && (ad.num("NumJobStarts") ?? 1) <= maxRetries) remove = false;
      } else {
        const oer = ad.get("OnExitRemove");
        if (oer !== undefined) {
          const v = evalExpr(oer, ad);
          if (v.t === "b" && !v.v) remove = false;
        }
      }
      if (!remove) {
        setStatus(ad, 1, now);
        putJob(db, ad);
        final = ad;
        event = "term";
        return;
      }
      setStatus(ad, 4, now);
      ad.set("CompletionDate", now);
      ad.set("NumJobCompletions", (ad.num("NumJobCompletions") ?? 0) + 1);
      ad.set("TerminationPending", true);
      final = ad;
      event = "term";
      const liq = ad.get("LeaveJobInQueue");
      if (liq !== undefined && isTrue(evalExpr(liq, ad))) putJob(db, ad);
      else toHistory(db, ad);
    } else if (st === 3) {
      finalizeRemoved(ad);
      toHistory(db, ad);
      final = ad;
      event = "abort";
    } else {
      putJob(db, ad);
    }
    bumpGen(db);
  };
  // The shadow logs a run's end before the schedd's reaper changes JobStatus (docs/htcondor.md#who-writes-an-event-and-when):
  // what the reaper will decide is worked out and rolled back, the shadow's part (the exit in
  // the ad with JobStatus still 2, then the event) is done, and the reaper commits after a delay.
  let written = "none";
  if (cfg.reaperDelayMs > 0) {
    const dry = new Error("dry run");
    try {
      tx(db, () => {
        decide();
        throw dry;
      });
    } catch (e) {
      if (e !== dry) throw e;
    }
    if (final && (event === "term" || event === "evict")) {
      const f = final as Ad;
      if (event === "term") {
        tx(db, () => {
          const ad = getJob(db, ch.c, ch.p);
          if (!ad || jobStatus(db, ch.c, ch.p) !== 2) return;
          for (const k of ["ExitBySignal", "ExitCode", "ExitSignal"]) {
            const v = f.get(k);
            if (v === undefined) ad.delete(k);
            else ad.setText(k, v);
          }
          ad.set("TerminationPending", true);
          // the schedd's own status stays 2 until the reaper: a JobStatus the job chirped into its ad
          // must not become it, or the reaper below would take the job for one that is not running
          putJob(db, ad, 2);
          bumpGen(db);
        });
      }
      writeEvent(f, event);
      written = event;
      await Bun.sleep(cfg.reaperDelayMs);
    }
    final = null;
    event = "none";
    holdInfo = null;
  }
  tx(db, decide);
  if (final && event !== written) writeEvent(final as Ad, event);
  try {
    fs.rmSync(ch.dir, { recursive: true, force: true });
  } catch { /* ignore */ }
  log(`finished ${ch.key} exit=${exitCode} sig=${sigName} status=${status}`);

  function writeEvent(f: Ad, event: string): void {
    if (event === "term") {
      const body = sig !== null
        ? `\t(0) Abnormal termination (signal ${sig})\n\t(0) No core file\n`
        : `\t(1) Normal termination (return value ${exitCode ?? 0})\n`;
      ulog(f, 5, "Job terminated.", body + usageBlock(f));
    } else if (event === "evict") {
      ulog(f, 4, evictedText(f), evictedBody(f));
    } else if (event === "abort") {
      ulog(f, 9, "Job was aborted.", `\t${f.str("RemoveReason") ?? "via condor_rm"}\n`);
    } else if (event === "hold" && holdInfo) {
      const h = holdInfo as { code: number; sub: number; reason: string };
      ulog(f, 12, "Job was held.", `\t${h.reason}\n\tCode ${h.code} Subcode ${h.sub}\n`);
    }
  }
}

function canon(text: string): string {
  const n = tryParse(text);
  return n ? unparse(n) : text;
}

/** PeriodicHold / PeriodicRemove / PeriodicRelease (docs/htcondor.md#submit-file-rules), checked every periodicIntervalS. */
function periodic(db: Database, cfg: Config, children: Map<string, Child>): void {
  void cfg;
  void children;
  const holds: Ad[] = [], removes: Ad[] = [], releases: Ad[] = [];
  tx(db, () => {
    const rows = db.query("SELECT status, ad FROM jobs WHERE status IN (1, 2, 5) AND (ad LIKE '%\"Periodic%' OR ad LIKE '%AllowedJobDuration%')").all() as {
      status: number;
      ad: string;
    }[];
    for (const r of rows) {
      const ad = rowAd(r);
      const st = r.status;
      const now = nowSec();
      const ph = ad.get("PeriodicHold"), pr = ad.get("PeriodicRemove"), pl = ad.get("PeriodicRelease");
      const ajd = ad.num("AllowedJobDuration");
      if ((st === 1 || st === 2) && ph && isTrue(evalExpr(ph, ad))) {
        setStatus(ad, 5, now);
        ad.set("HoldReason", ad.str("PeriodicHoldReason") ?? `The job attribute PeriodicHold expression '${canon(ph)}' evaluated to TRUE`);
        ad.set("HoldReasonCode", 3);
        ad.set("HoldReasonSubCode", ad.num("PeriodicHoldSubCode") ?? 0);
        ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
        putJob(db, ad);
        holds.push(ad);
      } else if (st === 2 && ajd !== undefined && now - (ad.num("JobCurrentStartDate") ?? now) > ajd) {
        setStatus(ad, 5, now);
        ad.set("HoldReason", `The job exceeded allowed job duration of ${ajd} seconds`);
        ad.set("HoldReasonCode", 46);
        ad.set("HoldReasonSubCode", 0);
        putJob(db, ad);
        holds.push(ad);
      } else if (pr && isTrue(evalExpr(pr, ad))) {
        ad.set("RemoveReason", ad.str("PeriodicRemoveReason") ?? `The job attribute PeriodicRemove expression '${canon(pr)}' evaluated to TRUE`);
        setStatus(ad, 3, now);
        if (st === 2) putJob(db, ad);
        else {
          finalizeRemoved(ad);
          toHistory(db, ad);
        }
        removes.push(ad);
      } else if (st === 5 && pl && isTrue(evalExpr(pl, ad))) {
        for (
          const [a, b] of [["HoldReason", "LastHoldReason"], ["HoldReasonCode", "LastHoldReasonCode"], ["HoldReasonSubCode", "LastHoldReasonSubCode"]] as const
        ) {
          const v = ad.get(a);
          if (v !== undefined) {
            ad.setText(b, v);
            ad.delete(a);
          }
        }
        ad.set("ReleaseReason", "The job attribute PeriodicRelease expression evaluated to TRUE");
        setStatus(ad, 1, now);
        putJob(db, ad);
        releases.push(ad);
      }
    }
    if (holds.length + removes.length + releases.length) bumpGen(db);
  });
  for (const a of holds) ulog(a, 12, "Job was held.", `\t${a.str("HoldReason")}\n\tCode ${a.num("HoldReasonCode")} Subcode ${a.num("HoldReasonSubCode")}\n`);
  for (const a of removes) if (a.num("LastJobStatus") !== 2) ulog(a, 9, "Job was aborted.", `\t${a.str("RemoveReason")}\n`);
  for (const a of releases) ulog(a, 13, "Job was released.", `\t${a.str("ReleaseReason")}\n`);
  // running jobs just held/removed are killed by the next pass (status != 2)
}

void deleteJob;
void scheddAddr;
