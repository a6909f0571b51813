/**
 * The view of this sidecar's jobs in the schedd's queue (docs/status.md#what-drives-status).
 * Three kinds of query keep it:
 * - the full one, one condor_q of every followed job: at start, when the event log follower finds
 *   a gap it cannot explain (`kick`), and every ReconcileMinutes (the reconciler);
 * - the targeted one (`refreshIds`), one condor_q of exactly the jobs whose events the follower
 *   read, merged into the view;
 * - the watch (condor/watch.ts), while some followed job has no readable shared event log (spooled jobs,
 *   jobs queued before the upgrade, a log in another format): every second, what changed since
 *   the last answer, and now and then a count of the live jobs, merged into the view.
 * After each, `afterRefresh` does what the new ads ask for (jobs that left, holds, spooled
 * output). A status request reads the latest view and never waits on a condor tool, except for
 * the first refresh after start. With nothing to follow the loop sleeps, and a new job wakes it.
 */
import { adCount, type JsonAdSlices, parseAd, sameAd, sliceJobNumber } from "../condor/parse.ts";
import { type JobAd } from "../core/classad.ts";
import type { Condor } from "../condor/tools.ts";
import { createWatch, type Watch, WATCH_MS } from "../condor/watch.ts";
import type { Streak } from "../core/health.ts";
import { sidecarJobs } from "../core/watch.ts";
import { stateAttrName } from "../core/types.ts";
import type { LiveJob, Store } from "../store/store.ts";
import { createQueueHealth } from "./queue-health.ts";
import { errorText } from "../core/errors.ts";

/** Attributes the status path asks condor_q/condor_history for (never the whole ad). */
const BASE_ATTRS = [
  "ClusterId",
  "ProcId",
  "JobStatus",
  "InterLinkPodUID",
  "InterLinkSidecarId",
  // Which job the id names now (core/job-identity.ts): a schedd hands ids out again.
  "GlobalJobId",
  "QDate",
  "HoldReasonCode",
  "HoldReasonSubCode",
  "HoldReason",
  "ExitCode",
  "ExitBySignal",
  "ExitSignal",
  "RemoveReason",
  "NumJobStarts",
  "EnteredCurrentStatus",
  "TerminationPending",
  // A memory kill: the peak memory the starter measured, KiB, and the request, MiB
  // (docs/status.md#memory-kills).
  "ResidentSetSize",
  "RequestMemory",
] as const;

/** Ads handled between two yields to the event loop: a refresh of thousands must not hold up status calls. */
const ADS_PER_SLICE = 500;

/**
 * This sidecar's jobs in the queue, by job id (`cluster.proc`); `at` is when the full condor_q
 * started, `checked` when a targeted one asked about a job since. Ads are keyed by the job id
 * alone: it is the one thing a job cannot rewrite.
 */
export interface Snapshot {
  at: number;
  ads: Map<string, JobAd>;
  checked?: Map<string, number>;
}

/** When the view last asked the schedd about the job (its ad in `ads` is that old). */
export const askedAt = (snap: Snapshot, id: string): number => snap.checked?.get(id) ?? snap.at;

/** Status has the schedd probed after this many StatusCacheSeconds without a condor_q (queue.ts checkAlive). */
const ALIVE_PERIODS = 3;

/** Job ids in one targeted condor_q at most (its constraint names each). */
const TARGETED_BATCH_MAX = 1000;

/** A timer the refresher schedules itself with (the real one, or the tests' hand-moved clock). */
export type SetTimer = (fn: () => void, ms: number) => () => void;

export const realTimer: SetTimer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  (t as { unref?: () => void }).unref?.();
  return () => clearTimeout(t);
};

