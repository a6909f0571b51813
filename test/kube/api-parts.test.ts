// The pure parts of the API client: paths, error messages (docs/operator.md#rbac), backoff
// (docs/operator.md#watching), and the informer's list/watch/re-list loop against a fake client.
import { describe, expect, test } from "bun:test";
import { backoffDelay } from "../../src/kube/backoff.ts";
import type { KubeClient, KubeObject, WatchEvent } from "../../src/kube/client.ts";
import { apiError, isGone, KubeApiError } from "../../src/kube/errors.ts";
import { createInformer } from "../../src/kube/informer.ts";
import { microTime } from "../../src/kube/lease.ts";
import { CONFIGMAPS, HTCJOBS, LEASES, NAMESPACES, resourcePath } from "../../src/kube/resources.ts";

describe("resourcePath", () => {
  test("core and grouped resources, namespaced or not, with a subresource", () => {
    expect(resourcePath(CONFIGMAPS, { namespace: "ns" })).toBe("/api/v1/namespaces/ns/configmaps");
    expect(resourcePath(HTCJOBS)).toBe("/apis/htc.cern.ch/v1alpha1/htcjobs");
    expect(resourcePath(HTCJOBS, { namespace: "a", name: "q", subresource: "status" })).toBe("/apis/htc.cern.ch/v1alpha1/namespaces/a/htcjobs/q/status");
    expect(resourcePath(LEASES, { namespace: "op", name: "htcjob-operator" })).toBe("/apis/coordination.k8s.io/v1/namespaces/op/leases/htcjob-operator");
  });
  test("a segment cannot climb out of its place", () => {
    expect(() => resourcePath(CONFIGMAPS, { namespace: "ns", name: ".." })).toThrow('Cannot use name ".." in an API path');
    expect(resourcePath(CONFIGMAPS, { namespace: "ns", name: "a/b" })).toBe("/api/v1/namespaces/ns/configmaps/a%2Fb");
    expect(() => resourcePath(NAMESPACES, { namespace: "x" })).toThrow(/cluster-scoped/);
  });
});

describe("API errors carry the status and the API's message", () => {
  test("a 403 names the missing verb, resource, group and namespace (docs/operator.md#rbac)", () => {
    const body = JSON.stringify({
      kind: "Status",
      status: "Failure",
      reason: "Forbidden",
      code: 403,
      message:
        'htcjobs.htc.cern.ch "q" is forbidden: User "system:serviceaccount:op:op" cannot patch resource "htcjobs/status" in API group "htc.cern.ch" in the namespace "a"',
    });
    const err = apiError({ verb: "patch", resource: "htcjobs.htc.cern.ch/status", namespace: "a", name: "q" }, 403, body);
    expect(err.kind).toBe("forbidden");
    expect(err.status).toBe(403);
    expect(err.message).toBe(
      `Cannot patch htcjobs.htc.cern.ch/status "a/q": the API server answered 403 Forbidden: the operator's identity lacks the RBAC verb "patch" on "htcjobs/status" in API group "htc.cern.ch" in namespace "a" (see deploy/rbac.yaml): htcjobs.htc.cern.ch "q" is forbidden: User "system:serviceaccount:op:op" cannot patch resource "htcjobs/status" in API group "htc.cern.ch" in the namespace "a"`,
    );
  });
  test("a list over all namespaces, a core resource, a body that is not a Status", () => {
    const err = apiError({ verb: "list", resource: "configmaps" }, 403, '{"kind":"Status","reason":"Forbidden","message":"nope"}');
    expect(err.message).toBe(
      `Cannot list configmaps in all namespaces: the API server answered 403 Forbidden: the operator's identity lacks the RBAC verb "list" on "configmaps" in API group "" (see deploy/rbac.yaml): nope`,
    );
    expect(apiError({ verb: "get", resource: "configmaps", namespace: "n", name: "x" }, 502, "<html>Bad gateway\nmore").message).toBe(
      `Cannot get configmaps "n/x": the API server answered 502: <html>Bad gateway`,
    );
  });
  test("410 is Gone whether from the status line or a watch ERROR event's reason", () => {
    expect(
      isGone(apiError({ verb: "watch", resource: "configmaps" }, 410, '{"kind":"Status","reason":"Expired","message":"too old resource version: 1 (40)"}')),
    ).toBe(true);
    expect(isGone(new KubeApiError({ verb: "watch", resource: "configmaps" }, 500, "Expired", "too old"))).toBe(true);
    expect(isGone(apiError({ verb: "watch", resource: "configmaps" }, 500, ""))).toBe(false);
  });
});

