/**
 * The view of this sidecar's jobs in the schedd's queue, kept fresh in the background: while any
 * pod's job is followed, one condor_q for all of them every StatusCacheSeconds (start to
 * start), after which `afterRefresh` does what the new view asks for (jobs that left, holds,
 * spooled output). A status request reads the latest view and never waits on a condor tool,
 * except for the first refresh after start. With nothing to follow the refresher sleeps, and a
 * new job wakes it.
 */
import { adCount, type JobAd, type JsonAdSlices, parseAd, sameAd, sliceJobNumber } from "../condor/parse.ts";
import type { Condor } from "../condor/tools.ts";
import { SidecarError } from "../core/errors.ts";
import { blamesHTCondor, recordSuccess, type Streak } from "../core/health.ts";
import { stateAttrName } from "../core/types.ts";
import type { LiveJob, Store } from "../store/store.ts";

/** Attributes the status path asks condor_q/condor_history for (never the whole ad). */
const BASE_ATTRS = [
  "ClusterId",
  "ProcId",
  "JobStatus",
  "InterLinkPodUID",
  "InterLinkSidecarId",
  "HoldReasonCode",
  "HoldReasonSubCode",
  "HoldReason",
  "ExitCode",
  "ExitBySignal",
  "ExitSignal",
  "RemoveReason",
  "NumJobStarts",
  "EnteredCurrentStatus",
] as const;

/**
 * A failed condor_q counts towards the schedd's failure streak at most once in this long: the
 * refresher runs every few seconds, and three failures in a row within seconds (a schedd busy
 * for a moment) must not make the node NotReady (core/health.ts).
 */
const FAILURE_COUNT_INTERVAL_MS = 10_000;

/** Ads handled between two yields to the event loop: a refresh of thousands must not hold up status calls. */
const ADS_PER_SLICE = 500;

/**
 * This sidecar's jobs in the queue, by job id (`cluster.proc`); `at` is when its condor_q started.
 * Ads are keyed by the job id alone: it is the one thing a job cannot rewrite.
 */
export interface Snapshot {
  at: number;
  ads: Map<string, JobAd>;
}

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
  /** Starts the refresher if it sleeps (a job was recorded or adopted). */
  wake(): void;
  /** Runs a refresh that starts now (after one that is running) and waits for it (logs and tests; never status). */
  refreshNow(): Promise<void>;
  /** The ping's own condor_q while nothing is followed (the refresher's otherwise). */
  probe(): Promise<void>;
  /** Whether the refresher runs (something is followed). */
  running(): boolean;
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
  config: { StatusCacheSeconds: number };
  now: () => number;
  log: { warn(msg: string, fields?: Record<string, unknown>): void };
  timer: SetTimer;
  /** Whether the sidecar was starved of CPU since a time (service/starvation.ts); never, without it. */
  starved?: (since: number) => boolean;
}

