/**
 * What the sidecar's code sees of tracing (docs/tracing.md): a span per request, a span per step of
 * a create, a span per pod's life. This file names no OpenTelemetry type, so that the routes and the
 * service depend on these few calls only; `otel.ts` implements them with the OpenTelemetry SDK, and
 * {@link noTracing} is what runs when no collector is configured (every call does nothing but call
 * through).
 */
import type { PodStatus } from "../core/status.ts";

/** Attribute values a span takes. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** The pod as the store records it, as much of it as a pod's span needs. */
export interface TracedPod {
  uid: string;
  name: string;
  namespace: string;
  /** The store's phase: only a `submitted` pod has a job that runs. */
  phase: string;
  cluster?: number;
  proc?: number;
  /** When the job id was recorded (epoch ms): a span started again after a restart begins here. */
  submittedAt?: number;
}

/**
 * The span of each pod's life, submitted → running → terminated (docs/tracing.md#the-pods-life):
 * one per pod, kept open across status calls, ended when its job ends or interLink deletes it.
 */
export interface PodSpans {
  /** The job id is recorded: the span starts, a child of the request's span. */
  submitted(pod: TracedPod): void;
  /** A status call mapped the pod to `status`: the first one that shows a container running adds the `running` event. */
  observed(pod: TracedPod, status: PodStatus): void;
  /** The job has left and the pod's final status is recorded: the span ends. */
  ended(pod: TracedPod, status: PodStatus): void;
  /** interLink deleted the pod: the span ends, if it is still open. */
  deleted(pod: TracedPod): void;
}

/** What the service uses: the steps of a create, and the pods' spans of its schedd. */
export interface ServiceTracing {
  /**
   * Runs `fn` in a child span named `name` of the span that runs now (a request's); a promise
   * ends the span when it settles. `describe` adds attributes from the result. Without a span
   * that runs now it only calls `fn`.
   */
  step<T>(name: string, fn: () => T, describe?: (result: Awaited<T>) => SpanAttributes): T;
  /** Sets attributes on the span that runs now (the request's, in a route). */
  annotate(attributes: SpanAttributes): void;
  pods: PodSpans;
}

/** Tracing as the composition root holds it. */
export interface Tracing extends ServiceTracing {
  readonly enabled: boolean;
  /** Runs one HTTP request of interLink in its span, a child of the request's `traceparent` when it has one. */
  request(req: Request, rawBody: Uint8Array, handle: () => Promise<Response>): Promise<Response>;
  /** The service's tracing for one schedd (its name is an attribute of each pod's span). */
  forSchedd(schedd: string): ServiceTracing;
  /** Exports what is finished, for at most `deadlineMs`; spans still open are not exported (docs/tracing.md#after-a-restart). */
  shutdown(deadlineMs: number): Promise<void>;
}

const noPods: PodSpans = { submitted() {}, observed() {}, ended() {}, deleted() {} };

/** Tracing switched off: no span, no context, no cost beyond a call. */
export const noTracing: Tracing = {
  enabled: false,
  request: (_req, _body, handle) => handle(),
  step: (_name, fn) => fn(),
  annotate() {},
  pods: noPods,
  forSchedd: () => noTracing,
  shutdown: async () => {},
};