describe("backoffDelay", () => {
  test("doubles from the initial delay up to the cap; jitter places it between half and all", () => {
    const p = { initialMs: 100, maxMs: 1000 };
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, () => 0.999999, p))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect([1, 2, 5].map((n) => backoffDelay(n, () => 0, p))).toEqual([50, 100, 500]);
    expect(backoffDelay(1000, () => 0.5, p)).toBe(750);
  });
});

test("microTime has six fractional digits, as a Lease's MicroTime needs", () => {
  expect(microTime(Date.UTC(2026, 10, 27, 18, 0, 0, 123))).toBe("2026-11-27T18:00:00.123000Z");
});

/** A fake API: lists answer from `objects`, watches play scripted sessions (events, then an end or an error). */
function fakeClient(objects: Map<string, KubeObject>, sessions: (WatchEvent<KubeObject>[] | Error)[], calls: string[]): KubeClient {
  const none = () => Promise.reject(new Error("not in this fake"));
  return {
    server: "https://fake",
    get: none,
    create: none,
    replace: none,
    patch: none,
    delete: none,
    list: <T extends KubeObject>() => {
      calls.push("list");
      return Promise.resolve({ items: [...objects.values()] as T[], resourceVersion: String(10 + calls.length) });
    },
    async *watch<T extends KubeObject>(_ref: unknown, o: { resourceVersion: string }) {
      calls.push(`watch@${o.resourceVersion}`);
      const s = sessions.shift();
      if (s === undefined) throw new Error("no more sessions");
      if (s instanceof Error) throw s;
      for (const ev of s) yield ev as WatchEvent<T>;
    },
  };
}

const obj = (name: string, rv: string): KubeObject => ({ metadata: { name, namespace: "ns", resourceVersion: rv } });

describe("informer (docs/operator.md#watching)", () => {
  test("lists, watches from the list's version, re-lists on 410, and reports what vanished meanwhile", async () => {
    const objects = new Map([["a", obj("a", "5")], ["b", obj("b", "6")]]);
    const calls: string[] = [];
    const seen: string[] = [];
    const ctl = new AbortController();
    const gone = new KubeApiError({ verb: "watch", resource: "configmaps" }, 410, "Expired", "too old resource version");
    const sessions: (WatchEvent<KubeObject>[] | Error)[] = [
      [{ type: "MODIFIED", object: obj("a", "20") }, { type: "BOOKMARK", object: obj("", "25") }],
      gone,
    ];
    let t = 0;
    const inf = createInformer({
      client: fakeClient(objects, sessions, calls),
      resource: CONFIGMAPS,
      random: () => 0,
      now: () => (t += 2000),
      sleep: () => Promise.resolve(),
      handler: (type, o) => {
        seen.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`);
        // While the watch was gone, "b" was deleted and "c" created.
        if (seen.length === 3) {
          objects.set("a", obj("a", "20"));
          objects.delete("b");
          objects.set("c", obj("c", "30"));
        }
        if (seen.length === 5) ctl.abort();
      },
    });
    await inf.run(ctl.signal);
    expect(calls).toEqual(["list", "watch@11", "watch@25", "list"]);
    expect(seen).toEqual(["ADDED a@5", "ADDED b@6", "MODIFIED a@20", "ADDED c@30", "DELETED b@6"]);
    expect(inf.list().map((o) => o.metadata.name).sort()).toEqual(["a", "c"]);
    expect(inf.stats()).toEqual({ lists: 2, watches: 2, failures: 0 });
  });
  test("backs off (growing, jittered) on errors and on watches that end at once, and starts from `since` without a list", async () => {
    const calls: string[] = [];
    const delays: number[] = [];
    const ctl = new AbortController();
    const sessions: (WatchEvent<KubeObject>[] | Error)[] = [new Error("connection refused"), new Error("connection refused"), [], [{
      type: "ADDED",
      object: obj("x", "50"),
    }]];
    const inf = createInformer({
      client: fakeClient(new Map(), sessions, calls),
      resource: CONFIGMAPS,
      since: "40",
      random: () => 0.5,
      now: () => 0,
      backoff: { initialMs: 100, maxMs: 10_000 },
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
      handler: () => ctl.abort(),
    });
    await inf.run(ctl.signal);
    expect(calls).toEqual(["watch@40", "watch@40", "watch@40", "watch@40"]);
    expect(delays).toEqual([75, 150, 300]);
    expect(inf.resourceVersion()).toBe("50");
  });
});
