// OpenTelemetry traces (docs/tracing.md): a sidecar on minicondor with OTEL_EXPORTER_OTLP_ENDPOINT
// set exports its spans over OTLP/HTTP to a receiver in this test, which decodes the bodies as the
// OTLP JSON encoding defines them. A create, a status and a delete show up as spans with their
// attributes; the traceparent sent with a request is its span's parent
// (docs/tracing.md#joining-interlinks-trace); with the collector down every request still answers
// 200 and the sidecar writes one line about it (docs/tracing.md#when-the-collector-is-down).
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { hostname } from "node:os";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- OTLP JSON and status bodies are read loosely
type Json = any;

/** One span as the receiver decoded it from an ExportTraceServiceRequest (OTLP JSON encoding). */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  attributes: Record<string, unknown>;
  events: string[];
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

/** An OTLP AnyValue (opentelemetry/proto/common/v1/common.proto) as a plain value. */
function anyValue(v: Json): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v;
}
const attrs = (list: Json[] | undefined) => Object.fromEntries((list ?? []).map((kv: Json) => [kv.key, anyValue(kv.value)]));

/** A receiver of OTLP/HTTP traces: POST /v1/traces with an ExportTraceServiceRequest in JSON. */
async function startReceiver(port = 0): Promise<{ server: Server; port: number; spans: ReceivedSpan[]; posts: string[] }> {
  const spans: ReceivedSpan[] = [];
  const posts: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      posts.push(`${req.method} ${req.url} ${req.headers["content-type"]}`);
      if (req.method !== "POST" || req.url !== "/v1/traces" || req.headers["content-type"] !== "application/json") {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Json;
      for (const rs of body.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: s.kind,
              startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
              attributes: attrs(s.attributes),
              events: (s.events ?? []).map((e: Json) => e.name),
              status: s.status ?? {},
              resource,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { server, port: (server.address() as { port: number }).port, spans, posts };
}

/** A call as interLink makes it, with a W3C traceparent header when given. */
function call(port: number, method: string, path: string, body: unknown, traceparent?: string): Promise<{ status: number; body: string }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), ...(traceparent ? { traceparent } : {}) },
      },
      (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => resolve({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** A pod whose one container runs `script`. */
function pod(name: string, uid: string, script: string) {
  return makeCreateRequest({
    metadata: { name, uid },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
  });
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const traceparent = (span = PARENT_ID) => `00-${TRACE_ID}-${span}-01`;

const stateOf = async (sc: Sidecar, pod: Json): Promise<Json> => JSON.parse((await call(sc.port, "GET", "/status", [pod])).body)[0]?.containers[0]?.state;

let sc: Sidecar | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
afterEach(async () => {
  await sc?.destroy();
  sc = undefined;
  await new Promise((r) => (receiver ? receiver.server.close(r) : r(undefined)));
  receiver = undefined;
}, TEARDOWN_TIMEOUT_MS);

const env = (port: number) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
  OTEL_SERVICE_NAME: "sidecar-under-test",
  OTEL_BSP_SCHEDULE_DELAY: "100",
});

describe("traces over OTLP/HTTP (docs/tracing.md)", () => {
  test("a create, its status calls and a delete arrive as spans with their attributes, in the trace of the traceparent sent", async () => {
    receiver = await startReceiver();
    sc = await startSidecar({ env: env(receiver.port) });
    const done = { req: pod("traced-done", "7a1c0000-0000-4000-8000-000000000001", "sleep 2; exit 0") };
    const deleted = { req: pod("traced-deleted", "7a1c0000-0000-4000-8000-000000000002", "sleep 600") };

    const created = await call(sc.port, "POST", "/create", done.req, traceparent());
    expect(created.status).toBe(200);
    const jid = JSON.parse(created.body).PodJID as string;
    const created2 = await call(sc.port, "POST", "/create", deleted.req);
    expect(created2.status).toBe(200);
    const jid2 = JSON.parse(created2.body).PodJID as string;

    // One ends by itself (a status call may or may not catch it running: its end shows it ran), the other is deleted while it runs.
    await eventually(async () => (await stateOf(sc!, deleted.req.pod))?.running ? true : undefined, 60_000, "the pod to run");
    const statusParent = "1111111111111111";
    await eventually(async () => (await stateOf(sc!, done.req.pod))?.terminated ? true : undefined, 60_000, "the pod to end");
    expect((await call(sc.port, "GET", "/status", [done.req.pod], traceparent(statusParent))).status).toBe(200);
    expect((await call(sc.port, "POST", "/delete", deleted.req.pod)).status).toBe(200);
    expect((await call(sc.port, "GET", "/status", [])).status).toBe(200);
    const logs = await call(sc.port, "GET", "/getLogs", {
      Namespace: "default",
      PodUID: done.req.pod.metadata.uid,
      PodName: "traced-done",
      ContainerName: "main",
      Opts: {},
    });
    expect(logs.status).toBe(200);

    const spans = receiver.spans;
    const one = (pred: (s: ReceivedSpan) => boolean, what: string) => eventually(() => spans.find(pred), 30_000, what);

    // The create: in the caller's trace, child of the caller's span, with its three steps.
    const create = await one((s) => s.name === "create" && s.attributes["k8s.pod.uid"] === done.req.pod.metadata.uid, "the create span");
    expect(create).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID, kind: 2 });
    expect(create.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/create",
      "http.response.status_code": 200,
      "k8s.pod.name": "traced-done",
    });
    expect(create.resource["service.name"]).toBe("sidecar-under-test");
    for (const step of ["validate", "plan", "condor_submit"]) {
      const s = await one((x) => x.name === step && x.parentSpanId === create.spanId, `the ${step} span`);
      expect(s.traceId).toBe(TRACE_ID);
    }
    expect(spans.find((x) => x.name === "condor_submit" && x.parentSpanId === create.spanId)!.attributes["htcondor.job.id"]).toBe(jid);

    // The pod's life: a child of its create, with the job and schedd, submitted → running → terminated.
    const life = await one((s) => s.name === "pod" && s.attributes["k8s.pod.uid"] === done.req.pod.metadata.uid, "the pod span");
    expect(life).toMatchObject({ traceId: TRACE_ID, parentSpanId: create.spanId });
    expect(life.attributes).toMatchObject({
      "htcondor.job.id": jid,
      "htcondor.schedd.name": hostname(),
      "k8s.pod.name": "traced-done",
      "k8s.namespace.name": "default",
      "k8s.pod.status.phase": "Succeeded",
      "htcondor_sidecar.pod.end": "terminated",
    });
    expect(life.events).toEqual(["submitted", "running", "terminated"]);

    // The deleted pod's life ends at the delete; its create had no traceparent: a trace of its own.
    const life2 = await one((s) => s.name === "pod" && s.attributes["k8s.pod.uid"] === deleted.req.pod.metadata.uid, "the deleted pod's span");
    expect(life2.traceId).not.toBe(TRACE_ID);
    expect(life2.attributes).toMatchObject({ "htcondor.job.id": jid2, "htcondor_sidecar.pod.end": "deleted" });
    expect(life2.events).toEqual(["submitted", "running", "deleted"]);

    // The other routes: a status with a traceparent joins that trace; the ping is named so.
    const status = await one((s) => s.name === "status" && s.parentSpanId === statusParent, "the status span");
    expect(status).toMatchObject({ traceId: TRACE_ID, attributes: { "http.response.status_code": 200 } });
    await one((s) => s.name === "delete" && s.attributes["http.response.status_code"] === 200, "the delete span");
    await one((s) => s.name === "ping", "the ping span");
    await one((s) => s.name === "logs", "the logs span");
    expect(spans.some((s) => s.name === "status" && s.traceId !== TRACE_ID)).toBe(true);
    expect(receiver.posts.every((p) => p === "POST /v1/traces application/json")).toBe(true);
  }, 180_000);

  test("with the collector down every request answers 200, and one line says spans are dropped until it answers again", async () => {
    // A port nothing listens on: the collector is down.
    const probe = await startReceiver();
    const port = probe.port;
    await new Promise((r) => probe.server.close(r));
    sc = await startSidecar({ env: env(port) });
    const p = { req: pod("untraced", "7a1c0000-0000-4000-8000-000000000003", "sleep 600") };
    expect((await call(sc.port, "POST", "/create", p.req, traceparent())).status).toBe(200);
    await eventually(async () => (await stateOf(sc!, p.req.pod))?.running ? true : undefined, 60_000, "the pod to run");
    const lines = () => sc!.log().split("\n").filter((l) => l.includes("cannot export spans"));
    await eventually(() => (lines().length > 0 ? true : undefined), 30_000, "the export failure to be logged");
    // More requests, more failed exports (one every 100 ms): still one line.
    for (let i = 0; i < 20; i++) expect((await call(sc.port, "GET", "/status", [p.req.pod])).status).toBe(200);
    expect((await call(sc.port, "GET", "/status", [])).status).toBe(200);
    const failedBefore = Date.now();
    await eventually(() => (Date.now() - failedBefore > 500 ? true : undefined), 5_000, "a few more export attempts");
    expect(lines().length).toBe(1);

    // The collector comes up on that port: spans arrive again, and one line says so.
    receiver = await startReceiver(port);
    expect((await call(sc.port, "POST", "/delete", p.req.pod)).status).toBe(200);
    await eventually(() => receiver!.spans.find((s) => s.name === "delete"), 60_000, "the delete span after the collector came up");
    await eventually(() => (sc!.log().includes("the collector takes spans again") ? true : undefined), 30_000, "the recovery line");
    expect(existsSync(sc.dataRoot)).toBe(true);
  }, 180_000);
});
