/**
 * Several schedds (docs/schedds.md): one service per schedd, each as the sidecar is with one schedd
 * (its own store, pod folders, event log, queue view, submitter and remover), and this router in
 * front. Job ids are per schedd (docs/htcondor.md#several-schedds-in-one-pool), so a pod's job is
 * known by its schedd and its id: the service whose store holds the pod is the only one that ever
 * asks about it, removes it or reads its logs, and no schedd is asked about another's jobs. A
 * request is routed by the pod's UID to the member whose store holds it, never by its JID: each
 * member answers its pods' final JIDs itself (docs/schedds.md#job-ids), and the router passes them on.
 *
 * A create goes to the schedd with the fewest idle jobs of this sidecar per unit of weight among
 * those that answer. A submit that failed without queueing anything (the service dropped the pod's
 * record: condor_submit exited non-zero, which commits nothing) is retried on the next schedd; a
 * submit that may have queued the job (a timeout) stays where it is, as with one schedd.
 */
import type { StatusAnswer } from "../app.ts";
import { SidecarError } from "../core/errors.ts";
import type { LogRequest } from "../core/log-options.ts";
import type { CreateRequest } from "../core/pod.ts";
import type { PodRef } from "../core/requests.ts";
import { tryParseQuantity } from "../core/quantity.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/store.ts";
import type { ServiceView } from "./health.ts";
import type { ScheddService, Service } from "./index.ts";
import { newActivity } from "../core/forgotten.ts";

export interface ScheddMember {
  /** The schedd's name as configured (`Schedds[].Name`). */
  name: string;
  /** `Schedds[].Pool`: members of one pool share its machines, which the ping counts once. */
  pool: string;
  weight: number;
  service: ScheddService;
  /** The member's own store: whether it holds a pod. */
  store: Pick<Store, "get">;
}

/** What the ping and the metrics say of each schedd. */
export interface ScheddState {
  name: string;
  up: boolean;
  view: ServiceView;
}

export interface ScheddRouter extends Service {
  schedds(): ScheddState[];
}

interface NodeCaps {
  Cpu?: string;
  Memory?: string;
  Gpus?: number;
}

/** How often a schedd that stopped answering is asked again (one condor_q of nothing). */
export const PROBE_INTERVAL_MS = 2_000;
/** How long the idle counts placement compares are reused: a burst of creates must not run a query each. */
const IDLE_COUNT_MS = 1_000;

