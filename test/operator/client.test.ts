// The Kubernetes client against a real kube-apiserver 1.20.2 and etcd (test/helpers/kube.ts):
// kubeconfig kinds (docs/operator.md#kubeconfig-forms), the typed client
// (docs/operator.md#the-api-client), watching and re-listing (docs/operator.md#watching), the
// Lease (docs/operator.md#only-one-submits), Events (docs/operator.md#events) and RBAC
// (docs/operator.md#rbac).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { bunRuntime } from "../../src/runtime/bun.ts";
import type { KubeClient, KubeObject, WatchEvent } from "../../src/kube/client.ts";
import { loadConnection, openKubeClient } from "../../src/kube/connect.ts";
import { isConflict, isGone, KubeApiError } from "../../src/kube/errors.ts";
import { createEventRecorder } from "../../src/kube/events.ts";
import { createInformer } from "../../src/kube/informer.ts";
import { createLeaseLock, runLeaderElection } from "../../src/kube/lease.ts";
import { CONFIGMAPS, EVENTS, HTCJOBS, LEASES, NAMESPACES } from "../../src/kube/resources.ts";
import { describeKube, type Kube, startKube } from "../helpers/kube.ts";

const ROOT = join(import.meta.dir, "../..");
const NOBODY = "system:serviceaccount:nobody:nobody";
const OPERATOR_SA = "system:serviceaccount:htcondor-operator:htcjob-operator";

