/**
 * A small typed client for the Kubernetes API: get, list (every page), create, replace, merge and
 * JSON patch (of the object or its status subresource), delete, and watch as a stream of events
 * (docs/operator.md#the-api-client). Every failure is a KubeApiError with the HTTP status and the
 * API's own message, or a KubeUnreachableError.
 */
import type { HttpClient } from "../runtime/types.ts";
import { apiError, KubeApiError, type KubeRequestInfo, KubeUnreachableError } from "./errors.ts";
import { apiVersionOf, resourceName, resourcePath, type ResourceRef, type Verb } from "./resources.ts";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface ObjectList<T> {
  items: T[];
  /** The version to start a watch from. */
  resourceVersion: string;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size (the client follows `continue` to the end). */
  limit?: number;
  signal?: AbortSignal;
}

export interface WatchOptions {
  namespace?: string;
  resourceVersion: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** The server ends the watch after this long; the caller watches again from the last version. */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export type PatchType = "merge" | "json";

export interface KubeClient {
  readonly server: string;
  get<T extends KubeObject>(ref: ResourceRef, namespace: string | undefined, name: string, opts?: { subresource?: "status" }): Promise<T>;
  list<T extends KubeObject>(ref: ResourceRef, opts?: ListOptions): Promise<ObjectList<T>>;
  create<T extends KubeObject>(ref: ResourceRef, namespace: string | undefined, body: object): Promise<T>;
  /** PUT: fails with 409 Conflict when `body.metadata.resourceVersion` is not the stored one. */
  replace<T extends KubeObject>(ref: ResourceRef, namespace: string | undefined, name: string, body: object): Promise<T>;
  patch<T extends KubeObject>(
    ref: ResourceRef,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    opts: { type: PatchType; subresource?: "status" },
  ): Promise<T>;
  /** With `uid`, deletes only that incarnation of the name (a precondition). */
  delete(ref: ResourceRef, namespace: string | undefined, name: string, opts?: { uid?: string }): Promise<void>;
  /**
   * Yields events until the server ends the stream or `signal` aborts (then it just ends); a 410
   * (status or ERROR event) throws a KubeApiError that isGone() knows.
   */
  watch<T extends KubeObject>(ref: ResourceRef, opts: WatchOptions): AsyncGenerator<WatchEvent<T>>;
}

/** The bearer token, read again when it may have rotated. */
export interface TokenSource {
  /** The token to send now. */
  current(): string;
  /** Reads the token again after a 401; true when it changed (the request is then worth one retry). */
  refresh(): boolean;
}

export interface KubeClientOptions {
  http: HttpClient;
  server: string;
  token?: TokenSource;
  userAgent?: string;
  /** For every request but a watch (default 30 s). */
  requestTimeoutMs?: number;
}

const CONTENT_TYPES: Record<PatchType, string> = { merge: "application/merge-patch+json", json: "application/json-patch+json" };

/** How long past its timeoutSeconds a silent watch is given before the connection is taken for dead. */
const WATCH_GRACE_SECONDS = 30;

export function createKubeClient(opts: KubeClientOptions): KubeClient {
  const timeoutMs = opts.requestTimeoutMs ?? 30_000;

  async function send(
    info: KubeRequestInfo,
    method: string,
    path: string,
    query: URLSearchParams | undefined,
    body: string | undefined,
    contentType: string | undefined,
    signal: AbortSignal,
  ): Promise<Response> {
    const url = `${opts.server}${path}${query && query.size > 0 ? `?${query}` : ""}`;
    const once = async (): Promise<Response> => {
      const headers: Record<string, string> = { accept: "application/json", "user-agent": opts.userAgent ?? "htcondor-sidecar-operator" };
      if (contentType) headers["content-type"] = contentType;
      if (opts.token) headers["authorization"] = `Bearer ${opts.token.current()}`;
      try {
        return await opts.http.fetch(url, { method, headers, body, signal });
      } catch (err) {
        throw new KubeUnreachableError(info, opts.server, err);
      }
    };
    let res = await once();
    // A rotated token is read again and the request tried once more (docs/operator.md#in-cluster).
    if (res.status === 401 && opts.token?.refresh()) {
      await res.body?.cancel();
      res = await once();
    }
    if (!res.ok) throw apiError(info, res.status, await res.text().catch(() => ""));
    return res;
  }

  async function json<T>(
    verb: Verb,
    ref: ResourceRef,
    t: { namespace?: string; name?: string; subresource?: "status" },
    method: string,
    query?: URLSearchParams,
    body?: unknown,
    contentType = "application/json",
    signal?: AbortSignal,
  ): Promise<T> {
    const info = infoOf(verb, ref, t);
    const timeout = AbortSignal.timeout(timeoutMs);
    const res = await send(
      info,
      method,
      resourcePath(ref, t),
      query,
      body === undefined ? undefined : JSON.stringify(body),
      body === undefined ? undefined : contentType,
      signal ? AbortSignal.any([signal, timeout]) : timeout,
    );
    try {
      return (await res.json()) as T;
    } catch (err) {
      throw new KubeUnreachableError(info, opts.server, err);
    }
  }

  return {
    server: opts.server,
    get: (ref, namespace, name, o) => json("get", ref, { namespace, name, subresource: o?.subresource }, "GET"),
    async list<T extends KubeObject>(ref: ResourceRef, o: ListOptions = {}) {
      const items: T[] = [];
      let cont: string | undefined;
      let rv = "";
      do {
        const q = selectors(o);
        q.set("limit", String(o.limit ?? 500));
        if (cont) q.set("continue", cont);
        const page = await json<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
          "list",
          ref,
          { namespace: o.namespace },
          "GET",
          q,
          undefined,
          undefined,
          o.signal,
        );
        // A list response leaves out each item's kind and apiVersion; put them back so items look like watched objects.
        for (const item of page.items ?? []) items.push({ apiVersion: apiVersionOf(ref), kind: ref.kind, ...item });
        rv = page.metadata?.resourceVersion ?? rv;
        cont = page.metadata?.continue || undefined;
      } while (cont);
      return { items, resourceVersion: rv };
    },
    create: (ref, namespace, body) => json("create", ref, { namespace }, "POST", undefined, body),
    replace: (ref, namespace, name, body) => json("update", ref, { namespace, name }, "PUT", undefined, body),
    patch: (ref, namespace, name, patch, o) =>
      json("patch", ref, { namespace, name, subresource: o.subresource }, "PATCH", undefined, patch, CONTENT_TYPES[o.type]),
    async delete(ref, namespace, name, o) {
      const body = o?.uid ? { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid: o.uid } } : undefined;
      await json("delete", ref, { namespace, name }, "DELETE", undefined, body);
    },
    async *watch<T extends KubeObject>(ref: ResourceRef, o: WatchOptions): AsyncGenerator<WatchEvent<T>> {
      const info = infoOf("watch", ref, { namespace: o.namespace });
      const q = selectors(o);
      q.set("watch", "1");
      q.set("resourceVersion", o.resourceVersion);
      q.set("allowWatchBookmarks", "true");
      const seconds = o.timeoutSeconds ?? 300;
      q.set("timeoutSeconds", String(seconds));
      // A connection that died without a FIN (a host gone) would hang forever: give up on it a little after the server would have ended it.
      const deadline = AbortSignal.timeout((seconds + WATCH_GRACE_SECONDS) * 1000);
      const signal = o.signal ? AbortSignal.any([o.signal, deadline]) : deadline;
      let res: Response;
      try {
        res = await send(info, "GET", resourcePath(ref, { namespace: o.namespace }), q, undefined, undefined, signal);
      } catch (err) {
        // Asked to stop: the watch simply ends.
        if (o.signal?.aborted) return;
        throw err;
      }
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      try {
        while (true) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (err) {
            if (deadline.aborted || o.signal?.aborted) return;
            throw new KubeUnreachableError(info, opts.server, err);
          }
          if (chunk.done) return;
          buf += chunk.value;
          for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line === "") continue;
            const ev = parseEvent<T>(line, info);
            if (ev) yield ev;
          }
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
    },
  };
}

