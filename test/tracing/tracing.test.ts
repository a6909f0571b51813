// Tracing's own rules (docs/tracing.md): which variables switch it on and where spans go, and the
// pods' spans: the bound on open spans and the span started again for a pod submitted before a
// restart. The SDK's own in-memory exporter collects what ended.
import { describe, expect, test } from "bun:test";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { PodStatus } from "../../src/core/status.ts";
import type { Logger } from "../../src/logger.ts";
import { tracesEndpoint } from "../../src/tracing/otel.ts";
import { createPodSpans, openPodSpans } from "../../src/tracing/pods.ts";
import type { TracedPod } from "../../src/tracing/tracing.ts";

describe("the endpoint (docs/tracing.md#switching-it-on)", () => {
  const cases: [Record<string, string>, string | undefined][] = [
    [{}, undefined],
    [{ OTEL_SERVICE_NAME: "x" }, undefined],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "http://c:4318/v1/traces"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }, "http://c:4318/v1/traces"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "https://c/otlp" }, "https://c/otlp/v1/traces"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:9/x" }, "http://t:9/x"],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:9/x" }, "http://t:9/x"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, undefined],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }, undefined],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "  " }, undefined],
  ];
  for (const [env, want] of cases) test(JSON.stringify(env), () => expect(tracesEndpoint(env)).toBe(want));

  test("an endpoint that is not an http(s) URL is refused with the variable's name", () => {
    expect(() => tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318\/v1\/traces" is not/);
    expect(() => tracesEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://c:4317" })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/);
  });
});

function setup(max: number) {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const warnings: string[] = [];
  const log: Logger = { debug() {}, info() {}, warn: (m) => void warnings.push(m), error() {} };
  const pods = createPodSpans({ tracer: provider.getTracer("t"), active: () => ROOT_CONTEXT, schedd: "s1", open: openPodSpans(max), log });
  return { pods, warnings, ended: () => exporter.getFinishedSpans() };
}

const pod = (n: number, extra: Partial<TracedPod> = {}): TracedPod => ({
  uid: `uid-${n}`,
  name: `p${n}`,
  namespace: "ns",
  phase: "submitted",
  cluster: n,
  proc: 0,
  submittedAt: 1_700_000_000_000 + n,
  ...extra,
});

const status = (state: PodStatus["containers"][number]["state"]): PodStatus => ({
  name: "p",
  UID: "u",
  namespace: "ns",
  JID: "1.0",
  initContainers: [],
  containers: [
    { name: "main", state, lastState: {}, ready: false, restartCount: 0, image: "i", imageID: "", containerID: "", started: false },
  ],
});
const running = status({ running: { startedAt: "2026-01-01T00:00:00Z" } });
const failed = status({ terminated: { exitCode: 3, reason: "Error", startedAt: "2026-01-01T00:00:00Z" } });

describe("the pods' spans (docs/tracing.md#the-pods-life)", () => {
  test("submitted → running → terminated, with the job and schedd; running is added once", () => {
    const t = setup(10);
    t.pods.submitted(pod(1));
    t.pods.observed(pod(1), status({ waiting: { reason: "Pending" } }));
    t.pods.observed(pod(1), running);
    t.pods.observed(pod(1), running);
    expect(t.ended()).toHaveLength(0);
    t.pods.ended(pod(1, { phase: "finished" }), failed);
    const [s] = t.ended();
    expect(s!.events.map((e) => e.name)).toEqual(["submitted", "running", "terminated"]);
    expect(s!.attributes).toMatchObject({
      "htcondor.job.id": "1.0",
      "htcondor.schedd.name": "s1",
      "k8s.pod.status.phase": "Failed",
      "htcondor_sidecar.pod.reason": "Error",
      "htcondor_sidecar.pod.exit_code": 3,
    });
    expect(s!.status.code).toBe(2);
  });

  test("at the bound a new pod gets no span and one line is logged; it gets a back-dated span once there is room", () => {
    const t = setup(2);
    for (const n of [1, 2, 3, 4]) t.pods.submitted(pod(n));
    t.pods.observed(pod(3), running);
    expect(t.warnings).toHaveLength(1);
    t.pods.deleted(pod(1));
    expect(t.ended().map((s) => s.attributes["k8s.pod.uid"])).toEqual(["uid-1"]);
    t.pods.observed(pod(3), running);
    t.pods.ended(pod(3), failed);
    const resumed = t.ended()[1]!;
    expect(resumed.attributes).toMatchObject({ "k8s.pod.uid": "uid-3", "htcondor_sidecar.span.resumed": true });
    expect(resumed.startTime[0] * 1000 + Math.floor(resumed.startTime[1] / 1e6)).toBe(pod(3).submittedAt!);
    expect(resumed.events.map((e) => e.name)).toEqual(["submitted", "running", "terminated"]);
  });

  test("after a restart: a pod still running gets a span from its submit; a finished one, or one with no job, none", () => {
    const t = setup(10);
    t.pods.observed(pod(5, { phase: "finished" }), failed);
    t.pods.observed(pod(6, { phase: "creating", cluster: undefined, proc: undefined }), status({ waiting: { reason: "Pending" } }));
    t.pods.deleted(pod(7, { phase: "finished" }));
    t.pods.observed(pod(8), running);
    t.pods.deleted(pod(8));
    const spans = t.ended();
    expect(spans.map((s) => s.attributes["k8s.pod.uid"])).toEqual(["uid-8"]);
    expect(spans[0]!.parentSpanContext).toBeUndefined();
    expect(spans[0]!.attributes["htcondor_sidecar.pod.end"]).toBe("deleted");
  });
});
