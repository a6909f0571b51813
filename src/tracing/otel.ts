/**
 * Tracing with the OpenTelemetry SDK (docs/tracing.md): off unless an OTLP endpoint is set in the
 * standard variables; spans go in batches over OTLP/HTTP (JSON) through the official exporter. A
 * collector that is down costs no request anything: the batch processor holds at most
 * MAX_QUEUED_SPANS finished spans and drops the rest, an export gives up after EXPORT_TIMEOUT_MS,
 * and the sidecar says so in one log line (and one more when exports work again).
 *
 * The span that runs now is carried through `await`s by an AsyncLocalStorage context manager of
 * this module's own (none is registered globally), so the service's steps find their request's span.
 */
import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type ExportResult, ExportResultCode, parseKeyPairsIntoRecord, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { UsageError } from "../flags.ts";
import type { Logger } from "../logger.ts";
import { createPodSpans, openPodSpans } from "./pods.ts";
import { noTracing, type ServiceTracing, type SpanAttributes, type Tracing } from "./tracing.ts";

/** Finished spans waiting for export at most; more are dropped (the SDK's default). */
const MAX_QUEUED_SPANS = 2048;
/** How long one export may take, retries included. */
const EXPORT_TIMEOUT_MS = 10_000;
const DEFAULT_SERVICE_NAME = "htcondor-sidecar";

/** Where spans go, from the standard variables (docs/tracing.md#switching-it-on); undefined: tracing is off. */
export function tracesEndpoint(env: Readonly<Record<string, string>>): string | undefined {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return undefined;
  if ((env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase() === "none") return undefined;
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (own) return checkedUrl(own, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  // The OTLP rule: the signal's path is appended to the base endpoint.
  return checkedUrl(`${base.replace(/\/+$/, "")}/v1/traces`, "OTEL_EXPORTER_OTLP_ENDPOINT");
}

function checkedUrl(url: string, variable: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${variable}: "${url}" is not a URL; give one like http://collector:4318`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new UsageError(`${variable}: "${url}" is not http or https; the sidecar exports OTLP over HTTP (port 4318 of a collector)`);
  }
  return url;
}

/** OTEL_BSP_SCHEDULE_DELAY: milliseconds between two exports (default 5000). */
function scheduleDelay(env: Readonly<Record<string, string>>): number {
  const ms = Number(env.OTEL_BSP_SCHEDULE_DELAY ?? "");
  return env.OTEL_BSP_SCHEDULE_DELAY?.trim() && Number.isFinite(ms) && ms >= 0 ? ms : 5_000;
}

/** The exporter, and one log line when exports start failing and one when they work again (never one per batch). */
function reporting(inner: SpanExporter, endpoint: string, log: Logger): SpanExporter {
  let failing = false;
  return {
    export(spans: ReadableSpan[], done: (r: ExportResult) => void) {
      inner.export(spans, (r) => {
        if (r.code !== ExportResultCode.SUCCESS && !failing) {
          failing = true;
          log.warn("tracing: cannot export spans to the collector; dropping them until it answers (no more lines until then)", {
            endpoint,
            error: r.error?.message ?? "export failed",
          });
        } else if (r.code === ExportResultCode.SUCCESS && failing) {
          failing = false;
          log.info("tracing: the collector takes spans again", { endpoint });
        }
        done(r);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

const headerGetter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

const ROUTES: Readonly<Record<string, string>> = { "/create": "create", "/delete": "delete", "/getLogs": "logs", "/status": "status" };

/** The span name of a request and its path, or undefined for the requests that get no span (/metrics, /system-info). */
function route(req: Request, body: Uint8Array): { name: string; path: string } | undefined {
  const path = new URL(req.url).pathname;
  const name = ROUTES[path];
  if (name === undefined) return undefined;
  // The ping is a status call with an empty list (docs/interlink.md#the-ping).
  const ping = name === "status" && body.byteLength <= 64 && /^\s*\[\s*\]\s*$/.test(new TextDecoder().decode(body));
  return { name: ping ? "ping" : name, path };
}

function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Tracing as the variables in `env` configure it: {@link noTracing} without an endpoint. Throws
 * UsageError for an endpoint that is not an http(s) URL.
 */
export function openTracing(env: Readonly<Record<string, string>>, o: { log: Logger; version: string }): Tracing {
  const endpoint = tracesEndpoint(env);
  if (!endpoint) return noTracing;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim();
  if (protocol === "grpc") o.log.warn("tracing: OTLP over gRPC is not supported; spans go over HTTP (JSON) to the endpoint as given", { endpoint });
  const resource = resourceFromAttributes({
    ...parseKeyPairsIntoRecord(env.OTEL_RESOURCE_ATTRIBUTES),
    [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
    [ATTR_SERVICE_VERSION]: o.version,
  });
  const exporter = reporting(new OTLPTraceExporter({ url: endpoint, timeoutMillis: EXPORT_TIMEOUT_MS }), endpoint, o.log);
  const provider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({ exporter, maxQueueSize: MAX_QUEUED_SPANS, exportTimeoutMillis: EXPORT_TIMEOUT_MS, scheduledDelayMillis: scheduleDelay(env) }),
    ],
  });
  const tracer: Tracer = provider.getTracer("htcondor-sidecar", o.version);
  const contexts = new AsyncLocalStorageContextManager().enable();
  const active = (): Context => contexts.active();
  const propagator = new W3CTraceContextPropagator();
  const open = openPodSpans();
  o.log.info("tracing: spans go to the collector over OTLP/HTTP (JSON)", { endpoint, serviceName: resource.attributes[ATTR_SERVICE_NAME] });

  function step<T>(name: string, fn: () => T, describe?: (result: Awaited<T>) => SpanAttributes): T {
    const parent = active();
    if (!trace.getSpan(parent)) return fn();
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent);
    let out: T;
    try {
      out = contexts.with(trace.setSpan(parent, span), fn);
    } catch (err) {
      failed(span, err);
      span.end();
      throw err;
    }
    if (!(out instanceof Promise)) {
      if (describe) span.setAttributes(describe(out as Awaited<T>));
      span.end();
      return out;
    }
    return out.then(
      (v: Awaited<T>) => {
        if (describe) span.setAttributes(describe(v));
        span.end();
        return v;
      },
      (err: unknown) => {
        failed(span, err);
        span.end();
        throw err;
      },
    ) as T;
  }

  const annotate = (attributes: SpanAttributes) => void trace.getSpan(active())?.setAttributes(attributes);
  const forSchedd = (schedd: string): ServiceTracing => ({ step, annotate, pods: createPodSpans({ tracer, active, schedd, open, log: o.log }) });

  return {
    enabled: true,
    ...forSchedd(""),
    forSchedd,
    async request(req, body, handle) {
      const r = route(req, body);
      if (r === undefined) return handle();
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
      const span = tracer.startSpan(r.name, { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method, "http.route": r.path } }, parent);
      try {
        const res = await contexts.with(trace.setSpan(parent, span), handle);
        span.setAttribute("http.response.status_code", res.status);
        if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        return res;
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
    async shutdown(deadlineMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([provider.shutdown().catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
      clearTimeout(timer);
      contexts.disable();
    },
  };
}