describeKube("the Kubernetes client on a real API server", () => {
  let kube: Kube;
  let admin: KubeClient;
  const closers: (() => void)[] = [];

  const clientFor = (kubeconfig: string): KubeClient => {
    const { client, close } = openKubeClient(bunRuntime, loadConnection({ kubeconfig, env: {}, now: Date.now }));
    closers.push(close);
    return client;
  };
  const namespace = async (name: string) => {
    await admin.create(NAMESPACES, undefined, { metadata: { name } });
  };
  /** Waits (up to a generous deadline, not a timing assertion) until `check` holds. */
  const eventually = async (what: string, check: () => boolean, ms = 60_000) => {
    const until = Date.now() + ms;
    while (!check()) {
      if (Date.now() > until) throw new Error(`Waiting for ${what} failed: not after ${ms / 1000} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    kube = await startKube({ users: [{ name: NOBODY, groups: ["system:serviceaccounts"] }, { name: OPERATOR_SA, groups: ["system:serviceaccounts"] }] });
    admin = clientFor(kube.kubeconfig("files"));
    const crd = await kube.kubectl(["apply", "-f", join(ROOT, "deploy/htcjob-crd.yaml")]);
    expect(crd.stderr).toBe("");
    const ready = await kube.kubectl(["wait", "--for=condition=established", "--timeout=60s", "crd/htcjobs.htc.cern.ch"]);
    expect(ready.code).toBe(0);
  }, 120_000);

  afterAll(async () => {
    for (const close of closers) close();
    await kube?.stop();
  }, 30_000);

  test("each kubeconfig kind reaches the server: certificate files, embedded data, a bearer token", async () => {
    for (const kind of ["files", "embedded", "token"] as const) {
      const ns = await clientFor(kube.kubeconfig(kind)).get(NAMESPACES, undefined, "default");
      expect([kind, ns.metadata.name]).toEqual([kind, "default"]);
    }
  }, 60_000);

  test("on Deno too: each kubeconfig kind gets, lists, watches and creates (docs/operator.md#tls)", async () => {
    const kinds = { files: kube.kubeconfig("files"), embedded: kube.kubeconfig("embedded"), token: kube.kubeconfig("token") };
    const deno = join(ROOT, "node_modules/.bin/deno");
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        deno,
        ["run", "-A", "--no-check", join(import.meta.dir, "client-run.deno.ts"), JSON.stringify(kinds)],
        { timeout: 60_000 },
        (err, out, errOut) => err ? reject(new Error(`deno failed: ${errOut}`)) : resolve(out),
      )
    );
    expect(JSON.parse(stdout)).toEqual({
      files: { namespace: "default", watched: "from-deno-files" },
      embedded: { namespace: "default", watched: "from-deno-embedded" },
      token: { namespace: "default", watched: "from-deno-token" },
    });
  }, 90_000);

  test("a rotated token file: a 401 makes the client read the file again and retry once (docs/operator.md#in-cluster)", async () => {
    const tokenFile = join(kube.dir, "rotating-token");
    const kubeconfig = join(kube.dir, "rotating.kubeconfig");
    writeFileSync(tokenFile, "not-a-valid-token\n");
    writeFileSync(
      kubeconfig,
      stringify({
        "current-context": "t",
        clusters: [{ name: "c", cluster: { server: kube.url, "certificate-authority": kube.caFile } }],
        users: [{ name: "u", user: { tokenFile: "rotating-token" } }],
        contexts: [{ name: "t", context: { cluster: "c", user: "u" } }],
      }),
    );
    const client = clientFor(kubeconfig);
    const err = await client.get(NAMESPACES, undefined, "default").catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(401);
    writeFileSync(tokenFile, kube.token(OPERATOR_SA));
    // The new token authenticates; the operator's account has no right to namespaces, so 403 proves the token was sent.
    const after = await client.get(NAMESPACES, undefined, "default").catch((e) => e);
    expect(after.status).toBe(403);
  }, 60_000);

  test("create, merge patch, JSON patch of finalizers, delete with a UID precondition", async () => {
    await namespace("crud");
    const cm = await admin.create<KubeObject>(CONFIGMAPS, "crud", { metadata: { name: "one" }, data: { a: "1" } });
    const patched = await admin.patch<KubeObject & { data: Record<string, string> }>(CONFIGMAPS, "crud", "one", { data: { b: "2" } }, { type: "merge" });
    expect(patched.data).toEqual({ a: "1", b: "2" });
    await admin.patch(CONFIGMAPS, "crud", "one", [{ op: "add", path: "/metadata/finalizers", value: ["htc.cern.ch/finalizer"] }], { type: "json" });
    // A JSON patch that tests the finalizer before removing it fails if another process changed the list.
    const wrong = await admin.patch(CONFIGMAPS, "crud", "one", [{ op: "test", path: "/metadata/finalizers/0", value: "other" }, {
      op: "remove",
      path: "/metadata/finalizers/0",
    }], {
      type: "json",
    }).catch((e) => e);
    expect(wrong).toBeInstanceOf(KubeApiError);
    const staleUid = await admin.delete(CONFIGMAPS, "crud", "one", { uid: "00000000-0000-0000-0000-000000000000" }).catch((e) => e);
    expect(isConflict(staleUid)).toBe(true);
    await admin.delete(CONFIGMAPS, "crud", "one", { uid: cm.metadata.uid! });
    // The finalizer holds the object: it is marked for deletion, not gone.
    const held = await admin.get(CONFIGMAPS, "crud", "one");
    expect(held.metadata.deletionTimestamp).toBeString();
    await admin.patch(CONFIGMAPS, "crud", "one", [{ op: "test", path: "/metadata/finalizers/0", value: "htc.cern.ch/finalizer" }, {
      op: "remove",
      path: "/metadata/finalizers/0",
    }], {
      type: "json",
    });
    const gone = await admin.get(CONFIGMAPS, "crud", "one").catch((e) => e);
    expect(gone.status).toBe(404);
    expect(gone.message).toBe('Cannot get configmaps "crud/one": the API server answered 404 NotFound: configmaps "one" not found');
  }, 60_000);

  test("an HTCJob's status is written through the status subresource only", async () => {
    await namespace("status");
    await admin.create(HTCJOBS, "status", {
      apiVersion: "htc.cern.ch/v1alpha1",
      kind: "HTCJob",
      metadata: { name: "q" },
      spec: { script: { image: "centos", command: "bash", source: "echo $1\n" } },
    });
    await admin.patch(HTCJOBS, "status", "q", { status: { succeeded: 9 } }, { type: "merge" });
    expect((await admin.get<KubeObject>(HTCJOBS, "status", "q"))["status"]).toBeUndefined();
    await admin.patch(HTCJOBS, "status", "q", { status: { succeeded: 3, jobid: ["7.0", "7.1", "7.2"] } }, { type: "merge", subresource: "status" });
    expect((await admin.get<KubeObject>(HTCJOBS, "status", "q"))["status"]).toEqual({ succeeded: 3, jobid: ["7.0", "7.1", "7.2"] });
  }, 60_000);

  test("watch delivers ADDED, MODIFIED and DELETED from the list's resourceVersion", async () => {
    await namespace("watch");
    const { resourceVersion } = await admin.list(CONFIGMAPS, { namespace: "watch" });
    const ctl = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const ev of admin.watch(CONFIGMAPS, { namespace: "watch", resourceVersion, signal: ctl.signal })) {
        if (ev.type !== "BOOKMARK") seen.push(`${ev.type} ${ev.object.metadata.name}`);
        if (seen.length === 3) break;
      }
    })();
    await admin.create(CONFIGMAPS, "watch", { metadata: { name: "w" }, data: { v: "1" } });
    await admin.patch(CONFIGMAPS, "watch", "w", { data: { v: "2" } }, { type: "merge" });
    await admin.delete(CONFIGMAPS, "watch", "w");
    await watching;
    ctl.abort();
    expect(seen).toEqual(["ADDED w", "MODIFIED w", "DELETED w"]);
  }, 60_000);

  test("a watch from an expired resourceVersion gets 410, and the informer lists again", async () => {
    await namespace("expired");
    await admin.create(CONFIGMAPS, "expired", { metadata: { name: "before" } });
    const { resourceVersion: old } = await admin.list(CONFIGMAPS, { namespace: "expired" });
    await admin.create(CONFIGMAPS, "expired", { metadata: { name: "between" } });
    // A restarted API server's watch cache starts at the newest version: anything older is gone (410 Expired).
    await kube.restartApiserver();
    const raw = await (async () => {
      for await (const _ of admin.watch(CONFIGMAPS, { namespace: "expired", resourceVersion: old })) { /* no event comes before the error */ }
    })().catch((e) => e);
    expect(isGone(raw)).toBe(true);
    expect(raw.message).toMatch(/answered 410 Expired: too old resource version/);

    const ctl = new AbortController();
    const seen: string[] = [];
    const logs: string[] = [];
    const informer = createInformer({
      client: admin,
      resource: CONFIGMAPS,
      namespace: "expired",
      since: old,
      random: Math.random,
      now: Date.now,
      log: (m) => logs.push(m),
      handler: (type, o) => void seen.push(`${type} ${o.metadata.name}`),
    });
    const running = informer.run(ctl.signal);
    await eventually("the informer's list", () => seen.length >= 2);
    await admin.create(CONFIGMAPS, "expired", { metadata: { name: "after" } });
    await eventually("the watch after the list", () => seen.length >= 3);
    ctl.abort();
    await running;
    expect(seen).toEqual(["ADDED before", "ADDED between", "ADDED after"]);
    expect(informer.stats().lists).toBe(1);
    expect(logs.some((l) => l.startsWith(`Listing configmaps again: resourceVersion "${old}" is gone`))).toBe(true);
  }, 120_000);

  test("the watch comes back after the API server restarts", async () => {
    await namespace("restart");
    const ctl = new AbortController();
    const seen: string[] = [];
    const informer = createInformer({
      client: admin,
      resource: CONFIGMAPS,
      namespace: "restart",
      random: Math.random,
      now: Date.now,
      backoff: { initialMs: 200, maxMs: 2000 },
      handler: (type, o) => void seen.push(`${type} ${o.metadata.name}`),
    });
    const running = informer.run(ctl.signal);
    await eventually("the first list", () => informer.synced());
    await admin.create(CONFIGMAPS, "restart", { metadata: { name: "before" } });
    await eventually("the event before the restart", () => seen.includes("ADDED before"));
    await kube.restartApiserver();
    await admin.create(CONFIGMAPS, "restart", { metadata: { name: "after" } });
    await eventually("the event after the restart", () => seen.includes("ADDED after"));
    ctl.abort();
    await running;
    expect(seen).toEqual(["ADDED before", "ADDED after"]);
    expect(informer.stats().watches).toBeGreaterThanOrEqual(2);
  }, 120_000);

  test("a Lease held by one identity makes a second wait, until it is released or expires", async () => {
    await namespace("lease");
    let now = 1_000_000;
    const clock = () => now;
    const a = createLeaseLock({ client: admin, namespace: "lease", name: "op", identity: "replica-a", leaseDurationSeconds: 15, now: clock });
    const b = createLeaseLock({ client: admin, namespace: "lease", name: "op", identity: "replica-b", leaseDurationSeconds: 15, now: clock });
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    expect(b.holder()).toBe("replica-a");
    // A keeps renewing: however long B waits, the Lease keeps changing and stays A's.
    for (let i = 0; i < 3; i++) {
      now += 10_000;
      expect(await a.tryAcquireOrRenew()).toBe(true);
      expect(await b.tryAcquireOrRenew()).toBe(false);
    }
    // A stops renewing: 15 s after B last saw a change, B takes over.
    now += 14_000;
    expect(await b.tryAcquireOrRenew()).toBe(false);
    now += 1_001;
    expect(await b.tryAcquireOrRenew()).toBe(true);
    const lease = await admin.get<KubeObject & { spec: { holderIdentity: string; leaseTransitions: number } }>(LEASES, "lease", "op");
    expect([lease.spec.holderIdentity, lease.spec.leaseTransitions]).toEqual(["replica-b", 1]);
    // A, back, now waits; B releases and A takes the Lease at once.
    expect(await a.tryAcquireOrRenew()).toBe(false);
    await b.release();
    expect(await a.tryAcquireOrRenew()).toBe(true);
  }, 60_000);

  test("runLeaderElection: the second replica's work starts only after the first stops", async () => {
    await namespace("election");
    const order: string[] = [];
    const lock = (identity: string) => createLeaseLock({ client: admin, namespace: "election", name: "op", identity, now: Date.now });
    const stopA = new AbortController();
    const stopB = new AbortController();
    let aLeading = false;
    const runA = runLeaderElection({ lock: lock("a"), retryMs: 100, now: Date.now }, stopA.signal, async (leading) => {
      aLeading = true;
      order.push("a leads");
      await new Promise((r) => leading.addEventListener("abort", r));
      order.push("a stops");
    });
    await eventually("a to lead", () => aLeading);
    const runB = runLeaderElection({ lock: lock("b"), retryMs: 100, now: Date.now }, stopB.signal, async (leading) => {
      order.push("b leads");
      await new Promise((r) => leading.addEventListener("abort", r));
    });
    // B tries several times while A holds the Lease.
    await new Promise((r) => setTimeout(r, 1000));
    expect(order).toEqual(["a leads"]);
    stopA.abort();
    expect(await runA).toBe("stopped");
    await eventually("b to lead", () => order.includes("b leads"));
    stopB.abort();
    expect(await runB).toBe("stopped");
    expect(order).toEqual(["a leads", "a stops", "b leads"]);
  }, 60_000);

  test("Events about an HTCJob: core/v1, a repeat counted on the same Event, shown by kubectl describe", async () => {
    await namespace("events");
    const job = await admin.create<KubeObject>(HTCJOBS, "events", {
      apiVersion: "htc.cern.ch/v1alpha1",
      kind: "HTCJob",
      metadata: { name: "ev" },
      spec: { script: { image: "centos", command: "bash", source: "true\n" } },
    });
    const rec = createEventRecorder({ client: admin, component: "htcjob-operator", instance: "test-host", now: Date.now });
    await rec.record(job, "Normal", "Submitted", "Submitted cluster 12 with 1 proc");
    await rec.record(job, "Normal", "Submitted", "Submitted cluster 12 with 1 proc");
    await rec.record(job, "Warning", "Held", "Proc 12.0 is held");
    const events = await admin.list<KubeObject & { reason: string; count: number; involvedObject: { uid: string } }>(EVENTS, {
      namespace: "events",
      fieldSelector: `involvedObject.uid=${job.metadata.uid}`,
    });
    expect(events.items.map((e) => [e.reason, e.count]).sort()).toEqual([["Held", 1], ["Submitted", 2]]);
    const described = await kube.kubectl(["describe", "htcjob", "-n", "events", "ev"]);
    expect(described.stdout).toMatch(/Normal\s+Submitted\s+.*htcjob-operator\s+Submitted cluster 12 with 1 proc/);
    expect(described.stdout).toMatch(/Warning\s+Held\s+.*Proc 12\.0 is held/);
  }, 60_000);

  test("a token user without RBAC gets a 403 that names the verb and the resource", async () => {
    const nobody = clientFor(kube.kubeconfig("token", NOBODY));
    const err = await nobody.list(HTCJOBS).catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(403);
    expect(err.message).toStartWith(
      'Cannot list htcjobs.htc.cern.ch in all namespaces: the API server answered 403 Forbidden: the operator\'s identity lacks the RBAC verb "list" on "htcjobs" in API group "htc.cern.ch" (see deploy/rbac.yaml): ',
    );
    expect(err.apiMessage).toContain(`User "${NOBODY}" cannot list resource "htcjobs" in API group "htc.cern.ch" at the cluster scope`);
  }, 60_000);

  test("with deploy/rbac.yaml the operator's service account can do what the operator does, and no more", async () => {
    const applied = await kube.kubectl(["apply", "-f", join(ROOT, "deploy/rbac.yaml")]);
    expect(applied.code).toBe(0);
    await namespace("rbac");
    const job = await admin.create<KubeObject>(HTCJOBS, "rbac", {
      apiVersion: "htc.cern.ch/v1alpha1",
      kind: "HTCJob",
      metadata: { name: "r" },
      spec: { script: { image: "centos", command: "bash", source: "true\n" } },
    });
    const op = clientFor(kube.kubeconfig("token", OPERATOR_SA));
    // RBAC takes effect once the API server's own informers have seen the binding.
    let listed: { items: KubeObject[]; resourceVersion: string } | undefined;
    const until = Date.now() + 30_000;
    while (!listed) {
      listed = await op.list(HTCJOBS).catch((e) => {
        if (Date.now() > until) throw e;
        return undefined;
      });
      if (!listed) await new Promise((r) => setTimeout(r, 200));
    }
    expect(listed.items.map((o) => o.metadata.name)).toContain("r");
    const ctl = new AbortController();
    const first = await (async () => {
      for await (const ev of op.watch(HTCJOBS, { resourceVersion: "0", signal: ctl.signal })) return ev as WatchEvent<KubeObject>;
    })();
    ctl.abort();
    expect(first?.type).toBe("ADDED");
    await op.get(HTCJOBS, "rbac", "r");
    await op.patch(HTCJOBS, "rbac", "r", { metadata: { finalizers: ["htc.cern.ch/finalizer"] } }, { type: "merge" });
    await op.patch(HTCJOBS, "rbac", "r", { status: { active: 1 } }, { type: "merge", subresource: "status" });
    await createEventRecorder({ client: op, component: "htcjob-operator", instance: "t", now: Date.now }).record(job, "Normal", "Submitted", "ok");
    const lock = createLeaseLock({ client: op, namespace: "htcondor-operator", name: "htcjob-operator", identity: "x", now: Date.now });
    expect(await lock.tryAcquireOrRenew()).toBe(true);
    expect(await lock.tryAcquireOrRenew()).toBe(true);

    const refused = async (what: Promise<unknown>, verb: string) => {
      const err = (await what.catch((e) => e)) as KubeApiError;
      expect(err).toBeInstanceOf(KubeApiError);
      expect([err.status, err.message]).toEqual([403, expect.stringContaining(`lacks the RBAC verb "${verb}"`)]);
    };
    await refused(op.delete(HTCJOBS, "rbac", "r"), "delete");
    await refused(op.create(HTCJOBS, "rbac", { apiVersion: "htc.cern.ch/v1alpha1", kind: "HTCJob", metadata: { name: "x" }, spec: {} }), "create");
    await refused(op.list(CONFIGMAPS, { namespace: "rbac" }), "list");
    await refused(op.create(LEASES, "rbac", { metadata: { name: "elsewhere" }, spec: {} }), "create");
    // Users get nothing from deploy/: no ClusterRole of it is labelled for aggregation into edit or admin. (The
    // label is what counts: this test server runs no controller-manager, which would do the aggregating.)
    const role = await admin.get<KubeObject>(
      { group: "rbac.authorization.k8s.io", version: "v1", plural: "clusterroles", kind: "ClusterRole", namespaced: false },
      undefined,
      "htcjob-operator",
    );
    expect(Object.keys(role.metadata.labels ?? {}).filter((l) => l.includes("aggregate"))).toEqual([]);
  }, 60_000);
});