function parseEvent<T>(line: string, info: KubeRequestInfo): WatchEvent<T> | undefined {
  let ev: { type?: string; object?: unknown };
  try {
    ev = JSON.parse(line);
  } catch {
    throw new KubeApiError(info, 500, "InternalError", `a watch event is not JSON: ${line.slice(0, 200)}`);
  }
  if (ev.type === "ERROR") {
    const s = (ev.object ?? {}) as { code?: number; reason?: string; message?: string };
    throw new KubeApiError(info, typeof s.code === "number" ? s.code : 500, s.reason, s.message ?? "the watch ended with an error");
  }
  if (ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED" || ev.type === "BOOKMARK") return { type: ev.type, object: ev.object as T };
  return undefined;
}

function selectors(o: { labelSelector?: string; fieldSelector?: string }): URLSearchParams {
  const q = new URLSearchParams();
  if (o.labelSelector) q.set("labelSelector", o.labelSelector);
  if (o.fieldSelector) q.set("fieldSelector", o.fieldSelector);
  return q;
}

function infoOf(verb: Verb, ref: ResourceRef, t: { namespace?: string; name?: string; subresource?: string }): KubeRequestInfo {
  const info: KubeRequestInfo = { verb, resource: resourceName(ref, t.subresource) };
  if (t.namespace !== undefined) info.namespace = t.namespace;
  if (t.name !== undefined) info.name = t.name;
  return info;
}