export interface QueueView {
  /** The latest view, or undefined before the first refresh. */
  current(): Snapshot | undefined;
  /** Whether the last refresh failed: the view is stale, and status leaves followed pods out. */
  failing(): boolean;
  /** The latest view, after waiting for the first refresh if none has run since start. */
  ready(): Promise<Snapshot | undefined>;
  /**
   * Starts the refresher if it sleeps (a job was recorded or adopted). With the job's event log
   * (undefined: its own job.log), the refresher polls sooner only when that job is polled; a
   * create never makes it read every followed job.
   */
  wake(job?: { eventLog: string | undefined }): void;
  /** Whether the job is one this sidecar follows (events for any other id are dropped unread). */
  follows(id: string): boolean;
  /** Runs a refresh that starts now (after one that is running) and waits for it (logs and tests; never status). */
  refreshNow(): Promise<void>;
  /** A full refresh as soon as possible (a gap in the event log), after which the loop goes on at its period. */
  kick(): void;
  /**
   * One condor_q of exactly these followed jobs, merged into the view, then `afterRefresh` for
   * them. False when it failed (the view is then stale, and the caller tries again later).
   */
  refreshIds(ids: readonly string[]): Promise<boolean>;
  /** Asks about a job again at `atMs` (a hold's grace ending, a job between queue and history). */
  recheck(id: string, atMs: number): void;
  /** The jobs whose recheck is due, taken off the list. */
  takeDue(nowMs: number): string[];
  /** Set by the follower: whether a job writing to this event log must be polled (undefined: its own job.log). */
  polled: (eventLog: string | undefined) => boolean;
  /** Called by the follower when a log became polled (another format, replaced or gone): its jobs are polled from now on. */
  pollingChanged(): void;
  /** The ping's own condor_q while nothing is followed (the refresher's otherwise). */
  probe(): Promise<void>;
  /** Whether the refresher runs (something is followed). */
  running(): boolean;
  /** Whether condor_q answered or failed within the last `ms` (the ping then needs no probe of its own). */
  heardWithin(ms: number): boolean;
  /**
   * Called by status: when no condor_q has been heard for a while (the log named no job, and the
   * reconciler is minutes away), one probe in the background (never awaited), so that a schedd
   * that went down makes the answers stale within seconds, as the refresher did.
   */
  checkAlive(): void;
  /** When the schedd last answered a condor_q of the view (full, targeted or the probe); undefined before the first. */
  lastAnswer(): number | undefined;
  /** The attributes a job's status needs: the base ones and a state attribute per container slot. */
  attributes(): string[];
  /** Counts a new pod's containers into the attributes asked for. */
  noteWidth(containers: readonly { init: boolean }[]): void;
  /** condor_q's failure streak. */
  readonly schedd: Streak;
  /** Set by the status service: what a fresh view asks for (finalizing, removals, fetches); `live` by job id. */
  afterRefresh?: (snapshot: Snapshot, live: ReadonlyMap<string, LiveJob>) => Promise<void>;
  /** Stops the refresher (shutdown); resolves when a refresh in flight has ended. */
  stop(): Promise<void>;
}

interface QueueDeps {
  store: Store;
  condor: Condor;
  /** This sidecar's id (InterLinkSidecarId): the watch's count and history search select by it. */
  sidecarId: string;
  config: { StatusCacheSeconds: number; ReconcileMinutes: number };
  now: () => number;
  log: { warn(msg: string, fields?: Record<string, unknown>): void; info(msg: string, fields?: Record<string, unknown>): void };
  timer: SetTimer;
  /** Whether the sidecar was starved of CPU since a time (service/starvation.ts); never, without it. */
  starved?: (since: number) => boolean;
}

/** The jobs the refresher follows: by job id, the same ids by cluster and proc, the oldest cluster, and how many write each event log. */
interface Followed {
  version: number;
  jobs: Map<string, LiveJob>;
  ids: Map<number, Map<number, string>>;
  oldest: number;
  byLog: Map<string | undefined, number>;
}

/**
 * Reads the followed jobs from the store again only after it was written to: between two
 * refreshes that changed nothing, nothing is made anew.
 */
function followedJobsReader(store: QueueDeps["store"]): () => Followed {
  let followed: Followed | undefined;
  return () => {
    const version = store.version();
    if (followed?.version === version) return followed;
    const jobs = new Map<string, LiveJob>();
    const ids = new Map<number, Map<number, string>>();
    const byLog = new Map<string | undefined, number>();
    let oldest = Infinity;
    for (const j of store.liveJobs()) {
      byLog.set(j.eventLog, (byLog.get(j.eventLog) ?? 0) + 1);
      const id = `${j.cluster}.${j.proc}`;
      jobs.set(id, j);
      let procs = ids.get(j.cluster);
      if (!procs) ids.set(j.cluster, procs = new Map());
      procs.set(j.proc, id);
      oldest = Math.min(oldest, j.cluster);
    }
    followed = { version, jobs, ids, oldest, byLog };
    return followed;
  };
}

/** A condor_q answer, where each followed job's ad lies in it, and what each parsed to. */
interface ParsedAnswer {
  answer: JsonAdSlices;
  index: Map<string, number>;
  ads: Map<string, JobAd>;
}

