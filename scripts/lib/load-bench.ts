/**
 * The benchmark's load rows (`bun scripts/bench.ts --only load`; docs/performance.md#load-test):
 * interLink's load on one sidecar, on minicondor, from the creates to the deletes, checked as it
 * goes.
 *
 *   bun scripts/bench.ts --only load [--load-pods 200] [--load-interval 5] [--load-duration 120]
 *                        [--load-ping-interval 30] [--load-max-sleep 20] [--load-delete-running 10]
 *                        [--load-concurrency N] [--load-slots N] [--quick]
 *
 * `--quick` is a small run to check the script itself: 10 pods of at most 3 s, each polled every
 * 1 s, a ping every 2 s.
 *
 * Starts the sidecar (the binary under test, as every benchmark) on a minicondor machine big
 * enough to run every pod at once (`--load-slots` CPUs, default one per pod), sends `--load-pods`
 * creates at once (each pod: one container running `sleep S; exit E` with varied S, and E the
 * pod's own exit code: pod i exits with i mod 256, so that up to 256 pods no two share one), then
 * polls as interLink does: one pod per `/status` call, every pod every `--load-interval` seconds,
 * plus a ping every `--load-ping-interval` seconds. A pod seen terminated is deleted a moment
 * later, and polled once more to check it is gone. One pod in `--load-delete-running` (default
 * 10, 0: none) runs `sleep 3600` instead and is deleted a moment after it is seen running, as when
 * a user deletes a live pod. The run ends when every pod is gone, or after `--load-duration`
 * seconds of polling.
 *
 * minicondor's tools, and the schedd and jobs they start, run at the driver's `--emulator-nice`
 * (default 10): 200 jobs at once are hundreds of Bun processes on the sidecar's cores
 * (docs/performance.md#the-emulator-runs-niced).
 *
 * Rows that must hold (met: yes or NO): zero HTTP errors; every answer holds the pod asked about
 * alone (one container status), or nothing: the sidecar leaves a pod out while its job moves from
 * the queue to the history, until the refresher has recorded its end
 * (docs/status.md#how-often-htcondor-is-asked), so a pod left out must next be reported
 * terminated, and is never left out once seen terminated; no pod reported after its delete; every
 * pod terminated with its own exit code, and a terminated state never changes; while polling, at
 * most one condor_q and one condor_history per refresh period (StatusCacheSeconds, 2 s), whatever
 * the load; every pod deleted while running was seen running, never terminated before its delete,
 * and its job left the queue as removed (JobStatus 3 in condor_history); each InterLinkPodUID
 * exactly once in `condor_q -allusers` + `condor_history`; the sidecar stops cleanly. Then rows
 * reported only: the latencies, the creates' time and the condor processes.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type BenchRow, type BenchRun, rowsBench, usageError } from "./bench-kit.ts";
import {
  cleanupHome,
  type CondorJob,
  condorJobs,
  createHome,
  emulatorBin,
  type Flavour,
  fmtMs,
  type Json,
  pct,
  podUid,
  pool,
  readCalls,
  type Reply,
  type Running,
  shPod,
  sorted,
  startSidecar,
} from "./kit.ts";

// ------------------------------------------------------------------------------------- options

export interface LoadOptions {
  /** A scratch folder (the driver's root). */
  root: string;
  flavour: Flavour;
  binary: string;
  pods: number;
  intervalMs: number;
  durationMs: number;
  pingIntervalMs: number;
  maxSleep: number;
  /** Every n-th pod is deleted while it runs (0: none). */
  deleteRunningEvery: number;
  concurrency: number;
  slots: number;
  emulatorNice: number;
  say: (msg: string) => void;
  /** Runs at the end of the benchmark, and on SIGINT or SIGTERM (BenchRun.defer). */
  defer: (fn: () => Promise<void> | void) => void;
}

/** The sidecar's refresh period: the default StatusCacheSeconds (the load rows write none). */
const REFRESH_SECONDS = 2;

// ------------------------------------------------------------------------------------- the pods

interface Pod {
  index: number;
  req: Json;
  uid: string;
  name: string;
  sleepS: number;
  expectedExit: number;
  /** Runs until deleted: deleted a moment after it is seen running. */
  deleteWhileRunning: boolean;
  jid?: string;
  /** Every container state seen (waiting, running, terminated). */
  seen: Set<string>;
  exitCode?: number;
  terminatedAt?: number;
  deleteAt?: number;
  deleted: boolean;
  gone: boolean;
  polls: number;
  /** When the answers began to leave the pod out (undefined: the last answer had it). */
  leftOutSince?: number;
}

