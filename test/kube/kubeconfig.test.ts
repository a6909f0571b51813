// Kubeconfig and in-cluster loading (docs/operator.md#kubeconfig-forms, docs/operator.md#in-cluster):
// every accepted form, and every refusal with the reason it gives.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { SidecarError } from "../../src/core/errors.ts";
import { connectionOf, fileToken, loadConnection } from "../../src/kube/connect.ts";
import { inClusterTarget, parseKubeconfig } from "../../src/kube/kubeconfig.ts";

const PATH = "/etc/operator/kube/config";
const CA = "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\n-----END EC PRIVATE KEY-----\n";
const b64 = (s: string) => btoa(s);

/** A kubeconfig with one context "main" (cluster "c", user "u"); the given fields are merged in. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    "current-context": "main",
    clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", ...cluster } }],
    users: user === undefined ? [] : [{ name: "u", user }],
    contexts: [{ name: "main", context: { cluster: "c", ...(user === undefined ? {} : { user: "u" }), namespace: "batch" } }],
    ...extra,
  });
}

function refused(text: string, why: RegExp, context?: string) {
  let err: unknown;
  try {
    parseKubeconfig(text, PATH, context);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SidecarError);
  expect((err as Error).message).toStartWith(`Cannot use kubeconfig "${PATH}": `);
  expect((err as Error).message).toMatch(why);
  return (err as Error).message;
}

describe("parseKubeconfig: accepted forms", () => {
  test("files: CA, client certificate and key as paths, relative ones against the kubeconfig's folder", () => {
    const t = parseKubeconfig(
      kubeconfig({ "certificate-authority": "ca.crt" }, { "client-certificate": "../pki/admin.crt", "client-key": "/abs/admin.key" }),
      PATH,
    );
    expect(t).toEqual({
      server: "https://127.0.0.1:6443",
      ca: { file: "/etc/operator/kube/ca.crt" },
      clientCert: { file: "/etc/operator/pki/admin.crt" },
      clientKey: { file: "/abs/admin.key" },
      namespace: "batch",
      origin: `kubeconfig "${PATH}" (context "main")`,
    });
  });
  test("embedded: the -data fields are base64 of PEM", () => {
    const t = parseKubeconfig(kubeconfig({ "certificate-authority-data": b64(CA) }, { "client-certificate-data": b64(CA), "client-key-data": b64(KEY) }), PATH);
    expect(t.ca).toEqual({ pem: CA });
    expect(t.clientCert).toEqual({ pem: CA });
    expect(t.clientKey).toEqual({ pem: KEY });
  });
  test("a bearer token inline, or a tokenFile", () => {
    expect(parseKubeconfig(kubeconfig({}, { token: "abc.def\n" }), PATH).token).toEqual({ value: "abc.def" });
    expect(parseKubeconfig(kubeconfig({}, { tokenFile: "token" }), PATH).token).toEqual({ file: "/etc/operator/kube/token" });
  });
  test("no CA (a publicly signed API server), no user (anonymous), the server's trailing slash dropped", () => {
    const t = parseKubeconfig(kubeconfig({ server: "https://k8s.example.org:8443/" }, undefined), PATH);
    expect(t).toEqual({ server: "https://k8s.example.org:8443", namespace: "batch", origin: `kubeconfig "${PATH}" (context "main")` });
  });
  test("--context picks another context than current-context", () => {
    const text = stringify({
      "current-context": "a",
      clusters: [{ name: "c1", cluster: { server: "https://one:6443" } }, { name: "c2", cluster: { server: "https://two:6443" } }],
      contexts: [{ name: "a", context: { cluster: "c1" } }, { name: "b", context: { cluster: "c2" } }],
    });
    expect(parseKubeconfig(text, PATH).server).toBe("https://one:6443");
    expect(parseKubeconfig(text, PATH, "b").server).toBe("https://two:6443");
  });
  test("plain http only on the loopback interface, and without a token (kubectl proxy)", () => {
    expect(parseKubeconfig(kubeconfig({ server: "http://127.0.0.1:8001" }, undefined), PATH).server).toBe("http://127.0.0.1:8001");
    refused(kubeconfig({ server: "http://10.0.0.1:8080" }, undefined), /server "http:\/\/10\.0\.0\.1:8080" is not https/);
    refused(kubeconfig({ server: "http://127.0.0.1:8001" }, { token: "t" }), /plain http, which would send the token in clear/);
  });
  test("a password in the server URL is refused without being quoted", () => {
    for (const server of ["https://admin:s3cret@k8s.example.org:6443", "http://admin:s3cret@10.0.0.1:8080", "https://admin:s3cret@[bad"]) {
      let said = "";
      try {
        parseKubeconfig(kubeconfig({ server }, undefined), PATH);
      } catch (err) {
        said = (err as Error).message;
      }
      expect(said).toContain("server");
      expect(said).not.toContain("s3cret");
    }
  });
});

describe("parseKubeconfig: refusals name the reason (docs/operator.md#kubeconfig-forms)", () => {
  test("an exec plugin is refused, naming its command", () => {
    refused(
      kubeconfig({}, { exec: { apiVersion: "client.authentication.k8s.io/v1beta1", command: "aws-iam-authenticator" } }),
      /user "u" gets its credentials from an exec plugin \("aws-iam-authenticator"\), which the operator does not run/,
    );
  });
  test("an auth-provider plugin is refused, naming it", () => {
    refused(
      kubeconfig({}, { "auth-provider": { name: "oidc", config: {} } }),
      /user "u" uses the auth-provider plugin "oidc", which the operator does not run/,
    );
  });
  test("insecure-skip-tls-verify is refused: the credentials would go to whoever answers", () => {
    refused(
      kubeconfig({ "insecure-skip-tls-verify": true }, { token: "t" }),
      /insecure-skip-tls-verify, which would hand the operator's credentials to whoever answers/,
    );
  });
  test("basic authentication, impersonation, proxy-url and tls-server-name are refused", () => {
    refused(kubeconfig({}, { username: "admin", password: "pw" }), /basic authentication is gone/);
    refused(kubeconfig({}, { token: "t", as: "system:admin" }), /user "u": as asks to impersonate/);
    refused(kubeconfig({ "proxy-url": "http://proxy:3128" }, undefined), /cluster "c": proxy-url is not supported/);
    refused(kubeconfig({ "tls-server-name": "kubernetes" }, undefined), /tls-server-name is not supported/);
  });
  test("both a file and its embedded data, or a token and a tokenFile, are ambiguous", () => {
    refused(
      kubeconfig({ "certificate-authority": "ca.crt", "certificate-authority-data": b64(CA) }, undefined),
      /both certificate-authority and certificate-authority-data/,
    );
    refused(kubeconfig({}, { token: "t", tokenFile: "f" }), /both token and tokenFile/);
  });
  test("a certificate without its key", () => {
    refused(kubeconfig({}, { "client-certificate": "a.crt" }), /client certificate without its key/);
  });
  test("embedded data that is not base64 of PEM is refused without quoting it (it may be a key)", () => {
    const secret = b64("not a pem but secret");
    const msg = refused(
      kubeconfig({}, { "client-certificate-data": b64(CA), "client-key-data": secret }),
      /user "u": client-key-data is not base64 of a PEM PRIVATE KEY block/,
    );
    expect(msg).not.toContain(secret);
  });
  test("missing pieces: no current-context, an unknown context, cluster or user, no server, not YAML", () => {
    refused(kubeconfig({}, undefined, { "current-context": "" }), /names no current-context/);
    refused(kubeconfig({}, undefined), /contexts has no entry named "other"/, "other");
    refused(stringify({ "current-context": "x", contexts: [{ name: "x", context: { cluster: "nope", user: "u" } }] }), /clusters has no entry named "nope"/);
    refused(kubeconfig({ server: "" }, undefined), /cluster "c" has no server/);
    refused("a: [b", /it is not YAML/);
    refused("- just\n- a list\n", /not a YAML mapping/);
  });
});

describe("in-cluster service account (docs/operator.md#in-cluster)", () => {
  test("the API server from KUBERNETES_SERVICE_HOST/PORT (IPv6 in brackets), CA and token from the mounted files", () => {
    expect(inClusterTarget({ KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" })).toEqual({
      server: "https://10.96.0.1:443",
      ca: { file: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" },
      token: { file: "/var/run/secrets/kubernetes.io/serviceaccount/token" },
      namespaceFile: "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
      origin: "the in-cluster service account",
    });
    expect(inClusterTarget({ KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" }).server).toBe("https://[fd00::1]:6443");
  });
  test("outside a pod, without --kubeconfig: a message that says so", () => {
    expect(() => inClusterTarget({})).toThrow(/no --kubeconfig was given and KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is unset/);
    expect(() => inClusterTarget({ KUBERNETES_SERVICE_HOST: "h", KUBERNETES_SERVICE_PORT: "https" })).toThrow(
      /KUBERNETES_SERVICE_PORT "https" is not a port number/,
    );
  });
  test("loadConnection reads the service account's CA, token and namespace", () => {
    const dir = mkdtempSync(join(tmpdir(), "kube-sa-"));
    try {
      writeFileSync(join(dir, "ca.crt"), CA);
      writeFileSync(join(dir, "token"), "tok-1\n");
      writeFileSync(join(dir, "namespace"), "htcondor-operator");
      const c = loadConnection({ env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" }, now: () => 0, serviceAccountDir: dir });
      expect([c.server, c.tls, c.token?.current(), c.namespace]).toEqual(["https://10.96.0.1:443", { ca: CA }, "tok-1", "htcondor-operator"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("the token file is read again at most once a minute, and at once after a 401 (Kubernetes rotates it)", () => {
    const files: Record<string, string> = { "/sa/token": "first" };
    let reads = 0;
    const read = (p: string) => {
      reads++;
      if (!(p in files)) throw Object.assign(new Error("no"), { code: "ENOENT" });
      return files[p]!;
    };
    let now = 0;
    const token = fileToken("/sa/token", read, () => now);
    files["/sa/token"] = "second";
    now = 59_999;
    expect(token.current()).toBe("first");
    expect(reads).toBe(1);
    now = 60_000;
    expect(token.current()).toBe("second");
    files["/sa/token"] = "third";
    expect(token.refresh()).toBe(true);
    expect(token.current()).toBe("third");
    expect(token.refresh()).toBe(false);
    // A read that fails (the kubelet swapping the folder) keeps the last good token.
    delete files["/sa/token"];
    expect(token.refresh()).toBe(false);
    expect(token.current()).toBe("third");
  });
  test("a missing file names itself and its role, never its content", () => {
    const target = parseKubeconfig(kubeconfig({ "certificate-authority": "ca.crt" }, { tokenFile: "tok" }), PATH);
    expect(() =>
      connectionOf(target, () => {
        throw Object.assign(new Error("x"), { code: "ENOENT" });
      }, () => 0)
    ).toThrow(`Cannot read the CA certificate of kubeconfig "${PATH}" (context "main") "/etc/operator/kube/ca.crt": ENOENT`);
  });
});
