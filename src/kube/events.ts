/**
 * Kubernetes Events about the objects the operator handles, as core/v1 Events
 * (docs/operator.md#events): `kubectl describe` in 1.20 lists core/v1 Events, and the API server
 * stores events.k8s.io/v1 Events as the same objects anyway, so the older API costs nothing and
 * reads the same everywhere. A repeat of the same Event within ten minutes bumps its count (a
 * merge patch) instead of piling up new objects, as client-go's correlator does.
 */
import type { KubeClient, KubeObject } from "./client.ts";
import { isNotFound } from "./errors.ts";
import { EVENTS } from "./resources.ts";

export type EventType = "Normal" | "Warning";

export interface EventRecorderOptions {
  client: KubeClient;
  /** `source.component` and `reportingComponent`, e.g. "htcjob-operator". */
  component: string;
  /** `source.host` and `reportingInstance`: this replica. */
  instance: string;
  now: () => number;
}

export interface EventRecorder {
  /** Writes (or counts again) an Event about `about`; rejects with the API's error. */
  record(about: KubeObject, type: EventType, reason: string, message: string): Promise<void>;
}

const REPEAT_WINDOW_MS = 10 * 60_000;
const MAX_REMEMBERED = 4096;
/** Kubernetes truncates an Event's note at 1 kB in events.k8s.io; keep core Events as short. */
const MAX_MESSAGE = 1024;

export function createEventRecorder(opts: EventRecorderOptions): EventRecorder {
  const recent = new Map<string, { name: string; namespace: string; count: number; first: number; last: number }>();
  // Two Events about one object in the same millisecond still get two names.
  let seq = 0n;
  return {
    async record(about, type, reason, message) {
      const now = opts.now();
      const namespace = about.metadata.namespace ?? "default";
      const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
      const key = JSON.stringify([about.metadata.uid, type, reason, text]);
      const seen = recent.get(key);
      if (seen && now - seen.last < REPEAT_WINDOW_MS) {
        try {
          await opts.client.patch(EVENTS, seen.namespace, seen.name, { count: seen.count + 1, lastTimestamp: time(now) }, { type: "merge" });
          seen.count++;
          seen.last = now;
          recent.delete(key);
          recent.set(key, seen);
          return;
        } catch (err) {
          // The Event expired (the API server keeps them an hour by default): write a new one.
          if (!isNotFound(err)) throw err;
        }
      }
      // client-go's naming: the object's name and the time in nanoseconds, in hex.
      const name = `${about.metadata.name}.${(BigInt(now) * 1_000_000n + (seq++ % 1_000_000n)).toString(16)}`;
      await opts.client.create(EVENTS, namespace, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: about.apiVersion,
          kind: about.kind,
          name: about.metadata.name,
          namespace,
          uid: about.metadata.uid,
          resourceVersion: about.metadata.resourceVersion,
        },
        type,
        reason,
        message: text,
        count: 1,
        firstTimestamp: time(now),
        lastTimestamp: time(now),
        source: { component: opts.component, host: opts.instance },
        reportingComponent: opts.component,
        reportingInstance: opts.instance,
      });
      recent.set(key, { name, namespace, count: 1, first: now, last: now });
      if (recent.size > MAX_REMEMBERED) recent.delete(recent.keys().next().value!);
    },
  };
}

/** Event timestamps are whole seconds (metav1.Time). */
const time = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