/**
 * The followed jobs' ads of an answer, matched by ClusterId and ProcId read off the bytes: an ad
 * whose bytes are the last answer's for the same job is not parsed again, and when no ad changed
 * the last map is kept. Yields to the event loop every ADS_PER_SLICE ads.
 */
async function followedAds(answer: JsonAdSlices, f: Followed, last: ParsedAnswer | undefined): Promise<ParsedAnswer> {
  const ids = f.ids;
  const index = new Map<string, number>();
  /** The ads that are new or changed since the last answer. */
  const fresh = new Map<string, JobAd>();
  for (let i = 0, n = adCount(answer); i < n; i++) {
    if (i > 0 && i % ADS_PER_SLICE === 0) await new Promise<void>((r) => setTimeout(r, 0));
    const cluster = sliceJobNumber(answer, i, "ClusterId");
    const proc = cluster === undefined ? undefined : sliceJobNumber(answer, i, "ProcId");
    const id = proc === undefined ? undefined : ids.get(cluster!)?.get(proc);
    if (id === undefined || index.has(id)) continue;
    index.set(id, i);
    const was = last?.index.get(id);
    if (was === undefined || !sameAd(last!.answer, was, answer, i)) {
      const ad = parseAd(answer, i);
      // The pod's UID is already kept by the followed job: one copy of it, not two per followed pod.
      const uid = f.jobs.get(id)?.uid;
      if (uid !== undefined && ad.InterLinkPodUID === uid) ad.InterLinkPodUID = uid;
      fresh.set(id, ad);
    }
  }
  // The same jobs with the same bytes: the view's map is kept as it was.
  let ads = last?.ads;
  if (!ads || fresh.size > 0 || index.size !== ads.size) {
    const before = ads;
    ads = new Map();
    for (const id of index.keys()) ads.set(id, fresh.get(id) ?? before!.get(id)!);
  }
  return { answer, index, ads };
}

/** `(ClusterId == 5 && (ProcId == 0 || ProcId == 3)) || …`: exactly these jobs (ids are numbers the sidecar recorded). */
function idsConstraint(jobs: readonly LiveJob[]): string {
  const byCluster = new Map<number, number[]>();
  for (const j of jobs) byCluster.set(j.cluster, [...(byCluster.get(j.cluster) ?? []), j.proc]);
  return [...byCluster].map(([cl, procs]) => `(ClusterId == ${cl} && (${procs.map((p) => `ProcId == ${p}`).join(" || ")}))`).join(" || ");
}

/**
 * The followed jobs without a readable shared event log (`polled` says which logs those are): the
 * watch asks what changed among them every WATCH_MS (the full condor_q stays at ReconcileMinutes).
 */
function watchedJobs(f: Followed, polled: (eventLog: string | undefined) => boolean): LiveJob[] {
  let polledLogs = 0;
  for (const [log, count] of f.byLog) if (polled(log)) polledLogs += count;
  if (polledLogs === 0) return [];
  const out: LiveJob[] = [];
  for (const j of f.jobs.values()) if (polled(j.eventLog)) out.push(j);
  return out;
}

/**
 * Puts the ads of the jobs asked about into the view (an asked job without an ad has left the
 * queue), and does what they ask for. False when that failed (the caller asks again later).
 */
async function mergeAsked(
  snap: Snapshot,
  last: ParsedAnswer | undefined,
  found: ReadonlyMap<string, JobAd>,
  at: number,
  asked: readonly LiveJob[],
  afterRefresh: QueueView["afterRefresh"],
  log: QueueDeps["log"],
): Promise<boolean> {
  snap.checked ??= new Map();
  const live = new Map<string, LiveJob>();
  for (const j of asked) {
    const id = `${j.cluster}.${j.proc}`;
    const ad = found.get(id);
    if (ad) snap.ads.set(id, ad);
    else snap.ads.delete(id);
    // The next full answer parses this job's ad again rather than keep the one it had.
    last?.index.delete(id);
    snap.checked.set(id, at);
    live.set(id, j);
  }
  try {
    await afterRefresh?.({ at, ads: snap.ads, checked: snap.checked }, live);
  } catch (err) {
    log.warn("acting on the queue's view failed; the next refresh tries again", { error: errorText(err) });
    return false;
  }
  return true;
}

