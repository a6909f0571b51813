// The HTCJob controller against an in-memory API server and schedd (test/operator/fakes.ts):
// the findings of the hostile review of issue 21, each with the docs/operator.md section it checks.
import { afterEach, expect, test } from "bun:test";
import { htcjob, world, type World } from "./fakes.ts";

let w: World;
afterEach(() => w?.destroy());

test("a new HTCJob gets its finalizer, one cluster of its procs and a status (docs/operator.md#never-twice)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  await w.controller.reconcile("default/q");
  const o = w.kube.objects.get("default/q")!;
  expect(o.metadata.finalizers).toEqual(["htc.cern.ch/finalizer"]);
  expect(w.schedd.count("submit")).toBe(1);
  expect(o.status?.jobid).toEqual(["100.0", "100.1"]);
  await w.controller.reconcile("default/q");
  expect(w.schedd.count("submit")).toBe(1);
});

test("the namespace allowlist applies only before a submit: a config change does not call live procs 'Nothing was submitted' (docs/operator.md#running-it)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  await w.controller.reconcile("default/q");
  expect(w.schedd.queued.size).toBe(2);
  const ctl = w.restart({ namespaces: ["team-a"] });
  await ctl.reconcile("default/q");
  const st = w.kube.objects.get("default/q")!.status!;
  expect(st.conditions?.map((c) => c.reason)).not.toContain("NamespaceNotAllowed");
  expect(st.clusterId).toBe(100);
  // A new HTCJob in that namespace is still refused.
  w.kube.put(htcjob("r", "uid-2"));
  await ctl.reconcile("default/r");
  expect(w.kube.objects.get("default/r")!.status!.conditions?.[0]?.reason).toBe("NamespaceNotAllowed");
  expect(w.schedd.count("submit")).toBe(1);
});

test("condor_submit refusing the site's own lines (no htcopts) is retried with an Event, not a refusal for good (docs/operator.md#htcopts)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  const { SubmitRefused } = await import("../../src/condor/tools.ts");
  w.schedd.onSubmit = () => {
    throw new SubmitRefused("ERROR: on Line 20 of submit file: the site's accounting_group is unknown", false, 1);
  };
  await expect(w.controller.reconcile("default/q")).rejects.toThrow(/accounting_group/);
  expect(w.store.get("uid-1")?.phase).not.toBe("refused");
  expect(w.events.map((e) => e.reason)).toContain("SubmitFailed");
  expect(w.kube.objects.get("default/q")!.status?.failed ?? 0).toBe(0);
  w.schedd.onSubmit = undefined;
  await w.controller.reconcile("default/q");
  expect(w.kube.objects.get("default/q")!.status!.clusterId).toBe(100);
});