/** Runs the load once and returns its rows: the checks (met or not), then what was measured. */
export async function loadRows(o: LoadOptions): Promise<BenchRow[]> {
  const opts = o;
  const t0 = performance.now();
  const elapsed = () => ((performance.now() - t0) / 1000).toFixed(1);
  const say = (msg: string) => o.say(`load ${elapsed().padStart(6)} s: ${msg}`);

  const runId = Math.floor(Math.random() * 0xffffffff);
  const pods: Pod[] = Array.from({ length: opts.pods }, (_, i) => {
    const uid = podUid(runId);
    const name = `load-${i}`;
    const deleteWhileRunning = opts.deleteRunningEvery > 0 && i % opts.deleteRunningEvery === opts.deleteRunningEvery - 1;
    // Varied lengths (1..max-sleep s); each pod its own exit code (0 for the first), so that a pod
    // reported with another one's end is caught.
    const sleepS = deleteWhileRunning ? 3600 : 1 + ((i * 7) % opts.maxSleep);
    const expectedExit = i % 256;
    return {
      index: i,
      req: shPod(name, uid, `sleep ${sleepS}; exit ${expectedExit}`, "load"),
      uid,
      name,
      sleepS,
      expectedExit,
      deleteWhileRunning,
      seen: new Set(),
      deleted: false,
      gone: false,
      polls: 0,
    };
  });

  // ------------------------------------------------------------------------------------- findings

  const counters = { creates: 0, statusCalls: 0, deletes: 0, pings: 0 };
  const httpErrors: string[] = [];
  const lost: string[] = [];
  /** Pods left out and then reported not terminated: left out while the job was still queued. */
  const resurfaced: string[] = [];
  const leftOut = { answers: 0, pods: new Set<string>(), longestMs: 0 };
  const badShape: string[] = [];
  const afterDelete: string[] = [];
  const changedTerminal: string[] = [];
  const statusLatency: number[] = [];
  const pingLatency: number[] = [];

  function note(list: string[], msg: string): void {
    list.push(`${elapsed()} s: ${msg}`);
  }

  function httpOk(what: string, r: Reply | Error): r is Reply {
    if (r instanceof Error) {
      note(httpErrors, `${what}: ${r.message}`);
      return false;
    }
    if (r.status !== 200) {
      note(httpErrors, `${what}: HTTP ${r.status} ${r.body.trim().slice(0, 200)}`);
      return false;
    }
    return true;
  }

  const asError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)));

  // ------------------------------------------------------------------------------------- polling

  let sc: Running | undefined;
  let stopPolling = false;

  async function pollOnce(p: Pod): Promise<void> {
    const client = sc!.client;
    const wasDeleted = p.deleted;
    const r = await client.status(p.req.pod).catch(asError);
    counters.statusCalls++;
    p.polls++;
    if (!httpOk(`status ${p.name}`, r)) return;
    statusLatency.push(r.ms);
    let list: Json[];
    try {
      list = JSON.parse(r.body) as Json[];
      if (!Array.isArray(list)) throw new Error("not an array");
    } catch (err) {
      note(httpErrors, `status ${p.name}: unparsable answer (${asError(err).message}): ${r.body.slice(0, 200)}`);
      return;
    }
    const mine = list.filter((s) => s?.UID === p.uid);
    if (wasDeleted) {
      if (mine.length > 0) note(afterDelete, `${p.name} still reported after its delete`);
      p.gone = true;
      return;
    }
    if (list.length === 0) {
      // Left out: normal while the job moves from the queue to the history, never once it ended.
      if (p.exitCode !== undefined) note(lost, `${p.name}: left out after it was reported terminated`);
      leftOut.answers++;
      leftOut.pods.add(p.name);
      p.leftOutSince ??= Date.now();
      return;
    }
    if (mine.length !== 1 || list.length !== 1) {
      note(lost, `${p.name}: ${mine.length} entries for the pod in an answer of ${list.length}`);
      return;
    }
    const st = mine[0];
    const wasLeftOut = p.leftOutSince;
    if (wasLeftOut !== undefined) {
      leftOut.longestMs = Math.max(leftOut.longestMs, Date.now() - wasLeftOut);
      p.leftOutSince = undefined;
      const after = Object.keys(st.containers?.[0]?.state ?? {})[0] ?? "none";
      if (after !== "terminated") note(resurfaced, `${p.name}: left out, then reported ${after}`);
    }
    const containers: Json[] = st.containers ?? [];
    const inits: Json[] = st.initContainers ?? [];
    if (containers.length !== 1 || inits.length !== 0 || containers[0]?.name !== "main") {
      note(badShape, `${p.name}: ${containers.length} container and ${inits.length} init container statuses`);
      return;
    }
    const state = containers[0].state ?? {};
    const kind = Object.keys(state)[0] ?? "none";
    if (p.exitCode !== undefined) {
      // Terminal states are stored and must never change.
      const code = state.terminated?.exitCode;
      if (kind !== "terminated" || code !== p.exitCode) note(changedTerminal, `${p.name}: terminated with ${p.exitCode}, then ${kind} ${code ?? ""}`);
      return;
    }
    p.seen.add(kind);
    if (kind === "running" && p.deleteWhileRunning && p.deleteAt === undefined) {
      // A user deletes the live pod a little later.
      p.deleteAt = Date.now() + Math.random() * opts.intervalMs;
    }
    if (kind === "terminated") {
      p.exitCode = Number(state.terminated.exitCode);
      p.terminatedAt = Date.now();
      // interLink deletes a finished pod a little later (the user or a controller does).
      p.deleteAt = p.terminatedAt + Math.random() * opts.intervalMs;
    }
  }

  async function deletePod(p: Pod): Promise<void> {
    const r = await sc!.client.remove(p.req.pod).catch(asError);
    counters.deletes++;
    p.deleted = true;
    httpOk(`delete ${p.name}`, r);
  }

  /** One pod as interLink sees it: polled every interval until deleted and seen gone. */
  async function podLoop(p: Pod, offsetMs: number): Promise<void> {
    let next = performance.now() + offsetMs;
    while (!stopPolling && !p.gone) {
      while (!stopPolling && performance.now() < next) await Bun.sleep(Math.min(250, next - performance.now()));
      if (stopPolling) return;
      if (p.deleteAt !== undefined && !p.deleted && Date.now() >= p.deleteAt) await deletePod(p);
      await pollOnce(p);
      next += opts.intervalMs;
      // A finished pod's delete comes between two polls.
      if (p.deleteAt !== undefined && !p.deleted) next = Math.min(next, performance.now() + Math.max(0, p.deleteAt - Date.now()));
    }
  }

  async function pingLoop(): Promise<void> {
    let next = performance.now();
    while (!stopPolling) {
      const r = await sc!.client.ping().catch(asError);
      counters.pings++;
      if (httpOk("ping", r)) {
        pingLatency.push(r.ms);
        try {
          const body = JSON.parse(r.body) as { status?: unknown };
          if (typeof body.status !== "string") note(httpErrors, `ping: no status in ${r.body.slice(0, 200)}`);
        } catch {
          note(httpErrors, `ping: unparsable answer ${r.body.slice(0, 200)}`);
        }
      }
      next += opts.pingIntervalMs;
      while (!stopPolling && performance.now() < next) await Bun.sleep(Math.min(250, next - performance.now()));
    }
  }

  // ------------------------------------------------------------------------------------- checks

  const rows: BenchRow[] = [];
  /** A row that must hold; what went wrong, up to 10 lines, is its value. */
  function check(name: string, ok: boolean, details: string[] = []): void {
    const shown = ok ? [] : [...details.slice(0, 10), ...(details.length > 10 ? [`… and ${details.length - 10} more`] : [])];
    rows.push({ row: name, value: ok ? "ok" : shown.join("; ") || "failed", target: "holds", met: ok });
    for (const d of shown) say(`FAIL ${name}: ${d}`);
  }
  /** A row reported only. */
  function report(name: string, value: string): void {
    rows.push({ row: name, value, target: "reported" });
  }

  // ------------------------------------------------------------------------------------- main

  const dir = mkdtempSync(join(o.root, "load-"));
  // Every pod asks for the default 1 CPU and 1 GiB: by default a machine that runs all of them at once.
  const home = createHome({ cpus: opts.slots, memory: opts.slots * 1024 + 1024 }, dir);
  let cleanedUp = false;

  async function cleanup(): Promise<number | null> {
    if (cleanedUp) return null;
    cleanedUp = true;
    stopPolling = true;
    const code = sc ? await sc.stop(10_000).catch(() => null) : null;
    cleanupHome(home);
    return code;
  }
  o.defer(async () => {
    await cleanup();
  });

  try {
    say(`starting the sidecar (${o.flavour}) on minicondor ${home}`);
    sc = await startSidecar({ flavour: o.flavour, binary: o.binary, dir, home, startTimeoutMs: 60_000, condorBin: emulatorBin(dir, o.emulatorNice) });
    say(`sidecar up on port ${sc.port} after ${fmtMs(sc.startupMs)}`);

    // 1. every create at once.
    say(`${opts.pods} creates, ${opts.concurrency} at a time`);
    const createStart = performance.now();
    const creates = await pool(pods, opts.concurrency, async (p) => {
      const r = await sc!.client.create(p.req).catch(asError);
      counters.creates++;
      if (!httpOk(`create ${p.name}`, r)) return undefined;
      try {
        const out = JSON.parse(r.body) as { PodUID?: string; PodJID?: string };
        if (out.PodUID !== p.uid || !/^\d+\.\d+$/.test(out.PodJID ?? "")) note(httpErrors, `create ${p.name}: unexpected answer ${r.body.slice(0, 200)}`);
        p.jid = out.PodJID;
      } catch {
        note(httpErrors, `create ${p.name}: unparsable answer ${r.body.slice(0, 200)}`);
      }
      return r.ms;
    });
    const createMs = performance.now() - createStart;
    const createLat = sorted(creates.filter((x): x is number => x !== undefined));
    say(`creates done in ${fmtMs(createMs)} (p50 ${fmtMs(pct(createLat, 50))}, p99 ${fmtMs(pct(createLat, 99))})`);
    const jids = pods.map((p) => p.jid).filter((j): j is string => j !== undefined);
    check(
      `${opts.pods} concurrent creates answered 200 with distinct job ids`,
      jids.length === opts.pods && new Set(jids).size === jids.length,
      [`${jids.length} job ids, ${new Set(jids).size} distinct`],
    );

    // 2. interLink's polling until every pod is gone, or the duration is over.
    say(`polling: every pod every ${opts.intervalMs / 1000} s, a ping every ${opts.pingIntervalMs / 1000} s, for at most ${opts.durationMs / 1000} s`);
    const pollStart = performance.now();
    const callsAtPollStart = readCalls(home).lines;
    const live = pods.filter((p) => p.jid !== undefined);
    const loops = [
      ...live.map((p, i) => podLoop(p, (i * opts.intervalMs) / live.length)),
      pingLoop(),
    ];
    const progress = setInterval(() => {
      const term = pods.filter((p) => p.exitCode !== undefined).length;
      const gone = pods.filter((p) => p.gone).length;
      say(
        `${counters.statusCalls} status calls, ${term} pods terminated, ${gone} deleted and gone, ${
          httpErrors.length + lost.length
        } errors, ${leftOut.answers} answers left a pod out`,
      );
    }, 10_000);
    const allGone = (async () => {
      while (!stopPolling && !live.every((p) => p.gone)) await Bun.sleep(100);
    })();
    await Promise.race([allGone, Bun.sleep(opts.durationMs)]);
    stopPolling = true;
    clearInterval(progress);
    await Promise.all(loops);
    const pollMs = performance.now() - pollStart;
    const pollCalls = readCalls(home, callsAtPollStart).calls;
    say(`polling stopped after ${fmtMs(pollMs)}`);

    // 3. the checks.
    const sl = sorted(statusLatency);
    const requests = counters.creates + counters.statusCalls + counters.deletes + counters.pings;
    check(
      `zero HTTP errors (${requests} requests: ${counters.creates} creates, ${counters.statusCalls} status, ${counters.deletes} deletes, ${counters.pings} pings)`,
      httpErrors.length === 0,
      httpErrors,
    );
    check("every answer holds the pod asked about alone, or nothing; nothing only before the pod is seen terminated", lost.length === 0, lost);
    const condorQFailed = readFileSync(sc.logPath, "utf8").includes("condor_q failed");
    check(
      `a pod left out of an answer is next reported terminated (${leftOut.answers} answers left ${leftOut.pods.size} pods out while their jobs moved from the queue to the history; longest ${
        fmtMs(leftOut.longestMs)
      })`,
      resurfaced.length === 0 || condorQFailed,
      resurfaced,
    );
    if (resurfaced.length > 0 && condorQFailed) {
      report("pods left out while condor_q failed (as the sidecar does then: not a failure)", String(resurfaced.length));
    }
    check("every status answer has exactly one container status", badShape.length === 0, badShape);
    check("no pod is reported after its delete", afterDelete.length === 0, afterDelete);
    const finishing = pods.filter((p) => !p.deleteWhileRunning);
    const wrongExit = finishing
      .filter((p) => p.exitCode !== p.expectedExit)
      .map((p) =>
        `${p.name} (job ${p.jid ?? "none"}, sleep ${p.sleepS}): ${
          p.exitCode === undefined ? `never terminated (seen: ${[...p.seen].join(", ") || "nothing"})` : `exit code ${p.exitCode}`
        }, expected ${p.expectedExit}`
      );
    check(
      `every finishing pod reached terminated with its own exit code (${finishing.length} pods, ${
        new Set(finishing.map((p) => p.expectedExit)).size
      } distinct codes)`,
      wrongExit.length === 0,
      wrongExit,
    );
    check("a terminated state never changes", changedTerminal.length === 0, changedTerminal);
    // The refresher runs one condor_q per period, start to start, and after it at most one
    // condor_history for the jobs that left; a slow machine makes fewer, never more. One period
    // more for the refresh under way when polling began, one for a ping's own condor_q.
    const periods = pollMs / 1000 / REFRESH_SECONDS;
    const pollQ = pollCalls.filter((c) => c.tool === "condor_q").length;
    const pollH = pollCalls.filter((c) => c.tool === "condor_history").length;
    const perPeriod = (pollQ + pollH) / periods;
    const bound = 2 * (Math.ceil(periods) + 1) + 1;
    check(
      `while polling, at most one condor_q and one condor_history per ${REFRESH_SECONDS} s refresh period (${pollQ} condor_q + ${pollH} condor_history in ${
        fmtMs(pollMs)
      }: ${perPeriod.toFixed(2)} per period)`,
      pollQ + pollH <= bound,
      [`${pollQ + pollH} processes, at most ${bound} allowed`],
    );
    const notGone = pods.filter((p) => !p.gone).map((p) => `${p.name}: ${p.deleted ? "deleted, not polled after" : "not deleted"}`);
    check("every pod was deleted and then no longer reported", notGone.length === 0, notGone);

    // The jobs of pods deleted while running: removed (JobStatus 3), and out of the queue once the
    // schedd has killed them (its next pass), so wait a little for that.
    const runningDeleted = pods.filter((p) => p.deleteWhileRunning);
    let jobs: CondorJob[] = [];
    let condorError = "";
    const removedProblems = (js: CondorJob[]) =>
      runningDeleted.flatMap((p) => {
        const mine = js.filter((j) => j.uid === p.uid);
        if (!p.seen.has("running")) return [`${p.name}: never seen running (seen: ${[...p.seen].join(", ") || "nothing"})`];
        if (p.exitCode !== undefined) return [`${p.name}: reported terminated with ${p.exitCode} before its delete`];
        if (!p.deleted) return [`${p.name}: not deleted`];
        if (mine.some((j) => j.inQueue)) {
          return [`${p.name}: job ${mine.filter((j) => j.inQueue).map((j) => `${j.id} (JobStatus ${j.status})`).join(", ")} still in the queue`];
        }
        if (mine.length !== 1 || mine[0]!.status !== 3) {
          return [
            `${p.name}: ${mine.map((j) => `job ${j.id} JobStatus ${j.status}`).join(", ") || "no job"} in the history, expected one removed job (JobStatus 3)`,
          ];
        }
        return [];
      });
    const leaveBy = performance.now() + 30_000;
    for (;;) {
      try {
        jobs = await condorJobs(home);
        condorError = "";
      } catch (err) {
        condorError = asError(err).message;
      }
      if ((!condorError && removedProblems(jobs).length === 0) || performance.now() > leaveBy) break;
      await Bun.sleep(1000);
    }
    if (runningDeleted.length > 0) {
      check(
        `${runningDeleted.length} pods deleted while running: seen running, deleted, and their jobs left the queue as removed`,
        !condorError && removedProblems(jobs).length === 0,
        [...(condorError ? [condorError] : []), ...removedProblems(jobs)],
      );
    }
    const perUid = new Map<string, number>();
    for (const j of jobs) perUid.set(j.uid, (perUid.get(j.uid) ?? 0) + 1);
    const dup = pods.filter((p) => (perUid.get(p.uid) ?? 0) !== 1).map((p) => `${p.name} ${p.uid}: ${perUid.get(p.uid) ?? 0} jobs`);
    const foreign = [...perUid.keys()].filter((u) => !pods.some((p) => p.uid === u)).map((u) => `unknown InterLinkPodUID ${u}`);
    check(
      "zero duplicated jobs: each pod's InterLinkPodUID on exactly one job in condor_q -allusers + condor_history",
      !condorError && dup.length === 0 && foreign.length === 0,
      [
        ...(condorError ? [condorError] : []),
        ...dup,
        ...foreign,
      ],
    );

    const calls = readCalls(home).calls;
    const submits = calls.filter((c) => c.tool === "condor_submit").length;
    const queries = calls.filter((c) => c.tool === "condor_q").length;
    const histories = calls.filter((c) => c.tool === "condor_history").length;
    const alive = sc.alive();
    const logPath = sc.logPath;
    const code = await cleanup();
    const warnings = readFileSync(logPath, "utf8")
      .split("\n")
      .filter((l) => /"level":"(warn|error)"/.test(l))
      .map((l) => (JSON.parse(l) as { msg?: string }).msg ?? l);
    const byMsg = new Map<string, number>();
    for (const w of warnings) byMsg.set(w, (byMsg.get(w) ?? 0) + 1);
    check("the sidecar ran throughout and stopped cleanly on SIGTERM", alive && code === 0, [`alive at the end: ${alive}, exit code ${code}`]);

    report("status: calls; p50, p99, max", `${counters.statusCalls}; ${fmtMs(pct(sl, 50))}, ${fmtMs(pct(sl, 99))}, ${fmtMs(sl.at(-1))}`);
    report("pings: count; p99", `${counters.pings}; ${fmtMs(pct(sorted(pingLatency), 99))}`);
    report(`${opts.pods} creates: time until all answered`, `${fmtMs(createMs)} (p50 ${fmtMs(pct(createLat, 50))}, p99 ${fmtMs(pct(createLat, 99))})`);
    report(
      "condor processes",
      `${submits} condor_submit, ${queries} condor_q, ${histories} condor_history in all; while polling ${
        perPeriod.toFixed(2)
      } condor_q + condor_history per ${REFRESH_SECONDS} s refresh period (${((pollQ + pollH) / (pollMs / 60_000)).toFixed(1)} per minute), polling ${
        fmtMs(pollMs)
      }`,
    );
    report("pods seen running before they terminated", `${pods.filter((p) => p.seen.has("running")).length} of ${pods.length}`);
    if (byMsg.size) report("sidecar warnings (not failures)", [...byMsg].map(([m, n]) => `${n}× ${m}`).join("; "));
  } catch (err) {
    check("the load rows ran", false, [asError(err).stack ?? asError(err).message]);
    await cleanup();
  }
  return rows;
}