export function createQueueView(d: QueueDeps): QueueView {
  const periodMs = d.config.StatusCacheSeconds * 1000;
  const reconcileMs = d.config.ReconcileMinutes * 60_000;
  /** Every condor_q of the view runs after the one before: a targeted merge never races a full one. */
  let lock: Promise<unknown> = Promise.resolve();
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = lock.then(fn);
    lock = p.catch(() => {});
    return p;
  }
  /** How long the view may go without hearing from the schedd before a status call has it probed. */
  const aliveMs = periodMs * ALIVE_PERIODS;
  let current: Snapshot | undefined;
  /**
   * The last answer's bytes, where each followed job's ad was in them, and what it parsed to:
   * most ads do not change between refreshes, and an ad whose bytes did not change is not
   * decoded again (no string per ad, no new object).
   */
  let last: ParsedAnswer | undefined;
  /** The buffer the next answer is read into: the one before the last while full queries come every period (the watch not ready), else none. */
  let spare: Uint8Array = new Uint8Array(0);
  let cycle: Promise<void> | undefined;
  let first: Promise<void> | undefined;
  const health = createQueueHealth(d);
  const { schedd, failed, answered, askedAnswered, askedFailed } = health;
  const { attributes, noteWidth } = createWidth(d);

  const followedJobs = followedJobsReader(d.store);

  const polledJobs = (f: Followed) => watchedJobs(f, view.polled);

  const merge = (found: ReadonlyMap<string, JobAd>, at: number, asked: readonly LiveJob[]) =>
    current ? mergeAsked(current, last, found, at, asked, view.afterRefresh, d.log) : Promise.resolve(true);
  const watch = createWatch<LiveJob>({
    ...d,
    mine: sidecarJobs(d.sidecarId),
    attributes,
    followed: followedJobs,
    viewStatus: (id) => current?.ads.get(id)?.JobStatus,
    merge,
    answered: askedAnswered,
    failed: askedFailed,
    kick: () => view.kick(),
  });

  /** One refresh: condor_q of the followed jobs by their cluster ids, then what the view asks for. */
  async function refresh(): Promise<void> {
    const at = d.now();
    const f = followedJobs();
    if (f.jobs.size === 0) return;
    // The caller's own jobs (Owner, which no job can change) from the oldest followed cluster on
    // (ClusterId cannot change either); the view keeps the recorded ids alone. Not a constraint
    // on InterLinkSidecarId, which a job can rewrite to hide, nor a list of ids, which costs the
    // schedd one comparison per id for every job it holds.
    // With jobs to watch, the schedd's clock too (it starts the watch's window); otherwise not,
    // so that an ad whose job did not change keeps its bytes and is not parsed again.
    const clock = polledJobs(f).length > 0;
    let answer: JsonAdSlices;
    try {
      answer = await d.condor.querySlices({
        constraint: `ClusterId >= ${f.oldest}`,
        attributes: clock ? [...attributes(), "ServerTime"] : attributes(),
        into: spare,
      });
    } catch (err) {
      failed(err, at);
      d.log.warn("condor_q failed; status leaves the followed pods out, so interLink keeps their last state", { error: schedd.error });
      return;
    }
    health.targetedFailed = false;
    answered();
    const next = await followedAds(answer, f, last);
    if (clock) watch.noteFull(next.ads.size > 0 ? [...next.ads.values()] : adCount(answer) > 0 ? [parseAd(answer, 0)] : [], d.now() - at);
    spare = last && clock && !watch.ready() ? new Uint8Array(last.answer.bytes.buffer) : new Uint8Array(0);
    last = next;
    current = { at, ads: next.ads, checked: new Map() };
    try {
      await view.afterRefresh?.(current, f.jobs);
    } catch (err) {
      d.log.warn("acting on the queue's view failed; the next refresh tries again", { error: errorText(err) });
    }
  }

  function runCycle(): Promise<void> {
    cycle ??= serial(refresh).finally(() => {
      cycle = undefined;
    });
    return cycle;
  }

  const loop = createRefreshLoop({
    d,
    reconcileMs,
    runCycle,
    serial,
    watch,
    followedJobs,
    polledJobs,
    polled: (eventLog) => view.polled(eventLog),
    cycle: () => cycle,
  });

  const view: QueueView = {
    current: () => current,
    failing: health.failing,
    async ready() {
      if (!current && !health.failing()) await (first ??= runCycle());
      return current;
    },
    wake: loop.wake,
    follows: (id) => followedJobs().jobs.has(id),
    pollingChanged: loop.pollingChanged,
    kick: loop.kick,
    refreshIds: (ids) =>
      serial(() =>
        refreshTargeted(
          { d, followedJobs, current: () => current, failing: health.failing, refresh, attributes, merge, schedd, askedFailed, askedAnswered },
          ids,
        )
      ),
    ...createRechecks(),
    polled: (eventLog) => eventLog === undefined,
    heardWithin: health.heardWithin,
    lastAnswer: health.lastAnswer,
    probe: health.probe,
    async refreshNow() {
      // A refresh that started before the caller asked may have read the queue too early.
      await cycle;
      await runCycle();
    },
    checkAlive() {
      if (loop.stopped() || view.heardWithin(aliveMs)) return;
      view.probe().catch(() =>
        d.log.warn("condor_q failed; status leaves the followed pods out, so interLink keeps their last state", { error: schedd.error })
      );
    },
    running: loop.running,
    attributes,
    noteWidth,
    schedd,
    async stop() {
      loop.stop();
      await cycle;
      await lock;
    },
  };
  return view;
}