export function createScheddRouter(members: readonly ScheddMember[], o: { log: Logger; now: () => number; node: NodeCaps }): ScheddRouter {
  const state = members.map((m) => ({ m, down: false, inflight: 0, ended: 0, idle: 0, countedAt: -Infinity }));
  type Member = (typeof state)[number];
  const creating = new Map<string, Promise<{ PodUID: string; PodJID: string }>>();
  let prober: ReturnType<typeof setInterval> | undefined;
  // One clock of status calls (docs/status.md#pods-interlink-forgot): a call about a pod on one schedd is activity for all.
  const activity = newActivity();
  for (const m of members) m.service.shareActivity?.(activity);

  const holder = (uid: string): Member | undefined => state.find((s) => s.m.store.get(uid) !== undefined);
  const up = (s: Member) => !s.down && !s.m.service.scheddFailing();

  function score(s: Member): number {
    if (o.now() - s.countedAt >= IDLE_COUNT_MS) {
      s.idle = s.m.service.idleJobs();
      s.ended = 0;
      s.countedAt = o.now();
    }
    return (s.idle + s.inflight + s.ended) / s.m.weight;
  }

  /** The schedd for a new pod: fewest idle jobs by weight among those up and not tried; any untried one when none is up. */
  function pick(tried: ReadonlySet<Member>): Member | undefined {
    const untried = state.filter((s) => !tried.has(s));
    const candidates = untried.some(up) ? untried.filter(up) : untried;
    let best: Member | undefined;
    let bestScore = Infinity;
    for (const s of candidates) {
      const v = score(s);
      // an even score goes to the larger weight (an empty pool fills the heavier schedd first)
      if (v < bestScore || (v === bestScore && best !== undefined && s.m.weight > best.m.weight)) [best, bestScore] = [s, v];
    }
    return best;
  }

  function markDown(s: Member, err: unknown): void {
    if (!s.down) o.log.warn("schedd does not answer; new pods go to the other schedds until it does", { schedd: s.m.name, error: String(err) });
    s.down = true;
    prober ??= setInterval(probeDown, PROBE_INTERVAL_MS);
    (prober as { unref?: () => void }).unref?.();
  }

  function probeDown(): void {
    const down = state.filter((s) => s.down);
    if (down.length === 0) {
      clearInterval(prober);
      prober = undefined;
      return;
    }
    for (const s of down) {
      void s.m.service.probe().then((ok) => {
        if (!ok || !s.down) return;
        s.down = false;
        o.log.info("schedd answers again; it takes new pods", { schedd: s.m.name });
      });
    }
  }

  async function place(req: CreateRequest): Promise<{ PodUID: string; PodJID: string }> {
    const uid = req.pod.metadata.uid;
    // A pod is on one schedd for good: a repeated create asks the one that holds it.
    const known = holder(uid);
    if (known) return await known.m.service.create(req);
    const tried = new Set<Member>();
    let last: unknown;
    for (let s = pick(tried); s; s = pick(tried)) {
      tried.add(s);
      s.inflight++;
      try {
        return await s.m.service.create(req);
      } catch (err) {
        // A failed submit with nothing left of the pod queued nothing: condor_submit exited non-zero
        // (it commits nothing then), or it timed out and the schedd, asked by the pod's UID at once
        // (service/submitter.ts settle), has no such job. A kept record: the schedd may have the job,
        // and only that schedd can say.
        if (!(err instanceof SidecarError) || (err.kind !== "unavailable" && err.kind !== "timeout") || s.m.store.get(uid) !== undefined) throw err;
        last = err;
        markDown(s, err);
      } finally {
        s.inflight--;
        s.ended++;
      }
    }
    throw last;
  }

  /** The pods of a request, by the member that holds each (an unknown pod goes to the first, which knows none). */
  function split<T>(items: readonly T[], uidOf: (t: T) => string): Map<Member, T[]> {
    const out = new Map<Member, T[]>();
    for (const it of items) {
      const s = holder(uidOf(it)) ?? state[0]!;
      out.set(s, [...(out.get(s) ?? []), it]);
    }
    return out;
  }

  return {
    create(req) {
      const uid = req.pod.metadata.uid;
      const running = creating.get(uid);
      if (running) return running;
      const p = place(req);
      creating.set(uid, p);
      p.finally(() => creating.delete(uid)).catch(() => {});
      return p;
    },
    async remove(ref: PodRef) {
      await creating.get(ref.uid)?.catch(() => undefined);
      const s = holder(ref.uid);
      if (s) return s.m.service.remove(ref);
      // Unknown everywhere: each schedd's service keeps a tombstone, so a late create is refused
      // wherever it would go, and a lost store that finds the pod's job on any schedd removes it.
      const said = await Promise.all(state.map((x) => x.m.service.remove(ref)));
      return said[0]!;
    },
    async status(pods: readonly PodRef[]): Promise<StatusAnswer> {
      const parts = await Promise.all([...split(pods, (p) => p.uid)].map(async ([s, ps]) => ({ name: s.m.name, answer: await s.m.service.status(ps) })));
      return mergeStatus(parts);
    },
    ping: () => pingAll(state, up, o.node),
    logs(req: LogRequest, signal: AbortSignal) {
      return (holder(req.PodUID) ?? state[0]!).m.service.logs(req, signal);
    },
    systemInfo: () => systemInfoAll(members),
    async reconcile() {
      const done = await Promise.allSettled(state.map((s) => s.m.service.reconcile()));
      const failed = done.flatMap((d, i) => (d.status === "rejected" ? [`schedd ${state[i]!.m.name}: ${String(d.reason)}`] : []));
      if (failed.length) throw new Error(failed.join("; "));
    },
    async reap() {
      await Promise.all(state.map((s) => s.m.service.reap()));
    },
    view: () => sumViews(state.map((s) => s.m.service.view())),
    async refresh() {
      await Promise.all(state.map((s) => s.m.service.refresh()));
    },
    async drain(deadlineMs) {
      clearInterval(prober);
      prober = undefined;
      await Promise.all(state.map((s) => s.m.service.drain(deadlineMs)));
    },
    schedds: () => state.map((s) => ({ name: s.m.name, up: up(s), view: s.m.service.view() })),
  };
}

/** /system-info of several schedds: healthy while one is, each schedd's own answer under `schedds`. */
async function systemInfoAll(members: readonly ScheddMember[]): Promise<unknown> {
  const infos: Record<string, unknown>[] = await Promise.all(
    members.map(async (m) => ({ name: m.name, ...(await m.service.systemInfo()) as Record<string, unknown> })),
  );
  const healthy = infos.some((i) => i.status === "healthy");
  return { ...infos[0], status: healthy ? "healthy" : "unhealthy", schedds: infos };
}

/** The status answers of several schedds as one, each stale schedd named; each pod's JID is its member's, unchanged. */
function mergeStatus(parts: readonly { name: string; answer: StatusAnswer }[]): StatusAnswer {
  const stale = parts.flatMap(({ name, answer }) => (answer.stale ? [`schedd ${name}: ${answer.stale}`] : []));
  return {
    statuses: parts.flatMap(({ answer }) => answer.statuses),
    stale: stale.length ? stale.join("; ") : undefined,
  };
}

