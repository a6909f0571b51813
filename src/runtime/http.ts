/**
 * The HTTP server, on `node:http` for both runtimes.
 *
 * interLink sends `GET /status` and `GET /getLogs` with JSON bodies
 * (docs/interlink.md#get-requests-carry-a-body). `Bun.serve` and `Deno.serve` hand over a `Request`
 * whose body is null on GET, and the WHATWG `Request` constructor refuses a GET body
 * (docs/architecture.md#7-serve-with-nodehttp). So this adapter reads the raw bytes itself and
 * passes them to the app beside a body-less `Request`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { chmodSync, existsSync, lstatSync, unlinkSync } from "node:fs";
import type { Socket } from "node:net";
import { errorText } from "../core/errors.ts";

/** What the app gets besides the `Request`: the raw body and a signal for long-lived streams. */
export interface RequestExtras {
  rawBody: Uint8Array;
  /** Aborted when the client goes away or the server shuts down. */
  signal: AbortSignal;
}

export type FetchHandler = (req: Request, extras: RequestExtras) => Promise<Response> | Response;

export type ListenTarget = { kind: "tcp"; host: string; port: number } | { kind: "unix"; path: string };

/** One line per request, written when the response has ended (streams included). */
export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  durationMs: number;
  /** interLink's `InterLink-Http-Session` header (docs/interlink.md#headers), for correlation. */
  session: string | null;
  /** The client went away before the response ended. */
  aborted: boolean;
}

export interface ServeOptions {
  target: ListenTarget;
  onRequest?: (r: RequestRecord) => void;
  bodyLimitBytes: number;
  /** interLink pools connections for 120 s; the idle timeout must be longer (docs/interlink.md#timeouts-and-keep-alive). */
  keepAliveTimeoutMs: number;
}

export interface HttpServer {
  /** Where it listens, e.g. `http://127.0.0.1:8000` or `unix:///run/sidecar.sock`. */
  readonly url: string;
  readonly port?: number;
  /**
   * Stops accepting, aborts long-lived streams (log follow), waits for in-flight requests up to
   * `deadlineMs`, then destroys what is left.
   */
  close(deadlineMs: number): Promise<void>;
}

export function serveHttp(opts: ServeOptions, handler: FetchHandler): Promise<HttpServer> {
  const shutdown = new AbortController();
  const sockets = new Set<Socket>();
  let inFlight = 0;
  let drained: (() => void) | undefined;

  const server = createServer((req, res) => {
    inFlight++;
    const started = performance.now();
    const scope = requestScope(res, shutdown.signal);
    res.on("close", () => {
      inFlight--;
      scope.closed();
      const session = req.headers["interlink-http-session"];
      opts.onRequest?.({
        method: req.method ?? "",
        path: (req.url ?? "/").split("?")[0]!,
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        session: typeof session === "string" ? session : null,
        aborted: !res.writableFinished,
      });
      if (inFlight === 0) drained?.();
    });
    handle(opts, handler, req, res, scope).catch((err) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end(`Internal error: ${errorText(err)}\n`);
      } else {
        res.destroy();
      }
    });
  });
  server.keepAliveTimeout = opts.keepAliveTimeoutMs;
  server.headersTimeout = opts.keepAliveTimeoutMs + 1_000;
  server.requestTimeout = 0;
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    const ready = () => {
      server.off("error", reject);
      const addr = server.address();
      const port = typeof addr === "object" && addr ? addr.port : undefined;
      const url = opts.target.kind === "unix"
        ? `unix://${opts.target.path}`
        : `http://${opts.target.host.includes(":") ? `[${opts.target.host}]` : opts.target.host}:${port}`;
      resolve({
        url,
        port,
        close: (deadlineMs) =>
          new Promise<void>((done) => {
            server.close(() => done());
            shutdown.abort();
            // Idle keep-alive sockets would hold close() open for the whole idle timeout.
            server.closeIdleConnections?.();
            const timer = setTimeout(() => {
              for (const s of sockets) s.destroy();
            }, deadlineMs);
            drained = () => {
              clearTimeout(timer);
              for (const s of sockets) s.destroy();
            };
            if (inFlight === 0) drained();
          }),
      });
    };
    if (opts.target.kind === "unix") {
      removeStaleSocket(opts.target.path);
      server.listen(opts.target.path, () => {
        // interLink runs as a different user on some sites; the socket's folder guards access.
        chmodSync((opts.target as { path: string }).path, 0o660);
        ready();
      });
    } else {
      server.listen(opts.target.port, opts.target.host, ready);
    }
  });
}