/** What a targeted condor_q needs of the view (QueueView.refreshIds). */
interface TargetedDeps {
  d: Pick<QueueDeps, "now" | "condor" | "log">;
  followedJobs: () => Followed;
  current: () => Snapshot | undefined;
  failing: () => boolean;
  /** The full refresh: the targeted one runs it instead while the view has none yet. */
  refresh: () => Promise<void>;
  attributes: () => string[];
  merge: (found: ReadonlyMap<string, JobAd>, at: number, asked: readonly LiveJob[]) => Promise<boolean>;
  schedd: Streak;
  askedFailed: (err: unknown, at: number) => void;
  askedAnswered: () => void;
}

/**
 * One condor_q of exactly these followed jobs, in batches of TARGETED_BATCH_MAX, each merged into
 * the view; false when one failed.
 */
async function refreshTargeted(t: TargetedDeps, ids: readonly string[]): Promise<boolean> {
  const { d, followedJobs, refresh, attributes, merge, schedd, askedFailed, askedAnswered } = t;
  const f = followedJobs();
  const jobs = ids.flatMap((id) => f.jobs.get(id) ?? []);
  if (jobs.length === 0) return true;
  if (!t.current()) {
    await refresh();
    return !t.failing();
  }
  for (let i = 0; i < jobs.length; i += TARGETED_BATCH_MAX) {
    const part = jobs.slice(i, i + TARGETED_BATCH_MAX);
    const at = d.now();
    let ads: JobAd[];
    try {
      ads = await d.condor.query({ constraint: idsConstraint(part), attributes: attributes() });
    } catch (err) {
      askedFailed(err, at);
      d.log.warn("condor_q of the jobs the event log named failed; status leaves the followed pods out until it answers", { error: schedd.error });
      return false;
    }
    askedAnswered();
    // Matched by the id the sidecar recorded, never by an attribute the job could rewrite.
    const found = new Map<string, JobAd>();
    for (const ad of ads) {
      const id = typeof ad.ClusterId === "number" && typeof ad.ProcId === "number" ? f.ids.get(ad.ClusterId)?.get(ad.ProcId) : undefined;
      if (id !== undefined) found.set(id, ad);
    }
    // False, so that the follower keeps its offset and asks about these jobs again.
    if (!(await merge(found, at, part))) return false;
  }
  return true;
}

/** The attributes a job's status needs (QueueView.attributes), and the widest pod they are for. */
function createWidth(d: Pick<QueueDeps, "store">): Pick<QueueView, "attributes" | "noteWidth"> {
  /**
   * The widest pod (init containers, containers) is counted once from the store, then kept up to
   * date on create (asking for an attribute no job has costs nothing).
   */
  let widest: { init: number; main: number } | undefined;
  function noteWidth(containers: readonly { init: boolean }[]): { init: number; main: number } {
    if (!widest) {
      widest = { init: 0, main: 0 };
      for (const r of d.store.list(["creating", "submitted"])) noteWidth(r.containers);
    }
    widest.init = Math.max(widest.init, containers.filter((c) => c.init).length);
    widest.main = Math.max(widest.main, containers.filter((c) => !c.init).length);
    return widest;
  }
  function attributes(): string[] {
    const w = noteWidth([]);
    const out: string[] = [...BASE_ATTRS];
    for (let i = 0; i < w.init; i++) out.push(stateAttrName(i, true));
    for (let i = 0; i < w.main; i++) out.push(stateAttrName(i, false));
    return out;
  }
  return { attributes, noteWidth };
}