/** The ping over several schedds (docs/schedds.md#when-a-schedd-goes-away): healthy while one schedd is. */
async function pingAll<M extends { m: ScheddMember }>(
  state: readonly M[],
  up: (s: M) => boolean,
  node: NodeCaps,
): Promise<{ healthy: boolean; body: unknown }> {
  const answers = await Promise.all(state.map(async (s) => ({ s, a: await s.m.service.ping() })));
  const healthy = answers.filter(({ a }) => a.healthy);
  const body = (a: { body: unknown }) => a.body as { status?: string; resources?: Record<string, unknown>; taints?: unknown };
  const statusOf = (x: (typeof answers)[number]) => `${x.s.m.name}: ${body(x.a).status ?? "unknown"}`;
  const notOk = answers.filter((x) => body(x.a).status !== "ok");
  const out: Record<string, unknown> = {
    status: healthy.length === 0
      ? `unhealthy: no schedd answers (${answers.map(statusOf).join("; ")})`
      : notOk.length > 0
      ? `degraded: ${notOk.map(statusOf).join("; ")}`
      : "ok",
    // up: takes new pods (it answered its last condor_q and its ping is healthy)
    schedds: answers.map((x) => ({ name: x.s.m.name, up: x.a.healthy && up(x.s), status: body(x.a).status })),
  };
  const resources = sumResources(healthy.map((x) => ({ pool: x.s.m.pool, resources: body(x.a).resources })), node);
  if (resources) out.resources = resources;
  const forgotten = answers.flatMap((x) => (body(x.a) as { forgotten?: { count: number; pods: unknown[] } }).forgotten ?? []);
  if (forgotten.length) out.forgotten = { count: forgotten.reduce((n, f) => n + f.count, 0), pods: forgotten.flatMap((f) => f.pods).slice(0, 50) };
  const taints = body(answers[0]!.a).taints;
  if (taints) out.taints = taints;
  return { healthy: healthy.length > 0, body: out };
}

/** The gauges' view of several schedds: pods summed; a failure streak is the shortest (the sidecar works while one schedd does). */
function sumViews(views: readonly ServiceView[]): ServiceView {
  const pods: Record<string, number> = {};
  for (const v of views) for (const [k, n] of Object.entries(v.pods)) pods[k] = (pods[k] ?? 0) + n;
  const expiries = views.flatMap((v) => (v.credentialExpiry === undefined ? [] : [v.credentialExpiry]));
  const concurrency = views.flatMap((v) => (v.submitConcurrency === undefined ? [] : [v.submitConcurrency]));
  return {
    pods,
    failures: { schedd: Math.min(...views.map((v) => v.failures.schedd)), collector: Math.min(...views.map((v) => v.failures.collector)) },
    threshold: views[0]!.threshold,
    credentialExpiry: expiries.length ? Math.min(...expiries) : undefined,
    snapshotAgeSeconds: Math.max(...views.map((v) => v.snapshotAgeSeconds)),
    submitConcurrency: concurrency.length ? concurrency.reduce((a, b) => a + b, 0) : undefined,
    forgottenPods: views.reduce((n, v) => n + (v.forgottenPods ?? 0), 0),
  };
}

/**
 * The node's capacity over the schedds that answer: each pool counted once (schedds of one pool
 * share its machines), then the configured caps again (each member applied them to its own pool).
 */
export function sumResources(
  answers: readonly { pool: string; resources?: Record<string, unknown> }[],
  node: NodeCaps,
): Record<string, unknown> | undefined {
  const byPool = new Map<string, Record<string, unknown>>();
  for (const a of answers) if (a.resources && !byPool.has(a.pool)) byPool.set(a.pool, a.resources);
  if (byPool.size === 0) return undefined;
  const all = [...byPool.values()];
  const cap = (q: string | undefined, unit: number) => {
    const v = q === undefined ? undefined : tryParseQuantity(q);
    return v === undefined ? Infinity : Number(v.num) / Number(v.den) / unit;
  };
  const cpu = all.reduce((n, r) => n + Number(r.cpu ?? 0), 0);
  const memory = all.reduce((n, r) => n + Number(String(r.memory ?? "0").replace(/Mi$/, "")), 0);
  const gpus = all.reduce((n, r) => n + Number((r.accelerators as { available?: string }[] | undefined)?.[0]?.available ?? 0), 0);
  return {
    ...all[0],
    cpu: String(Math.floor(Math.min(cpu, cap(node.Cpu, 1)))),
    memory: `${Math.floor(Math.min(memory, cap(node.Memory, 1024 * 1024)))}Mi`,
    accelerators: [{ resourceType: "nvidia.com/gpu", available: String(Math.floor(Math.min(gpus, node.Gpus ?? Infinity))) }],
  };
}
