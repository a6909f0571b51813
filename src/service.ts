/**
 * The use cases: create, delete, status, ping, logs, system-info, and the background reaper.
 * Data flows one way: validate → plan → render → condor → store → status mapping.
 */
import type { Api } from "./app.ts";
import type { Condor } from "./condor/cli.ts";
import { type JobAd, type JobId, adNumber, classAdString, jobIdString } from "./condor/parse.ts";
import { SidecarError } from "./core/errors.ts";
import { parseCreateRequest } from "./core/pod.ts";
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
import { fileSize, podDir, readStateFiles, removeFiles, removePodDir, writePodFiles } from "./store/files.ts";
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
  log: Logger;
  /** Epoch milliseconds. */
  now: () => number;
  version: string;
}

export interface Service extends Api {
  /** Brings the store in line with the schedd after a restart (interrupted creates, lost store). */
  reconcile(): Promise<void>;
  /** One pass of the background work: pending removals, tombstone pruning. */
  reap(): Promise<void>;
}

/** Attributes the status path asks condor_q/condor_history for (never the whole ad). */
const BASE_ATTRS = [
  "ClusterId",
  "ProcId",
  "JobStatus",
  "InterLinkPodUID",
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

export function createService(d: ServiceDeps): Service {
  const sidecarConstraint = `InterLinkSidecarId == ${classAdString(d.planConfig.sidecarId)}`;
  const inflight = new Map<string, Promise<{ PodUID: string; PodJID: string }>>();
  const startedAt = d.now();
  const submitSlots = semaphore(d.config.MaxConcurrentSubmits);
  const statusCacheMs = d.config.StatusCacheSeconds * 1000;
  let snapshot: { at: number; ads: Map<string, JobAd> } | undefined;
  let snapshotInFlight: Promise<Map<string, JobAd>> | undefined;
  let consecutiveFailures = 0;
  let lastMachines: JobAd[] | undefined;

  const jid = (r: PodRecord) => (r.cluster === undefined ? "" : `${r.cluster}.${r.proc}`);
  const jobId = (r: PodRecord): JobId => ({ cluster: r.cluster!, proc: r.proc! });
  const keys = (r: PodRecord) => r.containers.map((c) => containerKey(c.name, c.init));
  const identity = (r: PodRecord) => ({ uid: r.uid, name: r.name, namespace: r.namespace, jid: jid(r), containers: r.containers as ContainerInfo[] });
  const secretPaths = (r: PodRecord) => r.containers.map((c) => `env/${containerKey(c.name, c.init)}.env`);

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

  /** One condor_q for every pod of this sidecar, shared by concurrent callers and cached briefly. */
  async function queueSnapshot(): Promise<Map<string, JobAd>> {
    if (snapshot && d.now() - snapshot.at < statusCacheMs) return snapshot.ads;
    if (snapshotInFlight) return snapshotInFlight;
    snapshotInFlight = (async () => {
      try {
        const ads = await d.condor.query(sidecarConstraint, stateAttrs());
        const byUid = new Map<string, JobAd>();
        for (const ad of ads) {
          const uid = ad.InterLinkPodUID;
          if (typeof uid === "string") byUid.set(uid, ad);
        }
        snapshot = { at: d.now(), ads: byUid };
        consecutiveFailures = 0;
        return byUid;
      } catch (err) {
        consecutiveFailures++;
        throw err;
      } finally {
        snapshotInFlight = undefined;
      }
    })();
    return snapshotInFlight;
  }

  function finalize(r: PodRecord, status: PodStatus): PodStatus {
    d.store.update(r.uid, { terminal: JSON.stringify(status) }, d.now());
    // The job has left: its secrets are no longer needed on the submit side.
    removeFiles(r.dir, secretPaths(r));
    return status;
  }

  async function fetchOutput(r: PodRecord): Promise<void> {
    if (!r.spooled || r.outputFetched) return;
    await d.condor.transferData(jobId(r));
    // condor_transfer_data prints success even for a job that does not exist (observed): check.
    if (fileSize(`${r.dir}/job.log`) === undefined && fileSize(`${r.dir}/podstate`) === undefined) {
      d.log.warn("output not found after condor_transfer_data", { uid: r.uid, jid: jid(r) });
    }
    d.store.update(r.uid, { outputFetched: true }, d.now());
    r.outputFetched = true;
  }

  async function observeEnded(r: PodRecord, ad: JobAd, inQueue = false): Promise<PodStatus> {
    try {
      await fetchOutput(r);
    } catch (err) {
      d.log.warn("cannot fetch spooled output", { uid: r.uid, error: String(err) });
      // Still in the queue, the output can be fetched on a later pass: not final yet.
      if (inQueue) return podStatus(identity(r), { kind: "queued", ad });
    }
    const files = readStateFiles(r.dir, keys(r));
    // Chirped lines are the fallback when the files did not come back.
    const chirped = linesFromAd(ad, r.containers);
    const lines = new Map<string, StateLine>(chirped);
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
    const message = `${typeof ad.HoldReason === "string" ? ad.HoldReason : "held"} (HoldReasonCode ${code}); removed by the sidecar`;
    try {
      await d.condor.remove(jobId(r), `htcondor-sidecar: unrecoverable hold ${code}`);
    } catch (err) {
      d.log.warn("cannot remove unrecoverably held job; retrying next time", { uid: r.uid, error: String(err) });
      return podStatus(identity(r), { kind: "queued", ad });
    }
    const lines = new Map([...linesFromAd(ad, r.containers)]);
    return finalize(r, podStatus(identity(r), { kind: "failed", reason, message, exitCode: reason === "OOMKilled" ? 137 : 1, lines }));
  }

  async function statusOf(records: PodRecord[]): Promise<PodStatus[]> {
    const out: PodStatus[] = [];
    const live = records.filter((r) => r.phase !== "creating" && r.terminal === undefined && r.cluster !== undefined);
    let ads: Map<string, JobAd> | undefined;
    if (live.length > 0) {
      try {
        ads = await queueSnapshot();
      } catch (err) {
        d.log.warn("condor_q failed; those pods are left out, so interLink keeps their last state", { error: err instanceof Error ? err.message : String(err) });
      }
    }
    const gone = ads ? live.filter((r) => !ads!.has(r.uid)) : [];
    let history = new Map<string, JobAd>();
    if (gone.length > 0) {
      try {
        const found = await d.condor.history({
          ids: gone.map(jobId),
          constraint: sidecarConstraint,
          attributes: stateAttrs(),
          limit: gone.length,
          scanLimit: Math.max(10_000, gone.length * 10),
        });
        history = new Map(found.map((ad) => [`${ad.ClusterId}.${ad.ProcId}`, ad]));
      } catch (err) {
        d.log.warn("condor_history failed; those pods are left out, so interLink keeps their last state", { error: String(err) });
        history = new Map();
        ads = undefined;
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
      // had (spec: interlink §5.3, "Missing pod in the response").
      if (!ads) continue;
      let st: PodStatus | undefined;
      const ad = ads.get(r.uid);
      if (ad) {
        const js = adNumber(ad, "JobStatus");
        if (js === 4) st = await observeEnded(r, ad, true); // spooled: stays in the queue until fetched
        else if (js === 5) st = await observeHeld(r, ad);
        else st = podStatus(identity(r), { kind: "queued", ad });
        if (r.missingSince !== undefined) d.store.update(r.uid, { missingSince: undefined }, d.now());
      } else {
        const h = history.get(jid(r));
        if (h) {
          st = await observeEnded(r, h);
        } else {
          const since = r.missingSince ?? d.now();
          if (r.missingSince === undefined) d.store.update(r.uid, { missingSince: since }, d.now());
          // A job between queue and history for a moment is normal; gone for a minute is lost.
          if (d.now() - since > 60_000) {
            st = finalize(r, podStatus(identity(r), { kind: "lost", message: `Job ${jid(r)} is in neither the queue nor the history` }));
          }
        }
      }
      if (st) out.push(st);
    }
    return out;
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
      // Left by a crash between submit and record: the schedd knows whether the job exists.
      const found = await findJobByUid(uid);
      if (found) {
        d.store.markSubmitted(uid, found.cluster, found.proc, d.now());
        return { PodUID: uid, PodJID: jobIdString(found) };
      }
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
    d.store.insertCreating({ uid, name, namespace, dir, spooled: d.spool, containers, createdAt: d.now() });
    noteWidth(containers);
    try {
      const enc = new TextEncoder();
      try {
        writePodFiles(dir, [
          ...plan.files,
          { path: "job.sh", content: enc.encode(wrapper), mode: 0o700, secret: false },
          { path: "job.sub", content: enc.encode(submit), mode: 0o600, secret: false },
        ]);
      } catch (err) {
        throw new SidecarError("unavailable", `cannot write the job's files under ${dir}: ${err instanceof Error ? err.message : String(err)}`);
      }
      const id = await submitSlots(() => d.condor.submit(dir, "job.sub", d.spool));
      d.store.markSubmitted(uid, id.cluster, id.proc, d.now());
      for (const w of plan.warnings) d.log.warn("create", { uid, warning: w });
      return { PodUID: uid, PodJID: jobIdString(id) };
    } catch (err) {
      // Best effort: the disk may be what failed; the reason the caller sees is the first error.
      for (const cleanup of [() => removePodDir(dir, plan.files.filter((f) => f.secret).map((f) => f.path)), () => d.store.remove(uid)]) {
        try {
          cleanup();
        } catch (e) {
          d.log.error("cannot clean up after a failed create", { uid, dir, error: String(e) });
        }
      }
      if (err instanceof SidecarError) {
        throw new SidecarError(err.kind, `Cannot submit job for pod "${namespace}/${name}": ${err.message}`);
      }
      throw err;
    }
  }

  async function findJobByUid(uid: string): Promise<JobId | undefined> {
    const c = `${sidecarConstraint} && InterLinkPodUID == ${classAdString(uid)}`;
    const q = await d.condor.query(c, ["ClusterId", "ProcId"]);
    const h = q.length ? q : await d.condor.history({ constraint: c, attributes: ["ClusterId", "ProcId"], limit: 1, scanLimit: 100_000 });
    const ad = h[0];
    return ad && typeof ad.ClusterId === "number" && typeof ad.ProcId === "number" ? { cluster: ad.ClusterId, proc: ad.ProcId } : undefined;
  }

  async function removeJob(r: PodRecord): Promise<"done" | "pending"> {
    // Recorded first: a sidecar killed between condor_rm and the cleanup finds the removal
    // pending at start and finishes it, instead of keeping the pod's files (secrets) forever.
    if (r.phase !== "removing") d.store.update(r.uid, { phase: "removing" }, d.now());
    if (r.cluster !== undefined && r.terminal === undefined) {
      try {
        await d.condor.remove(jobId(r), "interLink deleted the pod");
      } catch (err) {
        d.log.warn("condor_rm failed; the reaper will retry", { uid: r.uid, jid: jid(r), error: err instanceof Error ? err.message : String(err) });
        return "pending";
      }
    }
    removePodDir(r.dir, secretPaths(r));
    d.store.update(r.uid, { phase: "deleted" }, d.now());
    return "done";
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
    const exp = jwtExpiry(text);
    if (exp !== undefined && exp * 1000 <= d.now()) return `credential ${d.credentialFile} expired at ${new Date(exp * 1000).toISOString()}`;
    return undefined;
  }

  const logService = createLogService({
    store: d.store,
    condor: d.condor,
    config: d.config,
    log: d.log,
    now: d.now,
    async jobStatus(r) {
      const ads = await queueSnapshot().catch(() => undefined);
      const ad = ads?.get(r.uid);
      return ad ? adNumber(ad, "JobStatus") : undefined;
    },
    async refresh(r) {
      await statusOf([r]).catch(() => undefined);
    },
    fetchOutput,
  });

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
      await inflight.get(meta.uid)?.catch(() => undefined);
      const r = d.store.get(meta.uid);
      if (!r) {
        // A tombstone keeps a late create for this pod from submitting a job (spec: interlink §3).
        d.store.insertCreating({ uid: meta.uid, name: meta.name, namespace: meta.namespace, dir: podDir(d.dataRoot, meta.uid), spooled: false, containers: [], createdAt: d.now() });
        d.store.update(meta.uid, { phase: "deleted" }, d.now());
        return `Pod ${meta.uid} is not known here; nothing to remove`;
      }
      if (r.phase === "deleted") return `Pod ${meta.uid} was already deleted`;
      const outcome = await removeJob(r);
      const job = r.cluster === undefined ? "" : r.terminal !== undefined ? ` (job ${jid(r)} had ended)` : ` (job ${jid(r)} removed)`;
      return outcome === "done"
        ? `Pod ${r.namespace}/${r.name} deleted${job}`
        : `Pod ${r.namespace}/${r.name}: removal of job ${jid(r)} is pending; it is retried until HTCondor confirms`;
    },

    async status(pods) {
      const records: PodRecord[] = [];
      for (const p of pods) {
        const meta = podMeta(p);
        if (!meta) continue;
        const r = d.store.get(meta.uid);
        if (r && r.phase !== "deleted" && r.phase !== "removing") records.push(r);
      }
      return statusOf(records);
    },

    async ping() {
      const problem = credentialProblem();
      let machines: JobAd[] | undefined;
      try {
        machines = await d.condor.machines(["Name", "Cpus", "Memory", "GPUs", "TotalSlotCpus", "SlotType"]);
        lastMachines = machines;
        consecutiveFailures = 0;
      } catch (err) {
        consecutiveFailures++;
        d.log.warn("ping: condor_status failed", { failures: consecutiveFailures, error: err instanceof Error ? err.message : String(err) });
      }
      const degraded = consecutiveFailures > 0;
      const healthy = !problem && consecutiveFailures < d.config.PingFailureThreshold;
      const m = machines ?? lastMachines ?? [];
      const sum = (k: string) => m.reduce((s, ad) => s + (adNumber(ad, k) ?? 0), 0);
      // The node advertises the smaller of the pool's totals and the configured caps.
      const quantity = (q: string | undefined, unit: number) => {
        const v = q === undefined ? undefined : tryParseQuantity(q);
        return v === undefined ? Infinity : Number(v.num) / Number(v.den) / unit;
      };
      const cpu = Math.min(sum("Cpus"), quantity(d.config.Node.Cpu, 1));
      const memMiB = Math.min(sum("Memory"), quantity(d.config.Node.Memory, 1024 * 1024));
      const gpus = Math.min(sum("GPUs"), d.config.Node.Gpus ?? Infinity);
      const body: Record<string, unknown> = {
        status: problem ? `unhealthy: ${problem}` : healthy ? (degraded ? "degraded: condor_status failed" : "ok") : "unhealthy: HTCondor unreachable",
        resources: {
          cpu: String(Math.floor(cpu)),
          memory: `${Math.floor(memMiB)}Mi`,
          pods: d.config.Node.Pods,
          accelerators: [{ resourceType: "nvidia.com/gpu", available: String(Math.floor(gpus)) }],
        },
      };
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
        output = err instanceof Error ? err.message : String(err);
      }
      return {
        status: connected ? "healthy" : "unhealthy",
        timestamp: new Date(d.now()).toISOString(),
        htcondor_connected: connected,
        condor_status_output: output,
        version: d.version,
        uptime_seconds: Math.floor((d.now() - startedAt) / 1000),
        tracked_pods: d.store.count(),
      };
    },

    async reconcile() {
      // Creates interrupted between submit and record: the schedd knows the truth.
      for (const r of d.store.list(["creating"])) {
        const found = await findJobByUid(r.uid);
        if (found) {
          d.store.markSubmitted(r.uid, found.cluster, found.proc, d.now());
          d.log.info("reconciled an interrupted create", { uid: r.uid, jid: jobIdString(found) });
        } else {
          removePodDir(r.dir, secretPaths(r));
          d.store.remove(r.uid);
          d.log.info("dropped an interrupted create that never reached HTCondor", { uid: r.uid });
        }
      }
      // Jobs of ours the store does not know (a lost store file): adopt them if their folder is there.
      const ads = await d.condor.query(sidecarConstraint, ["ClusterId", "ProcId", "InterLinkPodUID", "InterLinkPodName", "InterLinkPodNamespace", "InterLinkContainers"]);
      for (const ad of ads) {
        const uid = ad.InterLinkPodUID;
        if (typeof uid !== "string" || d.store.get(uid)) continue;
        const containers = parseContainerList(ad.InterLinkContainers);
        if (!containers) {
          d.log.warn("found a job of this sidecar with no container list; leaving it alone", { jid: `${ad.ClusterId}.${ad.ProcId}` });
          continue;
        }
        d.store.insertCreating({
          uid,
          name: String(ad.InterLinkPodName ?? ""),
          namespace: String(ad.InterLinkPodNamespace ?? ""),
          dir: podDir(d.dataRoot, uid),
          spooled: d.spool,
          containers,
          createdAt: d.now(),
        });
        d.store.markSubmitted(uid, Number(ad.ClusterId), Number(ad.ProcId), d.now());
        noteWidth(containers);
        d.log.info("adopted a job from the schedd", { uid, jid: `${ad.ClusterId}.${ad.ProcId}` });
      }
    },

    async reap() {
      for (const r of d.store.list(["removing"])) await removeJob(r);
      for (const r of d.store.list(["deleted"])) {
        if (d.now() - r.updatedAt > TOMBSTONE_TTL_MS) d.store.remove(r.uid);
      }
    },
  };
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

function jwtExpiry(text: string): number | undefined {
  const token = text.split("\n").map((l) => l.trim()).find((l) => l && !l.startsWith("#"));
  const parts = token?.split(".");
  if (!parts || parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { exp?: unknown };
    return typeof payload.exp === "number" ? payload.exp : undefined;
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
