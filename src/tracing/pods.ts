/**
 * The span of each pod's life (docs/tracing.md#the-pods-life): started when the job id is recorded,
 * kept open across status calls, ended when the job has left (its final status is recorded) or
 * interLink deletes the pod. Spans that are open are held in memory, so their number is bounded;
 * a pod without one (the bound was reached, or the sidecar restarted) gets one, back-dated to its
 * submit, the next time a status call or its end names it.
 */
import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import type { PodStatus } from "../core/status.ts";
import type { Logger } from "../logger.ts";
import type { PodSpans, SpanAttributes, TracedPod } from "./tracing.ts";

/** Pod spans open at once at most, over all schedds (docs/tracing.md#how-many-pod-spans-are-open). */
export const MAX_OPEN_POD_SPANS = 10_000;

interface Open {
  span: Span;
  running: boolean;
}

/** The open spans, shared by the schedds' services (a pod UID names one pod on any schedd). */
export interface OpenPodSpans {
  spans: Map<string, Open>;
  max: number;
  /** Whether the bound was reached since the last span started (one log line per time). */
  full: boolean;
}

export function openPodSpans(max = MAX_OPEN_POD_SPANS): OpenPodSpans {
  return { spans: new Map(), max, full: false };
}

/** The attributes every pod span has: the pod, and its job on its schedd. */
export function podAttributes(p: TracedPod, schedd: string): SpanAttributes {
  return {
    "k8s.pod.uid": p.uid,
    "k8s.pod.name": p.name,
    "k8s.namespace.name": p.namespace,
    "htcondor.job.id": `${p.cluster}.${p.proc}`,
    "htcondor.schedd.name": schedd,
  };
}

/** Whether the status shows the job started: a container (an init one included) runs or ran. */
function started(s: PodStatus): boolean {
  return [...s.initContainers, ...s.containers].some((c) => c.state.running !== undefined || c.state.terminated?.startedAt !== undefined);
}

/** The pod's phase from its final status, and the reason of the first container that failed. */
function outcome(s: PodStatus): { phase: "Succeeded" | "Failed"; reason?: string; exitCode?: number } {
  const failed = [...s.initContainers, ...s.containers].find((c) => (c.state.terminated?.exitCode ?? 0) !== 0);
  if (!failed) return { phase: "Succeeded" };
  return { phase: "Failed", reason: failed.state.terminated!.reason, exitCode: failed.state.terminated!.exitCode };
}

export function createPodSpans(o: { tracer: Tracer; active: () => Context; schedd: string; open: OpenPodSpans; log: Logger }): PodSpans {
  const { spans } = o.open;

  /** `resumed`: a pod submitted before (a restart) or while the bound was reached; its span is a root, back-dated to the submit. */
  function start(p: TracedPod, resumed: boolean): Open | undefined {
    if (p.cluster === undefined || spans.has(p.uid)) return spans.get(p.uid);
    if (spans.size >= o.open.max) {
      if (!o.open.full) {
        o.open.full = true;
        o.log.warn("tracing: too many pods' spans are open; pods submitted now get theirs when a status call or their end names them", {
          open: spans.size,
        });
      }
      return undefined;
    }
    o.open.full = false;
    const at = resumed ? p.submittedAt : undefined;
    const span = o.tracer.startSpan(
      "pod",
      { kind: SpanKind.INTERNAL, attributes: { ...podAttributes(p, o.schedd), ...(resumed ? { "htcondor_sidecar.span.resumed": true } : {}) }, startTime: at },
      resumed ? ROOT_CONTEXT : o.active(),
    );
    span.addEvent("submitted", undefined, at);
    const open = { span, running: false };
    spans.set(p.uid, open);
    return open;
  }

  function end(p: TracedPod, open: Open, how: "terminated" | "deleted"): void {
    open.span.setAttribute("htcondor_sidecar.pod.end", how);
    open.span.end();
    spans.delete(p.uid);
  }

  return {
    submitted: (p) => void start(p, false),
    observed(p, status) {
      const open = spans.get(p.uid) ?? (p.phase === "submitted" && spans.size < o.open.max ? start(p, true) : undefined);
      if (!open || open.running || !started(status)) return;
      open.running = true;
      open.span.addEvent("running");
    },
    ended(p, status) {
      const open = spans.get(p.uid) ?? start(p, true);
      if (!open) return;
      if (!open.running && started(status)) open.span.addEvent("running");
      const out = outcome(status);
      open.span.setAttribute("k8s.pod.status.phase", out.phase);
      if (out.reason !== undefined) {
        open.span.setAttributes({ "htcondor_sidecar.pod.reason": out.reason, "htcondor_sidecar.pod.exit_code": out.exitCode! });
        open.span.setStatus({ code: SpanStatusCode.ERROR, message: out.reason });
      }
      open.span.addEvent("terminated");
      end(p, open, "terminated");
    },
    deleted(p) {
      // A finished pod's span has ended with its job; a pod with no job has none.
      const open = spans.get(p.uid) ?? (p.phase === "submitted" ? start(p, true) : undefined);
      if (!open) return;
      open.span.addEvent("deleted");
      end(p, open, "deleted");
    },
  };
}