/** A flag's number, which must be positive unless `zero` allows 0. */
function positive(b: BenchRun, name: string, dflt: number, zero = false): number {
  const n = b.number(name, dflt);
  if (n === 0 && !zero) usageError(`--${name}: 0 is not a positive number`);
  return n;
}

export const loadBench = rowsBench(
  "load",
  {
    "load-pods": { type: "string" },
    "load-interval": { type: "string" },
    "load-duration": { type: "string" },
    "load-ping-interval": { type: "string" },
    "load-max-sleep": { type: "string" },
    "load-delete-running": { type: "string" },
    "load-concurrency": { type: "string" },
    "load-slots": { type: "string" },
  },
  (b) => {
    const pods = Math.floor(positive(b, "load-pods", b.quick ? 10 : 200));
    const o: LoadOptions = {
      root: b.root,
      flavour: "binary",
      binary: b.binary,
      pods,
      intervalMs: positive(b, "load-interval", b.quick ? 1 : 5) * 1000,
      durationMs: positive(b, "load-duration", 120) * 1000,
      pingIntervalMs: positive(b, "load-ping-interval", b.quick ? 2 : 30) * 1000,
      maxSleep: Math.max(1, Math.floor(positive(b, "load-max-sleep", b.quick ? 3 : 20))),
      deleteRunningEvery: Math.floor(positive(b, "load-delete-running", 10, true)),
      concurrency: Math.floor(positive(b, "load-concurrency", pods)),
      slots: Math.floor(positive(b, "load-slots", pods)),
      emulatorNice: b.emulatorNice,
      say: b.say,
      defer: (fn) => b.defer(fn),
    };
    return {
      title: `Load (docs/performance.md#load-test): ${o.pods} creates at once, each pod polled every ${
        o.intervalMs / 1000
      } s and deleted once it ended, a ping every ${o.pingIntervalMs / 1000} s; on a minicondor home and a sidecar of their own`,
      run: () => loadRows(o),
    };
  },
);
