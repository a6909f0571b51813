/**
 * Turns a kubeconfig or the in-cluster service account into a working client: reads the files
 * kubeconfig.ts names, keeps the token fresh, and builds the HTTPS client through the runtime
 * (docs/operator.md#how-the-operator-reaches-the-api-server).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { SidecarError } from "../core/errors.ts";
import type { Runtime, TlsClientOptions } from "../runtime/types.ts";
import { createKubeClient, type KubeClient, type TokenSource } from "./client.ts";
import { inClusterTarget, type KubeTarget, type Material, parseKubeconfig, SERVICE_ACCOUNT_DIR, TOKEN_REREAD_MS } from "./kubeconfig.ts";

export interface KubeConnection {
  server: string;
  tls: TlsClientOptions;
  token?: TokenSource;
  /** The default namespace (the context's or the service account's), "default" when none is named. */
  namespace: string;
  origin: string;
}

export interface ConnectOptions {
  /** A kubeconfig file; without it the in-cluster service account. */
  kubeconfig?: string;
  context?: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Milliseconds now, for the token's re-read. */
  now: () => number;
  /** Where the service account's files are (tests only; Kubernetes mounts them at SERVICE_ACCOUNT_DIR). */
  serviceAccountDir?: string;
  readText?: (path: string) => string;
}

export function loadConnection(opts: ConnectOptions): KubeConnection {
  const readText = opts.readText ?? ((p: string) => readFileSync(p, "utf8"));
  let target: KubeTarget;
  if (opts.kubeconfig !== undefined) {
    const path = resolve(opts.kubeconfig);
    target = parseKubeconfig(readOrFail(readText, path, "the kubeconfig"), path, opts.context);
  } else {
    target = inClusterTarget(opts.env, opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
  }
  return connectionOf(target, readText, opts.now);
}

export function connectionOf(target: KubeTarget, readText: (path: string) => string, now: () => number): KubeConnection {
  const material = (m: Material | undefined, what: string) =>
    m === undefined ? undefined : "pem" in m ? m.pem : readOrFail(readText, m.file, `${what} of ${target.origin}`);
  const tls: TlsClientOptions = {};
  const ca = material(target.ca, "the CA certificate");
  if (ca !== undefined) tls.ca = ca;
  const cert = material(target.clientCert, "the client certificate");
  const key = material(target.clientKey, "the client key");
  if (cert !== undefined && key !== undefined) Object.assign(tls, { cert, key });
  let namespace = target.namespace ?? "default";
  if (target.namespaceFile !== undefined) namespace = readOrFail(readText, target.namespaceFile, "the service account's namespace").trim() || "default";
  const conn: KubeConnection = { server: target.server, tls, namespace, origin: target.origin };
  const token = target.token;
  if (token !== undefined && "value" in token) conn.token = { current: () => token.value, refresh: () => false };
  if (token !== undefined && "file" in token) conn.token = fileToken(token.file, readText, now);
  return conn;
}

/**
 * A token read from a file, again at most every TOKEN_REREAD_MS and after each 401: the kubelet
 * rewrites a projected service-account token well before it expires. A read that fails keeps
 * the last good token (the kubelet swaps the file by renaming a folder, so a read can miss).
 */
export function fileToken(path: string, readText: (path: string) => string, now: () => number, maxAgeMs = TOKEN_REREAD_MS): TokenSource {
  let token = readOrFail(readText, path, "the token file").trim();
  if (token === "") throw new SidecarError("invalid", `Cannot read the token file "${path}": it is empty`);
  let readAt = now();
  const reread = (): boolean => {
    readAt = now();
    let next: string;
    try {
      next = readText(path).trim();
    } catch {
      return false;
    }
    if (next === "" || next === token) return false;
    token = next;
    return true;
  };
  return {
    current() {
      if (now() - readAt >= maxAgeMs) reread();
      return token;
    },
    refresh: reread,
  };
}

function readOrFail(readText: (path: string) => string, path: string, what: string): string {
  try {
    return readText(path);
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new SidecarError("invalid", `Cannot read ${what} "${path}"${code ? `: ${code}` : ""}`);
  }
}

/** A client for the connection, on the runtime's HTTPS client; `close` frees its connections. */
export function openKubeClient(rt: Pick<Runtime, "httpClient">, conn: KubeConnection, userAgent?: string): { client: KubeClient; close(): void } {
  const http = rt.httpClient(conn.tls);
  const client = createKubeClient({ http, server: conn.server, ...(conn.token ? { token: conn.token } : {}), ...(userAgent ? { userAgent } : {}) });
  return { client, close: () => http.close() };
}
