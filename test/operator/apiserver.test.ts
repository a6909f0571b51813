/**
 * The test harness itself (test/helpers/kube.ts) against the real kube-apiserver, and the HTCJob
 * CRD (deploy/htcjob-crd.yaml) as the server enforces it. What 1.20 offers is listed in
 * docs/kube-apiserver.md#what-kubernetes-120-offers-an-operator; the CRD's fields are docs/operator.md's
 * "The API" section.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ADMIN_TOKEN_USER, describeKube, type Kube, rssMiB, startKube } from "../helpers/kube.ts";
import { scaleDefaultTimeout } from "../helpers/sidecar.ts";

// Each test runs kubectl or waits on the API server: a guard against a hang, not bun's 5 s.
await scaleDefaultTimeout(60_000);

const ROOT = resolve(import.meta.dir, "../..");
const CRD = join(ROOT, "deploy", "htcjob-crd.yaml");
const NS = "smoke";
const NOBODY = `system:serviceaccount:${NS}:nobody`;
const READER = `system:serviceaccount:${NS}:reader`;
const HTCJOBS = `/apis/htc.cern.ch/v1alpha1/namespaces/${NS}/htcjobs`;

describeKube("kube-apiserver harness", () => {
  let kube: Kube;
  const tls = () => ({ ca: kube.caPem, cert: kube.admin.certPem, key: kube.admin.keyPem });
  const api = (path: string, init: RequestInit & { token?: string } = {}) => {
    const { token, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    // A token request carries no client certificate: the token alone must decide who it is.
    return fetch(kube.url + path, { ...rest, headers, tls: token !== undefined ? { ca: kube.caPem } : tls() });
  };
  const ok = async (r: Promise<{ code: number; stdout: string; stderr: string }>) => {
    const out = await r;
    if (out.code !== 0) throw new Error(`kubectl failed (${out.code}): ${out.stderr}`);
    return out.stdout;
  };

  beforeAll(async () => {
    kube = await startKube({ users: [{ name: NOBODY }, { name: READER }] });
    console.error(
      `kube-apiserver ready in ${(kube.startMs / 1000).toFixed(1)} s; rss apiserver ${rssMiB(kube.pids().apiserver)} MiB, etcd ${rssMiB(kube.pids().etcd)} MiB`,
    );
    await ok(kube.kubectl(["create", "namespace", NS]));
    await ok(kube.kubectl(["apply", "-f", CRD]));
    await ok(kube.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd/htcjobs.htc.cern.ch"]));
  }, 240_000);

  afterAll(async () => {
    await kube?.stop();
  }, 60_000);

  // docs/kube-apiserver.md#the-test-harness: ready means readyz 200 and the default namespace exists.
  test("the server is ready and the admin certificate is in system:masters", async () => {
    expect((await api("/readyz")).status).toBe(200);
    expect((await api("/api/v1/namespaces/default")).status).toBe(200);
    const who = await api("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb: "*", resource: "*" } },
      }),
    });
    expect(((await who.json()) as { status: { allowed: boolean } }).status.allowed).toBe(true);
  });

  // docs/kube-apiserver.md#the-test-harness: the three kubeconfig forms reach the same server.
  test("each kind of kubeconfig works with kubectl", async () => {
    for (const kind of ["files", "embedded", "token"] as const) {
      const out = await ok(kube.kubectl(["get", "namespace", NS, "-o", "name"], { kubeconfig: kube.kubeconfig(kind) }));
      expect(out.trim()).toBe(`namespace/${NS}`);
    }
    const embedded = readFileSync(kube.kubeconfig("embedded"), "utf8");
    expect(embedded).toContain("client-key-data:");
    expect(embedded).not.toContain(kube.dir);
  });

  // deploy/htcjob-crd.yaml: script.image, script.command and script.source are required by the schema.
  test("the server refuses an HTCJob without script.source, and one with a negative queue", async () => {
    const noSource = {
      apiVersion: "htc.cern.ch/v1alpha1",
      kind: "HTCJob",
      metadata: { name: "nosource" },
      spec: { script: { image: "centos", command: "bash" } },
    };
    // --validate=false: kubectl 1.20 checks the object itself once the server publishes the CRD's
    // schema in its OpenAPI, which it does a moment after the CRD is established (sooner or later
    // than this test on a busy machine); the refusal asserted here is the server's.
    const r = await kube.kubectl(["create", "--validate=false", "-n", NS, "-f", "-"], { stdin: JSON.stringify(noSource) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("spec.script.source: Required value");

    const negative = { ...noSource, metadata: { name: "negative" }, spec: { queue: -1, script: { image: "centos", command: "bash", source: "true" } } };
    const n = await kube.kubectl(["create", "--validate=false", "-n", NS, "-f", "-"], { stdin: JSON.stringify(negative) });
    expect(n.code).not.toBe(0);
    expect(n.stderr).toContain("spec.queue");
    expect((await api(`${HTCJOBS}/nosource`)).status).toBe(404);
    expect((await api(`${HTCJOBS}/negative`)).status).toBe(404);
  });

  // docs/operator.md#behaviour: the original's examples work unchanged; `kubectl get htcj` shows the progress.
  test("the original's zero.yaml and queue.yaml are accepted, and kubectl get htcj shows the counts", async () => {
    for (const name of ["zero", "queue"]) await ok(kube.kubectl(["create", "-n", NS, "-f", join(ROOT, "deploy", "examples", `${name}.yaml`)]));
    const queue = (await (await api(`${HTCJOBS}/queue`)).json()) as { spec: { queue: number; name: string; script: { source: string } } };
    expect(queue.spec.queue).toBe(3);
    expect(queue.spec.script.source).toBe("echo $1\n");
    expect(queue.spec.name).toBe("queue");

    // docs/kube-apiserver.md#what-kubernetes-120-offers-an-operator: status is written through /status (merge patch).
    const patch = await api(`${HTCJOBS}/queue/status`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ status: { active: 0, succeeded: 3, failed: 0, jobid: ["7.0", "7.1", "7.2"], clusterId: 7 } }),
    });
    expect(patch.status).toBe(200);
    const table = await ok(kube.kubectl(["get", "htcj", "-n", NS]));
    const header = (table.split("\n")[0] ?? "").split(/\s+/);
    expect(header).toEqual(["NAME", "ACTIVE", "SUCCEEDED", "FAILED", "AGE"]);
    const row = table.split("\n").find((l) => l.startsWith("queue "))!.split(/\s+/);
    expect(row.slice(0, 4)).toEqual(["queue", "0", "3", "0"]);
  });

  // docs/kube-apiserver.md#what-kubernetes-120-offers-an-operator: with a status subresource, a
  // status sent through the main resource is ignored.
  test("a status written through the main resource is ignored", async () => {
    const r = await api(`${HTCJOBS}/zero`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ status: { succeeded: 1 } }),
    });
    expect(r.status).toBe(200);
    const zero = (await r.json()) as { status?: { succeeded?: number } };
    expect(zero.status?.succeeded).toBeUndefined();
  });

  // docs/kube-apiserver.md#what-kubernetes-120-offers-an-operator: watch streams ADDED, MODIFIED, DELETED as JSON lines.
  test("a watch streams ADDED, MODIFIED and DELETED", async () => {
    const list = (await (await api(HTCJOBS)).json()) as { metadata: { resourceVersion: string } };
    const abort = new AbortController();
    const watch = await api(`${HTCJOBS}?watch=1&resourceVersion=${list.metadata.resourceVersion}`, { signal: abort.signal });
    expect(watch.status).toBe(200);
    const events: string[] = [];
    const reading = (async () => {
      const reader = watch.body!.getReader();
      const decoder = new TextDecoder();
      let buffered = "";
      while (events.length < 3) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const e = JSON.parse(buffered.slice(0, nl)) as { type: string; object: { metadata: { name: string } } };
          buffered = buffered.slice(nl + 1);
          if (e.object.metadata.name === "watched") events.push(e.type);
        }
      }
    })();
    const job = {
      apiVersion: "htc.cern.ch/v1alpha1",
      kind: "HTCJob",
      metadata: { name: "watched" },
      spec: { script: { image: "centos", command: "bash", source: "true" } },
    };
    await ok(kube.kubectl(["create", "-n", NS, "-f", "-"], { stdin: JSON.stringify(job) }));
    await ok(kube.kubectl(["label", "-n", NS, "htcj", "watched", "seen=yes"]));
    await ok(kube.kubectl(["delete", "-n", NS, "htcj", "watched"]));
    await reading;
    abort.abort();
    expect(events).toEqual(["ADDED", "MODIFIED", "DELETED"]);
  });

  // docs/kube-apiserver.md#the-test-harness: static-token users stand in for service accounts;
  // RBAC refuses one without a role (403), and an unknown token is unauthenticated (401).
  test("RBAC: a token user without a role gets 403, a bad token 401, a granted one 200", async () => {
    const denied = await api(HTCJOBS, { token: kube.token(NOBODY) });
    expect(denied.status).toBe(403);
    const reason = (await denied.json()) as { message: string };
    expect(reason.message).toContain(`"${NOBODY}" cannot list resource "htcjobs"`);
    expect((await api(HTCJOBS, { token: "not-a-token" })).status).toBe(401);
    expect((await api(HTCJOBS, { token: kube.token(ADMIN_TOKEN_USER) })).status).toBe(200);

    await ok(kube.kubectl(["create", "role", "htcj-reader", "-n", NS, "--verb=list,get", "--resource=htcjobs.htc.cern.ch"]));
    await ok(kube.kubectl(["create", "rolebinding", "htcj-reader", "-n", NS, "--role=htcj-reader", `--user=${READER}`]));
    expect((await api(HTCJOBS, { token: kube.token(READER) })).status).toBe(200);
    expect((await api(HTCJOBS, { token: kube.token(NOBODY) })).status).toBe(403);
    // kubectl with a token kubeconfig reads the same refusal.
    const r = await kube.kubectl(["get", "htcj", "-n", NS], { kubeconfig: kube.kubeconfig("token", NOBODY) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("forbidden");
  });

  // docs/kube-apiserver.md#the-test-harness: restartApiserver keeps etcd, so objects survive, on the same URL.
  test("restartApiserver: the same URL answers again and the objects are still there", async () => {
    const before = kube.pids();
    await kube.restartApiserver();
    expect(kube.pids().apiserver).not.toBe(before.apiserver);
    expect(kube.pids().etcd).toBe(before.etcd);
    const names = await ok(kube.kubectl(["get", "htcj", "-n", NS, "-o", "name"]));
    expect(names.trim().split("\n").sort()).toEqual(["htcjob.htc.cern.ch/queue", "htcjob.htc.cern.ch/zero"]);
  }, 240_000);
});