/** The jobs to ask about again, and when (QueueView.recheck). */
function createRechecks(): Pick<QueueView, "recheck" | "takeDue"> {
  const rechecks = new Map<string, number>();
  return {
    recheck(id, atMs) {
      const was = rechecks.get(id);
      if (was === undefined || atMs < was) rechecks.set(id, atMs);
    },
    takeDue(nowMs) {
      const out: string[] = [];
      for (const [id, at] of rechecks) {
        if (at <= nowMs) {
          out.push(id);
          rechecks.delete(id);
        }
      }
      return out;
    },
  };
}

/** What the refresher's loop is given by the view: a full refresh, a turn of the watch, and what is followed. */
interface LoopDeps {
  d: Pick<QueueDeps, "now" | "timer">;
  reconcileMs: number;
  /** A full refresh (after the one running, if any). */
  runCycle: () => Promise<void>;
  /** Runs after every condor_q of the view before it. */
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  watch: Pick<Watch<LiveJob>, "ready" | "tick">;
  followedJobs: () => Followed;
  polledJobs: (f: Followed) => LiveJob[];
  polled: QueueView["polled"];
  /** The full refresh running, if one runs. */
  cycle: () => Promise<void> | undefined;
}

/** When the refresher runs: its loop, and what makes it run sooner. */
interface RefreshLoop extends Pick<QueueView, "wake" | "pollingChanged" | "kick" | "running"> {
  stopped(): boolean;
  /** No turn runs after this one (shutdown). */
  stop(): void;
}

function createRefreshLoop(l: LoopDeps): RefreshLoop {
  const { d, reconcileMs, runCycle, serial, watch, followedJobs, polledJobs } = l;
  /** When the loop's next full refresh is due (Infinity while none is scheduled). */
  let nextAt = Infinity;
  let cancelTimer: (() => void) | undefined;
  let looping = false;
  let stopped = false;
  /** Counted from the followed jobs once per turn, and counted up by a create that adds one. */
  let polledCount = 0;
  /** When the next full condor_q is due: at start, after a gap (`kick`), then every ReconcileMinutes. */
  let nextFullAt = -Infinity;

  /** The refresher's loop: a refresh every period while something is followed, then sleep. */
  function loop(): void {
    cancelTimer = undefined;
    if (stopped) {
      looping = false;
      return;
    }
    looping = true;
    nextAt = Infinity;
    const started = d.now();
    const polled = polledJobs(followedJobs());
    // The watch's window starts at a full condor_q's answer (its ServerTime).
    const full = started >= nextFullAt || (polled.length > 0 && !watch.ready());
    if (full) nextFullAt = started + reconcileMs;
    const run = full ? runCycle() : serial(() => watch.tick(polled));
    void run.then(() => {
      if (stopped || followedJobs().jobs.size === 0) {
        looping = false;
        return;
      }
      polledCount = polledJobs(followedJobs()).length;
      schedule(polledCount > 0 ? Math.min(started + WATCH_MS, nextFullAt) : nextFullAt);
    });
  }
  /** A job that must be watched joined jobs that were only reconciled: the next turn comes within WATCH_MS. */
  function pollSooner(): void {
    if (!looping) return loop();
    if (nextAt !== Infinity && nextAt - d.now() > WATCH_MS) schedule(d.now() + WATCH_MS);
  }
  function schedule(at: number): void {
    cancelTimer?.();
    nextAt = at;
    cancelTimer = d.timer(loop, Math.max(0, at - d.now()));
  }

  return {
    wake(job) {
      if (stopped) return;
      if (!looping) return loop();
      if (job && !l.polled(job.eventLog)) return;
      polledCount++;
      pollSooner();
    },
    pollingChanged() {
      if (stopped) return;
      pollSooner();
    },
    kick() {
      if (stopped) return;
      nextFullAt = -Infinity;
      if (!looping) return loop();
      if (nextAt !== Infinity) schedule(d.now());
      // A refresh runs: the loop schedules the next one when it ends, and that one comes now.
      else void (l.cycle() ?? Promise.resolve()).then(() => nextAt !== Infinity && schedule(d.now()));
    },
    running: () => looping,
    stopped: () => stopped,
    stop() {
      stopped = true;
      looping = false;
      cancelTimer?.();
      cancelTimer = undefined;
    },
  };
}