function removeStaleSocket(path: string): void {
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) throw new Error(`Cannot listen on ${path}: it exists and is not a socket`);
  unlinkSync(path);
}

function tooLarge(res: ServerResponse, limit: number): void {
  res.writeHead(413, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  res.end(`Request body exceeds the limit of ${limit} bytes (config BodyLimit)\n`);
}

/** One request: its body, the app's answer, and that answer written (streamed when it is a stream). */
async function handle(opts: ServeOptions, handler: FetchHandler, req: IncomingMessage, res: ServerResponse, scope: RequestScope): Promise<void> {
  const { extras, whenDone } = scope;
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > opts.bodyLimitBytes) {
    tooLarge(res, opts.bodyLimitBytes);
    req.resume();
    return;
  }
  const rawBody = await readBody(req, opts.bodyLimitBytes);
  if (rawBody === undefined) {
    tooLarge(res, opts.bodyLimitBytes);
    req.destroy();
    return;
  }
  extras.rawBody = rawBody;

  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  // Only the path and query matter for routing; the Host header is kept in `headers`. No
  // signal on the Request: the app takes it from `extras`, and only a log follow asks for it.
  const request = new Request(new URL(req.url ?? "/", "http://sidecar").href, { method: req.method, headers });
  const response = await handler(request, extras);
  const outHeaders: Record<string, string> = {};
  response.headers.forEach((v, k) => (outHeaders[k] = v));
  res.writeHead(response.status, outHeaders);
  // A JSON answer is whole, never a stream that must reach the client as it is written: read at
  // once, it costs no stream and reader per call (status is called thousands of times a second).
  if (outHeaders["content-type"]?.startsWith("application/json")) {
    res.end(new Uint8Array(await response.arrayBuffer()));
    return;
  }
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const undo = whenDone(() => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // Streamed responses (log follow) must reach the client as they are written.
      if (!res.write(value)) await new Promise<void>((r) => res.once("drain", () => r()));
    }
  } finally {
    undo();
    res.end();
  }
}

interface RequestScope {
  extras: RequestExtras;
  /** Runs `fn` once the client goes away or the server shuts down; returns its undo. */
  whenDone(fn: () => void): () => void;
  /** The response closed (ended, or the client went away). */
  closed(): void;
}

/**
 * What a request's handling needs to know of its end. The signal is made only when the app asks
 * for it (a log follow): most requests never do, and an AbortSignal.any per status call is garbage
 * thousands of times a second.
 */
function requestScope(res: ServerResponse, shutdown: AbortSignal): RequestScope {
  let client: AbortController | undefined;
  let closed = false;
  let signal: AbortSignal | undefined;
  return {
    extras: {
      rawBody: new Uint8Array(0),
      get signal(): AbortSignal {
        if (signal) return signal;
        client = new AbortController();
        if (closed) client.abort();
        return signal = AbortSignal.any([client.signal, shutdown]);
      },
    },
    closed() {
      closed = true;
      client?.abort();
    },
    // Through the app's signal when it made one (after the app's own listeners, so that a stream
    // it closes on abort is closed before it is cancelled), else without making one.
    whenDone(fn) {
      if (signal) {
        const s = signal;
        s.addEventListener("abort", fn, { once: true });
        if (s.aborted) fn();
        return () => s.removeEventListener("abort", fn);
      }
      res.once("close", fn);
      shutdown.addEventListener("abort", fn, { once: true });
      if (closed || shutdown.aborted) fn();
      return () => {
        res.off("close", fn);
        shutdown.removeEventListener("abort", fn);
      };
    },
  };
}

/**
 * The request body, or undefined once it exceeds `limit`. Read through the stream's events: an
 * async iterator per request costs a status call more than the rest of the adapter.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const done = (v: Uint8Array | undefined, err?: unknown) => {
      req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      if (err) reject(err);
      else resolve(v);
    };
    const onData = (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > limit) return done(undefined);
      chunks.push(chunk);
    };
    const onEnd = () => done(concat(chunks, size));
    const onError = (err: unknown) => done(undefined, err);
    const onClose = () => done(undefined, new Error("The client closed the connection before the request body ended"));
    req.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
  });
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}
