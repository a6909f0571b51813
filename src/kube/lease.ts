/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
 * (docs/operator.md#only-one-submits): whoever holds an unexpired Lease leads; the others wait.
 * Expiry is judged by the local clock from when this replica last saw the Lease change, never by
 * comparing its renewTime with our clock, so skewed clocks between nodes do not matter. Every
 * write is a PUT carrying the resourceVersion read, so of two replicas racing, one gets 409.
 */
import type { KubeClient, KubeObject } from "./client.ts";
import { isConflict, isNotFound } from "./errors.ts";
import { LEASES } from "./resources.ts";
import { sleep as defaultSleep } from "../runtime/sleep.ts";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaseLockOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  /** This replica: unique per process (host name and a random suffix). */
  identity: string;
  /** How long a Lease not renewed stays another's (default 15 s, client-go's). */
  leaseDurationSeconds?: number;
  now: () => number;
}

export interface LeaseLock {
  /** Takes the Lease if it is free or expired, renews it if ours; false when another holds it. */
  tryAcquireOrRenew(): Promise<boolean>;
  /** Gives the Lease up, if ours, so that a waiting replica takes it at once. */
  release(): Promise<void>;
  /** The holder last seen. */
  holder(): string | undefined;
  readonly identity: string;
}

/** A Kubernetes MicroTime: RFC 3339 with microseconds. */
export const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

export function createLeaseLock(opts: LeaseLockOptions): LeaseLock {
  const duration = opts.leaseDurationSeconds ?? 15;
  let observed: { spec: string; at: number } | undefined;
  let lastHolder: string | undefined;

  const specOf = (now: number, prior?: LeaseSpec): LeaseSpec => {
    const mine = prior?.holderIdentity === opts.identity;
    return {
      holderIdentity: opts.identity,
      leaseDurationSeconds: duration,
      acquireTime: mine && prior?.acquireTime ? prior.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (prior?.leaseTransitions ?? 0) + (prior?.holderIdentity && !mine ? 1 : 0),
    };
  };

  return {
    async tryAcquireOrRenew() {
      const now = opts.now();
      let lease: Lease;
      try {
        lease = await opts.client.get<Lease>(LEASES, opts.namespace, opts.name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        try {
          await opts.client.create(LEASES, opts.namespace, {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: opts.name, namespace: opts.namespace },
            spec: specOf(now),
          });
        } catch (e) {
          if (isConflict(e)) return false;
          throw e;
        }
        lastHolder = opts.identity;
        observed = undefined;
        return true;
      }
      const spec = lease.spec ?? {};
      const seen = JSON.stringify(spec);
      if (observed?.spec !== seen) observed = { spec: seen, at: now };
      lastHolder = spec.holderIdentity || undefined;
      const held = spec.holderIdentity && spec.holderIdentity !== opts.identity;
      if (held && observed.at + (spec.leaseDurationSeconds ?? duration) * 1000 > now) return false;
      try {
        await opts.client.replace(LEASES, opts.namespace, opts.name, { ...lease, spec: specOf(now, spec) });
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
      lastHolder = opts.identity;
      return true;
    },
    async release() {
      let lease: Lease;
      try {
        lease = await opts.client.get<Lease>(LEASES, opts.namespace, opts.name);
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      if (lease.spec?.holderIdentity !== opts.identity) return;
      const now = opts.now();
      const spec: LeaseSpec = { leaseDurationSeconds: 1, renewTime: microTime(now), leaseTransitions: lease.spec.leaseTransitions ?? 0 };
      try {
        await opts.client.replace(LEASES, opts.namespace, opts.name, { ...lease, spec });
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
      lastHolder = undefined;
    },
    holder: () => lastHolder,
    identity: opts.identity,
  };
}

export interface LeaderElectionOptions {
  lock: LeaseLock;
  /** Between two attempts to take the Lease, and between two renewals (default 2 s). */
  retryMs?: number;
  /** A leader that could not renew for this long stops leading (default 10 s; below the Lease duration). */
  renewDeadlineMs?: number;
  now: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  log?: (message: string) => void;
}

/**
 * Waits for the Lease, then runs `lead` with a signal that aborts when leadership is lost (no
 * renewal by the deadline, another holder, or `lead` itself ending) or when `signal` aborts;
 * gives the Lease back when stopped. Resolves to "lost" or "stopped".
 */
export async function runLeaderElection(
  o: LeaderElectionOptions,
  signal: AbortSignal,
  lead: (leading: AbortSignal) => Promise<void>,
): Promise<"lost" | "stopped"> {
  const sleep = o.sleep ?? defaultSleep;
  const retry = o.retryMs ?? 2000;
  const deadline = o.renewDeadlineMs ?? 10_000;
  const attempt = async () => {
    try {
      return await o.lock.tryAcquireOrRenew();
    } catch (err) {
      o.log?.(`Cannot take or renew the Lease: ${(err as Error).message}`);
      return false;
    }
  };
  while (!signal.aborted && !(await attempt())) await sleep(retry, signal);
  if (signal.aborted) return "stopped";
  const leading = new AbortController();
  let outcome: "lost" | "stopped" = "stopped";
  const lose = () => {
    if (leading.signal.aborted) return;
    outcome = "lost";
    leading.abort();
  };
  const stop = () => leading.abort();
  signal.addEventListener("abort", stop);
  let renewedAt = o.now();
  // The deadline is a timer of its own: a renewal that hangs (a get and a replace, each with its
  // own request timeout) must not keep this replica working while another takes the Lease.
  let watchdog = new AbortController();
  const arm = () => {
    watchdog.abort();
    const w = (watchdog = new AbortController()).signal;
    void sleep(Math.max(0, renewedAt + deadline - o.now()), w).then(() => w.aborted || lose());
  };
  arm();
  // Work that ends (an error, or by itself) ends the term: a leader that does nothing must not keep the Lease.
  const work = lead(leading.signal)
    .then(() => leading.signal.aborted || o.log?.("The leader's work ended; giving up the term"))
    .catch((err) => o.log?.(`The leader's work ended with an error: ${(err as Error).message}`))
    .finally(lose);
  while (!leading.signal.aborted) {
    await sleep(retry, leading.signal);
    if (leading.signal.aborted) break;
    // Each attempt gets only what is left of the deadline; a late answer is not waited for. The
    // timer is cancelled only once the race is decided: cancelling it when the attempt settles
    // (in a `finally`) lets its `false` win the race on V8 (Deno), whose `finally` takes more
    // microtask turns than JavaScriptCore's (Bun), and every renewal would count as missed.
    const left = renewedAt + deadline - o.now();
    const bound = new AbortController();
    const renewed = left <= 0 ? false : await Promise.race([attempt(), sleep(left, bound.signal).then(() => false)]);
    bound.abort();
    if (leading.signal.aborted) break;
    if (renewed) {
      renewedAt = o.now();
      arm();
    } else if (o.now() - renewedAt > deadline || otherHolder(o.lock)) lose();
  }
  watchdog.abort();
  signal.removeEventListener("abort", stop);
  await work;
  if (outcome === "stopped") await o.lock.release().catch((err) => o.log?.(`Cannot release the Lease: ${(err as Error).message}`));
  return outcome;
}

/** Another replica holds the Lease now: leadership is lost at once, not at the deadline. */
const otherHolder = (lock: LeaseLock) => lock.holder() !== undefined && lock.holder() !== lock.identity;