/** The jobs the refresher follows: by job id, the same ids by cluster and proc, and the oldest cluster. */
interface Followed {
  version: number;
  jobs: Map<string, LiveJob>;
  ids: Map<number, Map<number, string>>;
  oldest: number;
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
    let oldest = Infinity;
    for (const j of store.liveJobs()) {
      const id = `${j.cluster}.${j.proc}`;
      jobs.set(id, j);
      let procs = ids.get(j.cluster);
      if (!procs) ids.set(j.cluster, procs = new Map());
      procs.set(j.proc, id);
      oldest = Math.min(oldest, j.cluster);
    }
    followed = { version, jobs, ids, oldest };
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
async function followedAds(answer: JsonAdSlices, ids: ReadonlyMap<number, ReadonlyMap<number, string>>, last: ParsedAnswer | undefined): Promise<ParsedAnswer> {
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
    if (was === undefined || !sameAd(last!.answer, was, answer, i)) fresh.set(id, parseAd(answer, i));
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

export function createQueueView(d: QueueDeps): QueueView {
  const periodMs = d.config.StatusCacheSeconds * 1000;
  const schedd: Streak = { failures: 0 };
  let lastCounted = -Infinity;
  let current: Snapshot | undefined;
  /**
   * The last answer's bytes, where each followed job's ad was in them, and what it parsed to:
   * most ads do not change between refreshes, and an ad whose bytes did not change is not
   * decoded again (no string per ad, no new object).
   */
  let last: ParsedAnswer | undefined;
  /** The buffer the next answer is read into: the one before the last answer's (two in turn, nothing new per refresh). */
  let spare: Uint8Array = new Uint8Array(0);
  let failing = false;
  let cycle: Promise<void> | undefined;
  let cancelTimer: (() => void) | undefined;
  let first: Promise<void> | undefined;
  let looping = false;
  let stopped = false;

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

  function failed(err: unknown, startedAt: number): void {
    failing = true;
    schedd.error = err instanceof Error ? err.message : String(err);
    const timedOut = err instanceof SidecarError && err.kind === "timeout";
    if (!blamesHTCondor({ timedOut, starved: timedOut && (d.starved?.(startedAt) ?? false) })) {
      d.log.warn("condor_q timed out while the sidecar was starved of CPU: not counted as a failure of the schedd", { error: schedd.error });
      return;
    }
    const now = d.now();
    if (now - lastCounted < FAILURE_COUNT_INTERVAL_MS) return;
    lastCounted = now;
    if (schedd.failures === 0) schedd.since = now;
    schedd.failures++;
  }
  function answered(): void {
    failing = false;
    lastCounted = -Infinity;
    recordSuccess(schedd);
  }

  const followedJobs = followedJobsReader(d.store);

  /** One refresh: condor_q of the followed jobs by their cluster ids, then what the view asks for. */
  async function refresh(): Promise<void> {
    const at = d.now();
    const f = followedJobs();
    if (f.jobs.size === 0) return;
    // The caller's own jobs (Owner, which no job can change) from the oldest followed cluster on
    // (ClusterId cannot change either); the view keeps the recorded ids alone. Not a constraint
    // on InterLinkSidecarId, which a job can rewrite to hide, nor a list of ids, which costs the
    // schedd one comparison per id for every job it holds.
    let answer: JsonAdSlices;
    try {
      answer = await d.condor.querySlices({ constraint: `ClusterId >= ${f.oldest}`, attributes: attributes(), into: spare });
    } catch (err) {
      failed(err, at);
      d.log.warn("condor_q failed; status leaves the followed pods out, so interLink keeps their last state", { error: schedd.error });
      return;
    }
    answered();
    const next = await followedAds(answer, f.ids, last);
    if (last) spare = new Uint8Array(last.answer.bytes.buffer);
    last = next;
    current = { at, ads: next.ads };
    try {
      await view.afterRefresh?.(current, f.jobs);
    } catch (err) {
      d.log.warn("acting on the queue's view failed; the next refresh tries again", { error: err instanceof Error ? err.message : String(err) });
    }
  }

  function runCycle(): Promise<void> {
    cycle ??= refresh().finally(() => {
      cycle = undefined;
    });
    return cycle;
  }

  /** The refresher's loop: a refresh every period while something is followed, then sleep. */
  function loop(): void {
    cancelTimer = undefined;
    if (stopped) {
      looping = false;
      return;
    }
    looping = true;
    const started = d.now();
    void runCycle().then(() => {
      if (stopped || followedJobs().jobs.size === 0) {
        looping = false;
        return;
      }
      cancelTimer = d.timer(loop, Math.max(0, periodMs - (d.now() - started)));
    });
  }

  const view: QueueView = {
    current: () => current,
    failing: () => failing,
    async ready() {
      if (!current && !failing) await (first ??= runCycle());
      return current;
    },
    wake() {
      if (!stopped && !looping) loop();
    },
    async refreshNow() {
      // A refresh that started before the caller asked may have read the queue too early.
      await cycle;
      await runCycle();
    },
    async probe() {
      const at = d.now();
      try {
        await d.condor.query({ constraint: "false", attributes: ["ClusterId"] });
        answered();
      } catch (err) {
        failed(err, at);
        throw err;
      }
    },
    running: () => looping,
    attributes,
    noteWidth,
    schedd,
    async stop() {
      stopped = true;
      looping = false;
      cancelTimer?.();
      cancelTimer = undefined;
      await cycle;
    },
  };
  return view;
}
