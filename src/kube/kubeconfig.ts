/**
 * Where the API server is and how to prove who we are: from a kubeconfig file, or from the pod's
 * service account (docs/operator.md#how-the-operator-reaches-the-api-server). Pure: files are
 * named here and read by connect.ts.
 *
 * What a kubeconfig may hold (docs/operator.md#kubeconfig-forms): the server and its CA (a file
 * or embedded data), a client certificate and key (files or embedded data), a bearer token
 * (inline or a file). Everything that would run a program, weaken TLS or act as someone else is
 * refused by name.
 */
import { parse } from "yaml";
import { SidecarError } from "../core/errors.ts";

/** PEM text given inline, or a file (absolute path) that holds it. */
export type Material = { pem: string } | { file: string };

export interface KubeTarget {
  /** Base URL of the API server, no trailing slash. */
  server: string;
  ca?: Material;
  clientCert?: Material;
  clientKey?: Material;
  token?: { value: string } | { file: string };
  /** The default namespace: the context's, or the service account's (read from `namespaceFile`). */
  namespace?: string;
  namespaceFile?: string;
  /** Where this came from, for messages: `kubeconfig "/path" (context "ctx")` or `the in-cluster service account`. */
  origin: string;
}

/** The service account files Kubernetes mounts into every pod that has one. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How often a token file is read again at most (Kubernetes rotates projected tokens; they live an hour or more). */
export const TOKEN_REREAD_MS = 60_000;

type Obj = Record<string, unknown>;

/**
 * Parses a kubeconfig's text. `path` is the file's absolute path: relative paths inside resolve
 * against its folder, as kubectl does. `context` overrides `current-context`.
 */
export function parseKubeconfig(text: string, path: string, context?: string): KubeTarget {
  const fail = (why: string): never => {
    throw new SidecarError("invalid", `Cannot use kubeconfig "${path}": ${why}`);
  };
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    return fail(`it is not YAML (${(err as Error).message.split("\n")[0]})`);
  }
  if (!isObj(doc)) return fail("it is not a YAML mapping");
  const ctxName = context ?? str(doc["current-context"]);
  if (!ctxName) return fail("it names no current-context, and no --context was given");
  const ctx = named(doc, "contexts", "context", ctxName, fail);
  const clusterName = str(ctx["cluster"]);
  const userName = str(ctx["user"]);
  if (!clusterName) return fail(`context "${ctxName}" names no cluster`);
  const cluster = named(doc, "clusters", "cluster", clusterName, fail);
  const user = userName ? named(doc, "users", "user", userName, fail) : {};
  const dir = path.slice(0, path.lastIndexOf("/") + 1) || "./";
  const abs = (p: string) => p.startsWith("/") ? p : normalize(dir + p);
  const where = (section: string, name: string, key: string) => `${section} "${name}": ${key}`;

  // Each refusal says why: these would run a program, skip TLS, or act as someone else.
  if (user["exec"] !== undefined) {
    const cmd = isObj(user["exec"]) ? str(user["exec"]["command"]) : undefined;
    fail(
      `user "${userName}" gets its credentials from an exec plugin${
        cmd ? ` ("${cmd}")` : ""
      }, which the operator does not run; give it a client certificate and key, a token or a tokenFile`,
    );
  }
  if (user["auth-provider"] !== undefined) {
    const name = isObj(user["auth-provider"]) ? str(user["auth-provider"]["name"]) : undefined;
    fail(
      `user "${userName}" uses the auth-provider plugin${
        name ? ` "${name}"` : ""
      }, which the operator does not run; give it a client certificate and key, a token or a tokenFile`,
    );
  }
  if (user["username"] !== undefined || user["password"] !== undefined) {
    fail(`user "${userName}" has a username and password; basic authentication is gone from Kubernetes since 1.19, give it a token or a client certificate`);
  }
  for (const key of ["as", "as-uid", "as-groups", "as-user-extra"]) {
    if (user[key] !== undefined) fail(`${where("user", userName!, key)} asks to impersonate, which the operator does not do`);
  }
  if (cluster["insecure-skip-tls-verify"] === true) {
    fail(
      `cluster "${clusterName}" sets insecure-skip-tls-verify, which would hand the operator's credentials to whoever answers; give it certificate-authority or certificate-authority-data`,
    );
  }
  for (const key of ["proxy-url", "tls-server-name"]) {
    if (cluster[key] !== undefined) fail(`${where("cluster", clusterName, key)} is not supported`);
  }

  const server = str(cluster["server"]);
  if (!server) return fail(`cluster "${clusterName}" has no server`);
  const target: KubeTarget = { server: serverUrl(server, fail), origin: `kubeconfig "${path}" (context "${ctxName}")` };

  const material = (section: string, name: string, m: Obj, fileKey: string, dataKey: string, label: string): Material | undefined => {
    const file = str(m[fileKey]);
    const data = str(m[dataKey]);
    if (file && data) fail(`${section} "${name}" has both ${fileKey} and ${dataKey}; keep one`);
    if (data) return { pem: pemFromBase64(data, label, () => fail(`${where(section, name, dataKey)} is not base64 of a PEM ${label} block`)) };
    return file ? { file: abs(file) } : undefined;
  };
  const ca = material("cluster", clusterName, cluster, "certificate-authority", "certificate-authority-data", "CERTIFICATE");
  if (ca) target.ca = ca;
  if (userName) {
    const cert = material("user", userName, user, "client-certificate", "client-certificate-data", "CERTIFICATE");
    const key = material("user", userName, user, "client-key", "client-key-data", "PRIVATE KEY");
    if ((cert === undefined) !== (key === undefined)) {
      fail(`user "${userName}" has a client ${cert ? "certificate without its key" : "key without its certificate"}`);
    }
    if (cert && key) Object.assign(target, { clientCert: cert, clientKey: key });
    const token = str(user["token"]);
    const tokenFile = str(user["tokenFile"]);
    if (token && tokenFile) fail(`user "${userName}" has both token and tokenFile; keep one`);
    if (token) target.token = { value: token.trim() };
    if (tokenFile) target.token = { file: abs(tokenFile) };
  }
  if (target.token && target.server.startsWith("http:")) fail(`cluster "${clusterName}" is plain http, which would send the token in clear`);
  const ns = str(ctx["namespace"]);
  if (ns) target.namespace = ns;
  return target;
}

