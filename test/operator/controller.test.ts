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
