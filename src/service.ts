/**
 * The use cases: create, delete, status, ping, logs, system-info, and the background reaper.
 * Data flows one way: validate → plan → render → condor → store → status mapping.
 */
import type { Api, StatusAnswer } from "./app.ts";
import type { Condor } from "./condor/cli.ts";
import { type JobAd, type JobId, adNumber, classAdString, jobIdString } from "./condor/parse.ts";
import { SidecarError } from "./core/errors.ts";
import { isPodUid, parseCreateRequest } from "./core/pod.ts";
import { tryParseQuantity } from "./core/quantity.ts";
import { planJob } from "./core/plan.ts";
import type { StateLine } from "./core/state-line.ts";
import { type ContainerInfo, type PodStatus, linesFromAd, podStatus } from "./core/status.ts";
import { type PlanConfig, containerKey, stateAttrName } from "./core/types.ts";
import { renderSubmit } from "./render/submit.ts";
import { renderWrapper } from "./render/wrapper.ts";
import type { FileConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import { createLogService } from "./logs.ts";
import { type UnsafeJobFile, isDir, jobFileSize, listPodDirs, podDir, readStateFiles, removeFiles, removePodDir, writePodFiles } from "./store/files.ts";
import type { PodRecord, Store } from "./store/store.ts";

export interface ServiceDeps {
  store: Store;
  condor: Condor;
  config: FileConfig;
  planConfig: PlanConfig;
  dataRoot: string;
  spool: boolean;
  /** The credential file that must exist and be unexpired for the sidecar to be healthy. */
  credentialFile?: string;
  readCredential?: (path: string) => string | undefined;
  /** The notAfter time (epoch ms) of the first certificate in a PEM text, if it has one. */
  certificateExpiry?: (pem: string) => number | undefined;
  log: Logger;
  /** Epoch milliseconds. */
  now: () => number;
  version: string;
}

export interface Service extends Api {
  /**
   * Brings the store in line with the schedd (interrupted creates, a lost store, jobs of pods
   * deleted meanwhile). Run at start and by the reaper until it has succeeded once.
   */
  reconcile(): Promise<void>;
  /** One pass of the background work: reconcile if still needed, pending removals, tombstones. */
  reap(): Promise<void>;
  /** Waits (up to `deadlineMs`) for creates and a reaper pass that are still running. */
  drain(deadlineMs: number): Promise<void>;
}

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

const TOMBSTONE_TTL_MS = 24 * 3600 * 1000;
/** How long the ping waits for the schedd's answer (condor_q) before answering without it. */
const PING_SCHEDD_WAIT_MS = 5_000;
/** A job in neither queue nor history for this long is lost (between the two is normal briefly). */
const LOST_AFTER_MS = 60_000;
/** condor_transfer_data runs before a spooled job is finalized with whatever came back. */
const MAX_FETCH_ATTEMPTS = 10;
const FETCH_RETRY_MS = 10_000;
/**
 * A search by pod UID trusts an attribute the job can rewrite (condor_chirp set_job_attr), so it
 * only takes jobs queued at or after the submit began: such a job cannot have run and rewritten
 * anything yet. The slack allows for a schedd clock behind the sidecar's (a remote schedd).
 */
const QDATE_SLACK_SECONDS = 5;
/** How far back the history is searched for the jobs of pods whose record was lost. */
const ADOPT_HISTORY_LIMIT = 10_000;
const ADOPT_HISTORY_SCAN = 200_000;

/**
 * A snapshot of this sidecar's jobs in the queue, by job id (`cluster.proc`); `at` is when its
 * condor_q started. Ads are keyed by the job id alone: it is the one thing a job cannot rewrite.
 */
interface Snapshot {
  at: number;
  ads: Map<string, JobAd>;
}

/** Consecutive failures of one HTCondor daemon, as seen through its tool. */
interface Streak {
  failures: number;
  since?: number;
  error?: string;
}

export function createService(d: ServiceDeps): Service {
  const sidecarConstraint = `InterLinkSidecarId == ${classAdString(d.planConfig.sidecarId)}`;
  const inflight = new Map<string, Promise<{ PodUID: string; PodJID: string }>>();
  const startedAt = d.now();
  const submitSlots = semaphore(d.config.MaxConcurrentSubmits);
  const statusCacheMs = d.config.StatusCacheSeconds * 1000;
  let snapshot: Snapshot | undefined;
  let snapshotInFlight: Promise<Snapshot> | undefined;
  const schedd: Streak = { failures: 0 };
  const collector: Streak = { failures: 0 };
  let lastMachines: JobAd[] | undefined;
  let reconciled = false;
  let reaping: Promise<void> | undefined;
  const lastFetch = new Map<string, number>();

  const jid = (r: PodRecord) => (r.cluster === undefined ? "" : `${r.cluster}.${r.proc}`);
  const jobId = (r: PodRecord): JobId => ({ cluster: r.cluster!, proc: r.proc! });
  const keys = (r: PodRecord) => r.containers.map((c) => containerKey(c.name, c.init));
  const identity = (r: PodRecord) => ({ uid: r.uid, name: r.name, namespace: r.namespace, jid: jid(r), containers: r.containers as ContainerInfo[] });
  /** Secret files of the pod: env files (always) and the secret volume files recorded at create. */
  const secretPaths = (r: PodRecord) => [...new Set([...r.containers.map((c) => `env/${containerKey(c.name, c.init)}.env`), ...r.secrets])];
  const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
  /** A file the job left in its pod folder that the sidecar will not read (a symlink, …). */
  const unsafeFile = (r: PodRecord) => (err: UnsafeJobFile) => d.log.warn("ignoring a file of the job that is not a plain file of its pod folder", { uid: r.uid, jid: jid(r), error: err.message });

  function ok(s: Streak): void {
    s.failures = 0;
    s.since = undefined;
    s.error = undefined;
  }
  function failed(s: Streak, err: unknown): void {
    if (s.failures === 0) s.since = d.now();
    s.failures++;
    s.error = message(err);
  }

  /**
   * The attributes to ask for: the base ones plus a state attribute per container slot any of
   * our pods has. The widest pod is counted once from the store, then kept up to date on create
   * (asking for an attribute no job has costs nothing).
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
  function stateAttrs(): string[] {
    const w = noteWidth([]);
    const out: string[] = [...BASE_ATTRS];
    for (let i = 0; i < w.init; i++) out.push(stateAttrName(i, true));
    for (let i = 0; i < w.main; i++) out.push(stateAttrName(i, false));
    return out;
  }

  /**
   * One condor_q for every pod of this sidecar, shared by concurrent callers and cached briefly.
   * While a refresh runs, callers get the snapshot it replaces if that is at most one cache
   * period past its age: interLink polls pod after pod (spec: interlink §5.1), and one slow
   * condor_q must not hold every one of those calls.
   */
  async function queueSnapshot(): Promise<Snapshot> {
    const now = d.now();
    if (snapshot && now - snapshot.at < statusCacheMs) return snapshot;
    if (snapshotInFlight) {
      if (snapshot && now - snapshot.at < 2 * statusCacheMs) return snapshot;
      return snapshotInFlight;
    }
    snapshotInFlight = (async () => {
      try {
        const at = d.now();
        // The jobs recorded at create, selected by their cluster ids: a job can rewrite its
        // InterLinkSidecarId and hide from a query by attribute. With nothing to follow, a query
        // that matches nothing still tells whether the schedd answers.
        const clusters = [...new Set(d.store.liveJobs().map((j) => j.cluster))].sort((a, b) => a - b);
        const ads = await d.condor.query(clusters.length > 0 ? { clusters, attributes: stateAttrs() } : { constraint: "false", attributes: ["ClusterId"] });
        const byJob = new Map<string, JobAd>();
        for (const ad of ads) {
          if (typeof ad.ClusterId === "number" && typeof ad.ProcId === "number") byJob.set(`${ad.ClusterId}.${ad.ProcId}`, ad);
        }
        snapshot = { at, ads: byJob };
        ok(schedd);
        return snapshot;
      } catch (err) {
        failed(schedd, err);
        throw err;
      } finally {
        snapshotInFlight = undefined;
      }
    })();
    return snapshotInFlight;
  }

  /** What the status answer says while the schedd does not answer (null when it does). */
  function staleness(): string | undefined {
    if (schedd.failures === 0 || schedd.since === undefined) return undefined;
    return `condor_q failing since ${new Date(schedd.since).toISOString()} (${schedd.failures} consecutive): ${schedd.error ?? "unknown error"}`;
  }

  function finalize(r: PodRecord, status: PodStatus): PodStatus {
    d.store.update(r.uid, { terminal: JSON.stringify(status) }, d.now());
    // The job has left: its secrets are no longer needed on the submit side.
    removeFiles(r.dir, secretPaths(r));
    lastFetch.delete(r.uid);
    return status;
  }

  /**
   * Fetches a spooled job's output once. condor_transfer_data prints success even for a job
   * that does not exist (observed), so success means the state files the wrapper always writes
   * came back. Returns false while a later attempt may still bring them.
   */
  async function fetchOutput(r: PodRecord): Promise<boolean> {
    if (!r.spooled || r.outputFetched) return true;
    const last = lastFetch.get(r.uid);
    if (last !== undefined && d.now() - last < FETCH_RETRY_MS) return false;
    lastFetch.set(r.uid, d.now());
    let problem: string | undefined;
    try {
      await d.condor.transferData(jobId(r));
      const missing = keys(r).filter((k) => {
        try {
          return jobFileSize({ dir: r.dir, rel: `podstate/${k}` }) === undefined;
        } catch {
          return true; // not a plain file: readStateFiles says why
        }
      });
      if (missing.length > 0) problem = `condor_transfer_data brought back no state for ${missing.join(", ")}`;
    } catch (err) {
      problem = message(err);
    }
    const attempts = r.fetchAttempts + 1;
    r.fetchAttempts = attempts;
    if (problem === undefined || attempts >= MAX_FETCH_ATTEMPTS) {
      if (problem !== undefined) d.log.warn("giving up fetching the spooled output", { uid: r.uid, jid: jid(r), attempts, error: problem });
      d.store.update(r.uid, { outputFetched: true, fetchAttempts: attempts }, d.now());
      r.outputFetched = true;
      return true;
    }
    d.log.warn("spooled output not fetched yet; retrying", { uid: r.uid, jid: jid(r), attempts, error: problem });
    d.store.update(r.uid, { fetchAttempts: attempts }, d.now());
    return false;
  }

  async function observeEnded(r: PodRecord, ad: JobAd, inQueue = false): Promise<PodStatus> {
    // Still in the queue, the output can be fetched on a later pass: not final yet.
    if (!(await fetchOutput(r)) && inQueue) return podStatus(identity(r), { kind: "queued", ad });
    const files = readStateFiles(r.dir, keys(r), unsafeFile(r));
    // Chirped lines are the fallback when the files did not come back.
    const lines = new Map<string, StateLine>(linesFromAd(ad, r.containers));
    for (const [k, v] of files) lines.set(k, v);
    return finalize(r, podStatus(identity(r), { kind: "ended", ad, lines }));
  }

  const HOLD_REASONS: Record<number, string> = {
    12: "OutputTransferFailed",
    13: "InputTransferFailed",
    34: "ResourceLimitExceeded",
    46: "DeadlineExceeded",
    47: "DeadlineExceeded",
  };

  async function observeHeld(r: PodRecord, ad: JobAd): Promise<PodStatus> {
    const code = adNumber(ad, "HoldReasonCode") ?? 0;
    if (!d.config.TerminalHoldCodes.includes(code)) return podStatus(identity(r), { kind: "queued", ad });
    const since = r.heldSince ?? d.now();
    if (r.heldSince === undefined) d.store.update(r.uid, { heldSince: since }, d.now());
    if (d.now() - since < d.config.HoldGraceSeconds * 1000) return podStatus(identity(r), { kind: "queued", ad });
    const sub = adNumber(ad, "HoldReasonSubCode");
    const reason = code === 34 && sub === 102 ? "OOMKilled" : code === 34 && sub === 104 ? "EphemeralStorageExceeded" : HOLD_REASONS[code] ?? "JobHeld";
    const why = `${typeof ad.HoldReason === "string" ? ad.HoldReason : "held"} (HoldReasonCode ${code}); removed by the sidecar`;
    try {
      await d.condor.remove(jobId(r), `htcondor-sidecar: unrecoverable hold ${code}`);
    } catch (err) {
      d.log.warn("cannot remove unrecoverably held job; retrying next time", { uid: r.uid, error: message(err) });
      return podStatus(identity(r), { kind: "queued", ad });
    }
    const lines = new Map([...linesFromAd(ad, r.containers)]);
    return finalize(r, podStatus(identity(r), { kind: "failed", reason, message: why, exitCode: reason === "OOMKilled" ? 137 : 1, lines }));
  }

  async function statusOf(records: PodRecord[]): Promise<PodStatus[]> {
    const out: PodStatus[] = [];
    const live = records.filter((r) => r.phase !== "creating" && r.terminal === undefined && r.cluster !== undefined);
    let snap: Snapshot | undefined;
    if (live.length > 0) {
      try {
        snap = await queueSnapshot();
      } catch (err) {
        d.log.warn("condor_q failed; those pods are left out, so interLink keeps their last state", { error: message(err) });
      }
    }
    // A job recorded after its snapshot's condor_q started cannot be in it: not gone, just new.
    const fresh = (r: PodRecord) => snap !== undefined && (r.submittedAt ?? 0) >= snap.at;
    const inQueue = snap?.ads;
    const gone = inQueue ? live.filter((r) => !inQueue.has(jid(r)) && !fresh(r)) : [];
    let history = new Map<string, JobAd>();
    if (gone.length > 0) {
      try {
        // By id alone, like the queue: a constraint on InterLinkSidecarId would let a job that
        // rewrote it look lost.
        const found = await d.condor.history({
          ids: gone.map(jobId),
          attributes: stateAttrs(),
          limit: gone.length,
          scanLimit: Math.max(10_000, gone.length * 10),
        });
        history = new Map(found.map((ad) => [`${ad.ClusterId}.${ad.ProcId}`, ad]));
      } catch (err) {
        d.log.warn("condor_history failed; those pods are left out, so interLink keeps their last state", { error: message(err) });
        snap = undefined;
      }
    }

    for (const r of records) {
      if (r.phase === "creating") {
        out.push(podStatus(identity(r), { kind: "creating" }));
        continue;
      }
      if (r.terminal !== undefined) {
        out.push(JSON.parse(r.terminal) as PodStatus);
        continue;
      }
      // HTCondor did not answer: omit the pod, and interLink keeps serving the last state it
      // had (spec: interlink §5.3, "Missing pod in the response"); the answer says it is stale.
      if (!snap) continue;
      if (fresh(r) && !snap.ads.has(jid(r))) {
        out.push(podStatus(identity(r), { kind: "creating" }));
        continue;
      }
      const st = await observe(r, snap.ads.get(jid(r)), history.get(jid(r)));
      if (st) out.push(st);
    }
    return out;
  }

  /**
   * The identity attributes the sidecar wrote at submit, when the job's ad no longer holds them:
   * the job rewrote them (condor_chirp), to pass for another pod or to hide from this sidecar.
   */
  function tampered(r: PodRecord, ad: JobAd): string | undefined {
    const changed = [
      ad.InterLinkPodUID !== r.uid ? "InterLinkPodUID" : "",
      ad.InterLinkSidecarId !== d.planConfig.sidecarId ? "InterLinkSidecarId" : "",
    ].filter(Boolean);
    return changed.length > 0 ? changed.join(" and ") : undefined;
  }

  /**
   * A job that rewrote its identity is failed and removed: its container states are the job's
   * word, which no longer counts. Until condor_rm succeeds the failure is reported but not
   * final, so the next status tries the removal again.
   */
  async function observeTampered(r: PodRecord, inQueue: boolean, attrs: string): Promise<PodStatus> {
    const failed = podStatus(identity(r), {
      kind: "failed",
      reason: "JobTampered",
      message: `Job ${jid(r)} rewrote ${attrs} in its job ad; the sidecar no longer trusts what it reports${inQueue ? " and removed it" : ""}`,
      exitCode: 1,
      lines: new Map(),
    });
    d.log.error("a job rewrote its identity attributes: reporting its pod failed", { uid: r.uid, jid: jid(r), attributes: attrs, inQueue });
    if (inQueue) {
      try {
        await d.condor.remove(jobId(r), "htcondor-sidecar: the job rewrote its identity attributes");
      } catch (err) {
        d.log.warn("cannot remove a job that rewrote its identity; retrying next time", { uid: r.uid, jid: jid(r), error: message(err) });
        return failed;
      }
    }
    return finalize(r, failed);
  }

  /** One pod's status from its queue ad, else its history ad; undefined when not known yet. */
  async function observe(r: PodRecord, ad: JobAd | undefined, historyAd: JobAd | undefined): Promise<PodStatus | undefined> {
    const forged = ad ? tampered(r, ad) : historyAd ? tampered(r, historyAd) : undefined;
    if (forged) return observeTampered(r, ad !== undefined, forged);
    if (ad) {
      if (r.missingSince !== undefined) d.store.update(r.uid, { missingSince: undefined }, d.now());
      const js = adNumber(ad, "JobStatus");
      if (js !== 5 && r.heldSince !== undefined) {
        // Released: a later hold gets its own grace period.
        d.store.update(r.uid, { heldSince: undefined }, d.now());
        r.heldSince = undefined;
      }
      if (js === 4) return observeEnded(r, ad, true); // spooled: stays in the queue until fetched
      if (js === 5) return observeHeld(r, ad);
      return podStatus(identity(r), { kind: "queued", ad });
    }
    if (historyAd) return observeEnded(r, historyAd);
    const since = r.missingSince ?? d.now();
    if (r.missingSince === undefined) d.store.update(r.uid, { missingSince: since }, d.now());
    if (d.now() - since <= LOST_AFTER_MS) return undefined;
    // Before calling it lost: the bounded history scan may have stopped short of an old job on
    // a busy schedd; ask for this one job with no scan limit (a search by id stops when found).
    try {
      const [h] = await d.condor.history({ ids: [jobId(r)], attributes: stateAttrs(), limit: 1 });
      const forged = h && tampered(r, h);
      if (forged) return observeTampered(r, false, forged);
      if (h) return observeEnded(r, h);
    } catch (err) {
      d.log.warn("condor_history failed; the pod is left out", { uid: r.uid, error: message(err) });
      return undefined;
    }
    return finalize(r, podStatus(identity(r), { kind: "lost", message: `Job ${jid(r)} is in neither the queue nor the history` }));
  }

  async function doCreate(body: unknown): Promise<{ PodUID: string; PodJID: string }> {
    const req = parseCreateRequest(body);
    const { uid, name, namespace } = req.pod.metadata;
    const existing = d.store.get(uid);
    if (existing?.phase === "submitted") return { PodUID: uid, PodJID: jid(existing) };
    if (existing?.phase === "removing" || existing?.phase === "deleted") {
      throw new SidecarError("gone", `pod "${namespace}/${name}" (${uid}) was already deleted; a late create submits nothing`);
    }
    if (existing?.phase === "creating") {
      // Left by a crash or a timed-out submit: the schedd knows whether the job exists.
      const found = await findJobByUid(existing);
      if (found) {
        d.store.markSubmitted(uid, found.cluster, found.proc, d.now());
        return { PodUID: uid, PodJID: jobIdString(found) };
      }
      removePodDir(existing.dir, secretPaths(existing));
      d.store.remove(uid);
    }

    const plan = planJob(req, d.planConfig);
    const wrapper = renderWrapper(plan);
    const submit = renderSubmit(plan);
    const dir = podDir(d.dataRoot, uid);
    const containers = [...plan.initContainers, ...plan.containers].map((c) => ({
      name: c.name,
      init: c.init,
      image: c.image.kind === "host" ? "host" : c.image.uri,
    }));
    const secrets = plan.files.filter((f) => f.secret).map((f) => f.path);
    d.store.insertCreating({ uid, name, namespace, dir, spooled: d.spool, containers, secrets, createdAt: d.now() });
    noteWidth(containers);
    let id: JobId;
    try {
      const enc = new TextEncoder();
      try {
        writePodFiles(dir, [
          ...plan.files,
          { path: "job.sh", content: enc.encode(wrapper), mode: 0o700, secret: false },
          { path: "job.sub", content: enc.encode(submit), mode: 0o600, secret: false },
        ]);
      } catch (err) {
        throw new SidecarError("unavailable", `cannot write the job's files under ${dir}: ${message(err)}`);
      }
      id = await submitSlots(() => d.condor.submit(dir, "job.sub", d.spool));
    } catch (err) {
      if (err instanceof SidecarError && err.kind === "timeout") return settleTimedOut(uid, name, namespace, err);
      // Best effort: the disk may be what failed; the reason the caller sees is the first error.
      for (const cleanup of [() => removePodDir(dir, secrets), () => d.store.remove(uid)]) {
        try {
          cleanup();
        } catch (e) {
          d.log.error("cannot clean up after a failed create", { uid, dir, error: String(e) });
        }
      }
      if (err instanceof SidecarError) throw new SidecarError(err.kind, `Cannot submit job for pod "${namespace}/${name}": ${err.message}`);
      throw err;
    }
    d.store.markSubmitted(uid, id.cluster, id.proc, d.now());
    for (const w of plan.warnings) d.log.warn("create", { uid, warning: w });
    return { PodUID: uid, PodJID: jobIdString(id) };
  }

  /**
   * condor_submit was killed at its timeout: the schedd may have queued the job anyway. Ask it
   * (by the pod's UID) before answering, so that the pod is never left without its job nor
   * submitted twice. If the schedd cannot say, the record stays `creating`: a repeated create,
   * a delete, or the reaper's reconcile settles it.
   */
  async function settleTimedOut(uid: string, name: string, namespace: string, err: SidecarError): Promise<{ PodUID: string; PodJID: string }> {
    let found: JobId | undefined;
    try {
      const r = d.store.get(uid);
      found = r && (await findJobByUid(r));
    } catch (e) {
      reconciled = false;
      d.log.warn("condor_submit timed out and the schedd cannot say whether the job exists; the reaper will find out", { uid, error: message(e) });
      throw new SidecarError("timeout", `Cannot submit job for pod "${namespace}/${name}": ${err.message}; whether HTCondor queued it is not known yet`);
    }
    if (found) {
      d.store.markSubmitted(uid, found.cluster, found.proc, d.now());
      d.log.warn("condor_submit timed out but the job was queued", { uid, jid: jobIdString(found) });
      return { PodUID: uid, PodJID: jobIdString(found) };
    }
    const r = d.store.get(uid);
    if (r) removePodDir(r.dir, secretPaths(r));
    d.store.remove(uid);
    throw new SidecarError("timeout", `Cannot submit job for pod "${namespace}/${name}": ${err.message}`);
  }

  /**
   * The job a create submitted, found by the pod's UID when its id was never recorded (the
   * sidecar died, or condor_submit timed out, between the schedd's commit and the record).
   * The UID is an attribute the job could rewrite, so only jobs queued since the create began
   * count (they cannot have run yet), never one recorded for another pod, and two candidates
   * are a conflict that nothing here can settle: neither is adopted.
   */
  async function findJobByUid(r: Pick<PodRecord, "uid" | "createdAt">): Promise<JobId | undefined> {
    const since = Math.floor(r.createdAt / 1000) - QDATE_SLACK_SECONDS;
    const c = `${sidecarConstraint} && InterLinkPodUID == ${classAdString(r.uid)} && QDate >= ${since}`;
    const attributes = ["ClusterId", "ProcId"];
    const q = await d.condor.query({ constraint: c, attributes });
    const ads = q.length ? q : await d.condor.history({ constraint: c, attributes, limit: 2, scanLimit: 100_000 });
    const ids = ads
      .flatMap((ad) => (typeof ad.ClusterId === "number" && typeof ad.ProcId === "number" ? [{ cluster: ad.ClusterId, proc: ad.ProcId }] : []))
      .filter((id) => (d.store.byJob(id.cluster, id.proc)?.uid ?? r.uid) === r.uid);
    if (ids.length > 1) throw new UidConflict(r.uid, ids);
    return ids[0];
  }

  /** Removes the pod's job and files; `job` is the job id when there was one. */
  async function removeJob(r: PodRecord): Promise<{ outcome: "removed" | "ended" | "pending"; job?: string }> {
    // Recorded first: a sidecar killed between condor_rm and the cleanup finds the removal
    // pending at start and finishes it, instead of keeping the pod's files (secrets) forever.
    if (r.phase !== "removing") d.store.update(r.uid, { phase: "removing" }, d.now());
    let outcome: "removed" | "ended" = "ended";
    let job = jid(r) || undefined;
    try {
      // Even when the pod already has a final status: a job reported lost may only have hidden
      // itself (by rewriting its attributes), and condor_rm of a job that left costs one line.
      // A create interrupted before its job id was recorded: the schedd knows the job.
      const id = r.cluster !== undefined ? jobId(r) : await findJobByUid(r);
      if (id) {
        job = jobIdString(id);
        outcome = (await d.condor.remove(id, "interLink deleted the pod")) === "removed" ? "removed" : "ended";
      }
    } catch (err) {
      d.log.warn("condor_rm failed; the reaper will retry", { uid: r.uid, jid: job, error: message(err) });
      return { outcome: "pending", job };
    }
    removePodDir(r.dir, secretPaths(r));
    d.store.update(r.uid, { phase: "deleted" }, d.now());
    lastFetch.delete(r.uid);
    return { outcome, job };
  }

  function podMeta(body: unknown): { uid: string; name: string; namespace: string } | undefined {
    const md = (body as { metadata?: { uid?: unknown; name?: unknown; namespace?: unknown } } | null)?.metadata;
    if (!md || typeof md.uid !== "string" || md.uid === "") return undefined;
    return { uid: md.uid, name: typeof md.name === "string" ? md.name : "", namespace: typeof md.namespace === "string" ? md.namespace : "" };
  }

  function credentialProblem(): string | undefined {
    if (!d.credentialFile || !d.readCredential) return undefined;
    const text = d.readCredential(d.credentialFile);
    if (text === undefined) return `credential file ${d.credentialFile} is missing`;
    const exp = text.includes("-----BEGIN CERTIFICATE-----") ? d.certificateExpiry?.(text) : jwtExpiry(text);
    if (exp !== undefined && exp <= d.now()) return `credential ${d.credentialFile} expired at ${new Date(exp).toISOString()}`;
    return undefined;
  }

  /**
   * Jobs of this sidecar the store does not know: the store file was lost, or a pod was deleted
   * while its create was interrupted. Jobs of deleted pods are removed; the others are adopted
   * when their pod folder is still there (a pod deleted before the loss has no folder).
   */
  async function adoptOrRemove(ads: readonly JobAd[], inQueue: boolean): Promise<void> {
    // Jobs whose id is recorded are known, whatever their ad claims now (the status path checks
    // their identity). Of the others, a UID claimed by two jobs is adopted by neither.
    const claims = new Map<string, JobAd[]>();
    for (const ad of ads) {
      const uid = ad.InterLinkPodUID;
      if (typeof uid !== "string" || typeof ad.ClusterId !== "number" || typeof ad.ProcId !== "number") continue;
      if (d.store.byJob(ad.ClusterId, ad.ProcId)) continue;
      claims.set(uid, [...(claims.get(uid) ?? []), ad]);
    }
    for (const [uid, claimants] of claims) {
      const ad = claimants[0]!;
      const id = { cluster: ad.ClusterId as number, proc: ad.ProcId as number };
      const known = d.store.get(uid);
      if (known?.phase === "deleted" || known?.phase === "removing") {
        // Removing a job that claims a deleted pod removes only that job, whoever it really is.
        for (const c of inQueue && known.cluster === undefined ? claimants : []) {
          const cid = { cluster: c.ClusterId as number, proc: c.ProcId as number };
          await d.condor.remove(cid, "interLink deleted the pod");
          d.log.info("removed the job of a pod deleted while its create was interrupted", { uid, jid: jobIdString(cid) });
        }
        continue;
      }
      if (known) continue;
      if (claimants.length > 1) {
        d.log.error("several jobs claim one pod; adopting none of them", { uid, jids: claimants.map((a) => `${a.ClusterId}.${a.ProcId}`) });
        continue;
      }
      const containers = parseContainerList(ad.InterLinkContainers);
      if (!containers) {
        d.log.warn("found a job of this sidecar with no container list; leaving it alone", { jid: jobIdString(id) });
        continue;
      }
      const dir = podDir(d.dataRoot, uid);
      if (!inQueue && !isDir(dir)) continue;
      d.store.insertCreating({
        uid,
        name: String(ad.InterLinkPodName ?? ""),
        namespace: String(ad.InterLinkPodNamespace ?? ""),
        dir,
        spooled: d.spool,
        containers,
        secrets: [],
        createdAt: d.now(),
      });
      d.store.markSubmitted(uid, id.cluster, id.proc, d.now());
      noteWidth(containers);
      d.log.info("adopted a job from the schedd", { uid, jid: jobIdString(id), inQueue });
    }
  }

  const logService = createLogService({
    store: d.store,
    condor: d.condor,
    config: d.config,
    log: d.log,
    now: d.now,
    async jobStatus(r) {
      const ad = (await queueSnapshot().catch(() => undefined))?.ads.get(jid(r));
      return ad ? adNumber(ad, "JobStatus") : undefined;
    },
    async containerState(r, c) {
      const k = containerKey(c.name, c.init);
      const ad = (await queueSnapshot().catch(() => undefined))?.ads.get(jid(r));
      // In the queue: the chirped line; gone: the podstate file that came back with the output.
      return ad ? linesFromAd(ad, r.containers).get(k) : readStateFiles(r.dir, [k], unsafeFile(r)).get(k);
    },
    async refresh(r) {
      await statusOf([r]).catch(() => undefined);
    },
    async fetchOutput(r) {
      await fetchOutput(r);
    },
  });

  async function reconcile(): Promise<void> {
    // Creates interrupted between submit and record: the schedd knows the truth.
    for (const r of d.store.list(["creating"])) {
      if (inflight.has(r.uid)) continue; // a create running now settles itself
      let found: JobId | undefined;
      try {
        found = await findJobByUid(r);
      } catch (err) {
        if (!(err instanceof UidConflict)) throw err;
        d.log.error("an interrupted create is left undecided", { uid: r.uid, error: err.message });
        continue;
      }
      if (found) {
        d.store.markSubmitted(r.uid, found.cluster, found.proc, d.now());
        d.log.info("reconciled an interrupted create", { uid: r.uid, jid: jobIdString(found) });
      } else {
        removePodDir(r.dir, secretPaths(r));
        d.store.remove(r.uid);
        d.log.info("dropped an interrupted create that never reached HTCondor", { uid: r.uid });
      }
    }
    const fields = ["ClusterId", "ProcId", "InterLinkPodUID", "InterLinkPodName", "InterLinkPodNamespace", "InterLinkContainers"];
    await adoptOrRemove(await d.condor.query({ constraint: sidecarConstraint, attributes: fields }), true);
    // Pod folders with no record: the store was lost after their jobs had left the queue.
    if (listPodDirs(d.dataRoot).some((uid) => !d.store.get(uid))) {
      await adoptOrRemove(
        await d.condor.history({ constraint: sidecarConstraint, attributes: fields, limit: ADOPT_HISTORY_LIMIT, scanLimit: ADOPT_HISTORY_SCAN }),
        false,
      );
    }
    reconciled = true;
  }

  async function reap(): Promise<void> {
    if (!reconciled) {
      try {
        await reconcile();
      } catch (err) {
        d.log.warn("reconcile with the schedd failed; retrying on the next pass", { error: message(err) });
      }
    }
    for (const r of d.store.list(["removing"])) await removeJob(r);
    for (const r of d.store.list(["deleted"])) {
      if (d.now() - r.updatedAt > TOMBSTONE_TTL_MS) d.store.remove(r.uid);
    }
  }

  return {
    async create(body) {
      const uid = podMeta((body as { pod?: unknown } | null)?.pod)?.uid;
      if (uid) {
        const running = inflight.get(uid);
        if (running) return running;
      }
      const p = doCreate(body);
      if (uid) {
        inflight.set(uid, p);
        p.finally(() => inflight.delete(uid)).catch(() => {});
      }
      return p;
    },

    async remove(body) {
      const meta = podMeta(body);
      if (!meta) throw new SidecarError("invalid", "delete: metadata.uid is missing");
      if (!isPodUid(meta.uid)) throw new SidecarError("invalid", `delete: metadata.uid ${JSON.stringify(meta.uid.slice(0, 64))} must be 1-128 letters, digits or '-'`);
      await inflight.get(meta.uid)?.catch(() => undefined);
      const r = d.store.get(meta.uid);
      if (!r) {
        // A tombstone keeps a late create for this pod from submitting a job (spec: interlink §3),
        // and tells reconcile to remove a job of this pod it finds later (a lost store).
        d.store.insertCreating({ uid: meta.uid, name: meta.name, namespace: meta.namespace, dir: podDir(d.dataRoot, meta.uid), spooled: false, containers: [], secrets: [], createdAt: d.now() });
        d.store.update(meta.uid, { phase: "deleted" }, d.now());
        return `Pod ${meta.uid} is not known here; nothing to remove`;
      }
      if (r.phase === "deleted") return `Pod ${meta.uid} was already deleted`;
      const { outcome, job } = await removeJob(r);
      if (outcome === "pending") return `Pod ${r.namespace}/${r.name}: removal of job ${job ?? "(not yet known)"} is pending; it is retried until HTCondor confirms`;
      return `Pod ${r.namespace}/${r.name} deleted${job ? (outcome === "removed" ? ` (job ${job} removed)` : ` (job ${job} had already ended)`) : ""}`;
    },

    async status(pods) {
      const records: PodRecord[] = [];
      for (const p of pods) {
        const meta = podMeta(p);
        if (!meta) continue;
        const r = d.store.get(meta.uid);
        if (r && r.phase !== "deleted" && r.phase !== "removing") records.push(r);
      }
      const statuses = await statusOf(records);
      // Pods left out because condor_q failed: say so (interLink keeps their last state).
      const live = records.some((r) => r.phase === "submitted" && r.terminal === undefined);
      return { statuses, stale: live ? staleness() : undefined } satisfies StatusAnswer;
    },

    async ping() {
      const problem = credentialProblem();
      // The collector (condor_status) for the pool's capacity; the schedd (condor_q, the same
      // cached snapshot status uses) because a pool whose schedd is down cannot run pods.
      const [machines] = await Promise.all([
        d.condor.machines(["Name", "Cpus", "Memory", "GPUs", "TotalSlotCpus", "SlotType"]).then(
          (m) => {
            ok(collector);
            lastMachines = m;
            return m;
          },
          (err) => {
            failed(collector, err);
            d.log.warn("ping: condor_status failed", { failures: collector.failures, error: message(err) });
            return undefined;
          },
        ),
        // A slow condor_q must not hold the ping: it counts for the schedd when it ends.
        Promise.race([
          queueSnapshot().catch((err) => d.log.warn("ping: condor_q failed", { failures: schedd.failures, error: message(err) })),
          new Promise<void>((r) => setTimeout(r, PING_SCHEDD_WAIT_MS).unref?.()),
        ]),
      ]);
      const limit = d.config.PingFailureThreshold;
      const down = [schedd.failures >= limit ? `schedd: ${schedd.error}` : "", collector.failures >= limit ? `collector: ${collector.error}` : ""].filter(Boolean);
      const failing = [schedd.failures > 0 ? "condor_q" : "", collector.failures > 0 ? "condor_status" : ""].filter(Boolean);
      const healthy = !problem && down.length === 0;
      const body: Record<string, unknown> = {
        status: problem
          ? `unhealthy: ${problem}`
          : !healthy
            ? `unhealthy: HTCondor unreachable (${down.join("; ")})`
            : failing.length > 0
              ? `degraded: ${failing.join(" and ")} failing`
              : "ok",
      };
      // Capacity only from a condor_status that answered: zeros would shrink the node to nothing.
      const m = machines ?? lastMachines;
      if (m) {
        const sum = (k: string) => m.reduce((s, ad) => s + (adNumber(ad, k) ?? 0), 0);
        // The node advertises the smaller of the pool's totals and the configured caps.
        const quantity = (q: string | undefined, unit: number) => {
          const v = q === undefined ? undefined : tryParseQuantity(q);
          return v === undefined ? Infinity : Number(v.num) / Number(v.den) / unit;
        };
        body.resources = {
          cpu: String(Math.floor(Math.min(sum("Cpus"), quantity(d.config.Node.Cpu, 1)))),
          memory: `${Math.floor(Math.min(sum("Memory"), quantity(d.config.Node.Memory, 1024 * 1024)))}Mi`,
          pods: d.config.Node.Pods,
          accelerators: [{ resourceType: "nvidia.com/gpu", available: String(Math.floor(Math.min(sum("GPUs"), d.config.Node.Gpus ?? Infinity))) }],
        };
      }
      if (d.config.Node.Taints) body.taints = d.config.Node.Taints;
      return { healthy, body };
    },

    logs: (body, signal) => logService.logs(body, signal),

    async systemInfo() {
      let connected = false;
      let output = "";
      try {
        const m = await d.condor.machines(["Name", "State", "Activity", "Cpus", "Memory"]);
        connected = true;
        output = `${m.length} slot(s): ${m.map((ad) => `${ad.Name} ${ad.State}/${ad.Activity}`).join(", ")}`.slice(0, 2000);
      } catch (err) {
        output = message(err);
      }
      return {
        status: connected && schedd.failures === 0 ? "healthy" : "unhealthy",
        timestamp: new Date(d.now()).toISOString(),
        htcondor_connected: connected,
        condor_status_output: output,
        condor_q_failing_since: schedd.since === undefined ? null : new Date(schedd.since).toISOString(),
        version: d.version,
        uptime_seconds: Math.floor((d.now() - startedAt) / 1000),
        tracked_pods: d.store.count(),
      };
    },

    reconcile,

    reap() {
      reaping ??= reap().finally(() => (reaping = undefined));
      return reaping;
    },

    async drain(deadlineMs) {
      const work = Promise.allSettled([...inflight.values(), reaping]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
      clearTimeout(timer);
    },
  };
}

/** Two jobs claim one pod UID (see findJobByUid): neither is adopted, and an operator must look. */
class UidConflict extends SidecarError {
  constructor(uid: string, ids: readonly JobId[]) {
    super("unavailable", `Jobs ${ids.map(jobIdString).join(" and ")} both claim pod ${uid}; neither is adopted: remove the one that is not the pod's (condor_rm)`);
  }
}

/** `MY.InterLinkContainers` = "i.init-a c.main c.side" (names are DNS labels, so plain tokens survive). */
export function parseContainerList(v: unknown): { name: string; init: boolean; image: string }[] | undefined {
  if (typeof v !== "string" || v.trim() === "") return undefined;
  const out = [];
  for (const tok of v.trim().split(/\s+/)) {
    const m = /^([ic])\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(tok);
    if (!m) return undefined;
    out.push({ name: m[2]!, init: m[1] === "i", image: "" });
  }
  return out;
}

/** The `exp` of a JWT, in epoch milliseconds. */
function jwtExpiry(text: string): number | undefined {
  const token = text.split("\n").map((l) => l.trim()).find((l) => l && !l.startsWith("#"));
  const parts = token?.split(".");
  if (!parts || parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { exp?: unknown };
    return typeof payload.exp === "number" ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function semaphore(max: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async (fn) => {
    if (active >= max) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
