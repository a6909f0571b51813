/**
 * The HTTP surface interLink calls (docs/interlink.md#routes): thin routes that parse JSON, hand it
 * to the service, and map errors to statuses through one table. Error bodies are one line of
 * plain text (interLink HTML-escapes them into pod messages,
 * docs/interlink.md#how-interlink-treats-responses).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { errorText, httpStatusOf, oneLine, SidecarError } from "./core/errors.ts";
import type { LogRequest } from "./core/log-options.ts";
import { METRICS_CONTENT_TYPE } from "./core/metrics.ts";
import { type CreateRequest, parseCreateRequest } from "./core/pod.ts";
import { parseDeleteRequest, parseLogRequest, parseStatusRequest, type PodRef } from "./core/requests.ts";
import type { Logger } from "./logger.ts";
import type { RequestExtras } from "./runtime/http.ts";
import { noTracing, type ServiceTracing } from "./tracing/tracing.ts";

/**
 * A status answer: the PodStatus array, and why some pods were left out when HTCondor did not
 * answer (interLink then keeps their last state; the header tells operators it is stale).
 */
export interface StatusAnswer {
  statuses: unknown[];
  stale?: string;
}

/** The use cases behind the routes (src/service/ implements them), on requests parsed at the route. */
export interface Api {
  create(req: CreateRequest): Promise<{ PodUID: string; PodJID: string }>;
  remove(pod: PodRef): Promise<string>;
  status(pods: readonly PodRef[]): Promise<StatusAnswer>;
  /** Ping: `GET /status` with `[]` (docs/interlink.md#the-ping). */
  ping(): Promise<{ healthy: boolean; body: unknown }>;
  logs(req: LogRequest, signal: AbortSignal): Promise<ReadableStream<Uint8Array> | Uint8Array | string>;
  systemInfo(): Promise<unknown>;
}

type Env = { Bindings: RequestExtras };

/** `metrics`: the exposition text for `GET /metrics` (docs/metrics.md); `tracing`: the create's validation span (docs/tracing.md). */
export function createApp(api: Api, log: Logger, metrics?: () => string, tracing: Pick<ServiceTracing, "step"> = noTracing): Hono<Env> {
  const app = new Hono<Env>();

  app.onError((err, c) => {
    if (err instanceof SidecarError) return text(c, httpStatusOf[err.kind], err.message);
    log.error("unexpected error", { path: c.req.path, error: err instanceof Error ? err.stack ?? err.message : String(err) });
    return text(c, 500, `Internal error: ${errorText(err)}`);
  });

  app.notFound((c) => text(c, 404, `No route ${c.req.method} ${c.req.path}; interLink calls /create, /delete, /status, /getLogs`));

  app.post("/create", async (c) => {
    const body = json(c);
    if (Array.isArray(body)) throw new SidecarError("invalid", "create: the body must be one RetrievedPodData object, not an array");
    return c.json(await api.create(tracing.step("validate", () => parseCreateRequest(body))), 200);
  });

  app.post("/delete", async (c) => {
    const body = json(c);
    if (Array.isArray(body)) throw new SidecarError("invalid", "delete: the body must be one v1.Pod object, not an array");
    return text(c, 200, await api.remove(parseDeleteRequest(body)));
  });

  const status = async (c: Context<Env>) => {
    const body = json(c);
    if (!Array.isArray(body)) throw new SidecarError("invalid", "status: the body must be a JSON array of pods");
    if (body.length === 0) {
      const { healthy, body: out } = await api.ping();
      return c.json(out as object, healthy ? 200 : 503);
    }
    const { statuses, stale } = await api.status(parseStatusRequest(body));
    if (stale) c.header(STALE_HEADER, headerValue(stale));
    return c.json(statuses, 200);
  };
  app.get("/status", status);
  app.post("/status", status);

  const logs = async (c: Context<Env>) => {
    const body = json(c);
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new SidecarError("invalid", "getLogs: the body must be one LogStruct object");
    }
    const out = await api.logs(parseLogRequest(body), c.env.signal);
    return new Response(out as ConstructorParameters<typeof Response>[0], { status: 200, headers: { "content-type": "text/plain; charset=utf-8" } });
  };
  app.get("/getLogs", logs);
  app.post("/getLogs", logs);

  app.get("/system-info", async (c) => c.json((await api.systemInfo()) as object, 200));

  if (metrics) app.get("/metrics", (c) => c.body(metrics(), 200, { "content-type": METRICS_CONTENT_TYPE }));

  return app;
}

/** Set on a /status answer that leaves pods out because HTCondor did not answer. */
const STALE_HEADER = "X-Sidecar-Stale";

/** Header values are one line of visible ASCII. */
function headerValue(s: string): string {
  return s.replace(/[^\x20-\x7e]+/g, " ").slice(0, 500);
}

function json(c: Context<Env>): unknown {
  const raw = c.env.rawBody;
  if (raw.byteLength === 0) throw new SidecarError("invalid", `${c.req.path.slice(1)}: the request has no JSON body`);
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch (err) {
    throw new SidecarError("invalid", `${c.req.path.slice(1)}: the body is not valid JSON: ${errorText(err)}`);
  }
}

function text(c: Context<Env>, status: number, message: string): Response {
  return c.body(`${oneLine(message)}\n`, status as 200, { "content-type": "text/plain; charset=utf-8" });
}
