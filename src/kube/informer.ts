/**
 * List, then watch from the list's resourceVersion; keep a cache of the objects; list again on
 * 410 Gone; back off on other errors; come back after an API-server restart
 * (docs/operator.md#watching). Level-triggered use: the handler is told "look at this object
 * again", and a re-list tells it about every object, including the ones deleted meanwhile.
 */
import { backoffDelay, type BackoffPolicy, DEFAULT_BACKOFF } from "./backoff.ts";
import type { KubeClient, KubeObject } from "./client.ts";
import { isGone } from "./errors.ts";
import type { ResourceRef } from "./resources.ts";
import { sleep as defaultSleep } from "../runtime/sleep.ts";

export type InformerEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface InformerOptions<T extends KubeObject> {
  client: KubeClient;
  resource: ResourceRef;
  /** One namespace, or all of them. */
  namespace?: string;
  labelSelector?: string;
  handler: (type: InformerEventType, object: T) => void | Promise<void>;
  /** In [0, 1): places each backoff delay and each watch's length. */
  random: () => number;
  /** Milliseconds now: a watch that ends at once with nothing in it counts as a failure. */
  now: () => number;
  /** Resolves after `ms`, or at once when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  backoff?: BackoffPolicy;
  /** Each watch asks the server to end it after between this and twice this (default 300 s), as client-go does. */
  watchSeconds?: number;
  /** Start by watching from this version instead of listing (a version kept from earlier; a stale one costs one re-list). */
  since?: string;
  /** A line about each failure and re-list (never a credential: errors carry the API's message only). */
  log?: (message: string) => void;
}

export interface Informer<T extends KubeObject> {
  /** Runs until the signal aborts; never throws for API errors, it retries them. */
  run(signal: AbortSignal): Promise<void>;
  /** True once a list has been delivered. */
  synced(): boolean;
  get(namespace: string | undefined, name: string): T | undefined;
  list(): T[];
  /** The last resourceVersion seen. */
  resourceVersion(): string | undefined;
  /** How many lists, watches and failures so far (for tests and metrics). */
  stats(): { lists: number; watches: number; failures: number };
}

/** A watch shorter than this that delivered nothing counts as a failure, so a server that closes at once is not hammered. */
const SHORT_WATCH_MS = 1000;

export function createInformer<T extends KubeObject>(opts: InformerOptions<T>): Informer<T> {
  const cache = new Map<string, T>();
  const key = (o: T) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const sleep = opts.sleep ?? defaultSleep;
  const watchSeconds = opts.watchSeconds ?? 300;
  let rv = opts.since;
  let isSynced = false;
  const stats = { lists: 0, watches: 0, failures: 0 };

  const deliver = async (type: InformerEventType, o: T) => {
    try {
      await opts.handler(type, o);
    } catch (err) {
      // The handler owns its retries; the watch must go on for every other object.
      opts.log?.(`The ${opts.resource.plural} handler failed for "${key(o)}": ${(err as Error).message}`);
    }
  };

  async function relist(signal: AbortSignal): Promise<string> {
    const listed = await opts.client.list<T>(opts.resource, { namespace: opts.namespace, labelSelector: opts.labelSelector, signal });
    stats.lists++;
    const seen = new Set<string>();
    for (const o of listed.items) {
      const k = key(o);
      seen.add(k);
      const old = cache.get(k);
      cache.set(k, o);
      if (old === undefined) await deliver("ADDED", o);
      else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) await deliver("MODIFIED", o);
    }
    // Deleted while no watch was running: the handler still hears of it.
    for (const [k, o] of [...cache]) {
      if (seen.has(k)) continue;
      cache.delete(k);
      await deliver("DELETED", o);
    }
    isSynced = true;
    return listed.resourceVersion;
  }

  async function watchOnce(from: string, signal: AbortSignal): Promise<{ events: number }> {
    stats.watches++;
    let events = 0;
    const timeoutSeconds = Math.round(watchSeconds * (1 + opts.random()));
    for await (
      const ev of opts.client.watch<T>(opts.resource, {
        namespace: opts.namespace,
        labelSelector: opts.labelSelector,
        resourceVersion: from,
        timeoutSeconds,
        signal,
      })
    ) {
      events++;
      const next = ev.object.metadata?.resourceVersion;
      if (ev.type === "BOOKMARK") {
        if (next) rv = next;
        continue;
      }
      const k = key(ev.object);
      if (ev.type === "DELETED") cache.delete(k);
      else cache.set(k, ev.object);
      if (next) rv = next;
      await deliver(ev.type, ev.object);
    }
    return { events };
  }

  return {
    async run(signal) {
      let failures = 0;
      while (!signal.aborted) {
        let listed = false;
        try {
          if (rv === undefined) {
            rv = await relist(signal);
            listed = true;
            failures = 0;
            if (signal.aborted) break;
          }
          const started = opts.now();
          const { events } = await watchOnce(rv, signal);
          if (events > 0) failures = 0;
          else if (opts.now() - started < SHORT_WATCH_MS && !signal.aborted) throw new Error("the watch ended at once with no event");
        } catch (err) {
          if (signal.aborted) break;
          if (isGone(err)) {
            // The version is older than the server keeps (a compaction, a restarted API server): list again.
            opts.log?.(`Listing ${opts.resource.plural} again: resourceVersion "${rv}" is gone (${(err as Error).message})`);
            rv = undefined;
            // Gone right after a fresh list would otherwise loop at full speed.
            if (!listed) continue;
          }
          failures++;
          stats.failures++;
          const delay = backoffDelay(failures, opts.random, opts.backoff ?? DEFAULT_BACKOFF);
          opts.log?.(`Watching ${opts.resource.plural} failed (attempt ${failures}, again in ${delay} ms): ${(err as Error).message}`);
          await sleep(delay, signal);
        }
      }
    },
    synced: () => isSynced,
    get: (namespace, name) => cache.get(`${namespace ?? ""}/${name}`),
    list: () => [...cache.values()],
    resourceVersion: () => rv,
    stats: () => ({ ...stats }),
  };
}