/** The pod's own service account, from the variables and files Kubernetes gives every pod. */
export function inClusterTarget(env: Readonly<Record<string, string | undefined>>, dir = SERVICE_ACCOUNT_DIR): KubeTarget {
  const host = env["KUBERNETES_SERVICE_HOST"];
  const port = env["KUBERNETES_SERVICE_PORT"];
  if (!host || !port) {
    throw new SidecarError(
      "invalid",
      "Cannot find the API server: no --kubeconfig was given and KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is unset (not running in a pod)",
    );
  }
  if (!/^[0-9]{1,5}$/.test(port)) throw new SidecarError("invalid", `Cannot find the API server: KUBERNETES_SERVICE_PORT "${port}" is not a port number`);
  const hostPart = host.includes(":") ? `[${host}]` : host;
  return {
    server: `https://${hostPart}:${port}`,
    ca: { file: `${dir}/ca.crt` },
    token: { file: `${dir}/token` },
    namespaceFile: `${dir}/namespace`,
    origin: "the in-cluster service account",
  };
}

/** A server URL as an error may quote it: whatever stands between `//` and `@` may be a password. */
const shownServer = (server: string) => JSON.stringify(server.replace(/\/\/[^/@]*@/, "//…@"));

function serverUrl(server: string, fail: (why: string) => never): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return fail(`server ${shownServer(server)} is not a URL`);
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    fail(`server ${shownServer(server)} is not https (plain http is accepted only on the loopback interface, as kubectl proxy serves it)`);
  }
  if (url.username || url.password || url.search || url.hash) fail(`server ${shownServer(server)} carries credentials, a query or a fragment`);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

function pemFromBase64(data: string, label: string, fail: () => never): string {
  let text: string;
  try {
    text = atob(data.replace(/\s+/g, ""));
  } catch {
    return fail();
  }
  // "PRIVATE KEY" also admits "RSA PRIVATE KEY" and "EC PRIVATE KEY".
  if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(text)) return fail();
  return text;
}

function named(doc: Obj, list: string, field: string, name: string, fail: (why: string) => never): Obj {
  const items = doc[list];
  const found = Array.isArray(items) ? items.find((i) => isObj(i) && i["name"] === name) : undefined;
  if (!isObj(found)) return fail(`${list} has no entry named "${name}"`);
  const inner = found[field];
  return isObj(inner) ? inner : {};
}

/** Resolves "." and ".." in an absolute path, as path.resolve would, without node:path in pure code. */
function normalize(p: string): string {
  const out: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return "/" + out.join("/");
}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
