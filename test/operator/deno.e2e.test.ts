/**
 * The HTCJob operator on Deno, end to end: the operator works on Bun and on Deno (docs/operator.md#running-it),
 * and the other e2e files run it on Bun (or on Deno with OPERATOR_RUNTIME=deno). This file always
 * runs `deno run src/main.deno.ts operator` against a real kube-apiserver and minicondor, for the
 * core path of docs/operator.md#behaviour: the seed's queue.yaml succeeds with its ids in
 * status.jobid, an exit code other than 0 is a failure, and a delete removes the procs first.
 */
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { describeKube } from "../helpers/kube.ts";
import { clustersOf, deleteRunning, EXAMPLES, exitThree, ok, operatorE2E } from "./harness.ts";

setDefaultTimeout(180_000);
const NS = "default";

describeKube("HTCJob operator on Deno", () => {
  const e2e = operatorE2E({ operator: { runtime: "deno" } });
  let ledAt = 0;
  // Registered after operatorE2E's, so it runs once the operator leads.
  beforeAll(() => {
    ledAt = Date.now();
  });
  const done = e2e.reach;

  // The operator says which runtime it runs on when it starts (src/operator/main.ts).
  test("the operator runs on Deno", () => {
    expect(e2e.op.log()).toMatch(/started .*runtime=deno/);
  });

  // docs/operator.md#status: queue.yaml reaches succeeded 3, its ids in status.jobid.
  test("the seed's queue.yaml succeeds, with its ids in status.jobid", async () => {
    await ok(e2e.kube.kubectl(["apply", "-n", NS, "-f", join(EXAMPLES, "queue.yaml")]));
    const queue = await done("queue", (s) => s.succeeded === 3);
    expect(queue.status!.jobid).toEqual([0, 1, 2].map((p) => `${queue.status!.clusterId}.${p}`));
    expect(queue.status).toMatchObject({ active: 0, failed: 0, idle: 0, running: 0, held: 0, observedGeneration: 1 });
    expect(queue.status!.conditions!.find((c) => c.type === "Complete")).toMatchObject({ status: "True", reason: "AllSucceeded" });
    expect(queue.metadata.finalizers).toContain("htc.cern.ch/finalizer");
    expect(await clustersOf(e2e.site, queue.metadata.uid)).toEqual(new Set([queue.status!.clusterId!]));
  });

  // docs/operator.md#status: exit code 3 is a failure, and the condition names the code.
  test("a script that exits 3 counts as failed", async () => {
    const { status, failed } = await exitThree(e2e, "three");
    expect(status).toMatchObject({ succeeded: 0, active: 0 });
    expect(failed).toMatchObject({ status: "True", reason: "ProcFailed" });
    expect(failed.message).toContain("exited with code 3");
  });

  // docs/operator.md#deleting: condor_rm of the recorded procs, then the finalizer goes, then the object.
  test("deleting a running HTCJob removes its procs, then the object goes", async () => {
    const d = await deleteRunning(e2e, "sleepy");
    expect(d.runningBefore).toBe(2);
    expect(d.after).toBeUndefined();
    expect(d.ads.map((a) => a.JobStatus)).toEqual([3, 3]);
  });

  // docs/operator.md#only-one-submits: a leader that renews every 2 s keeps the Lease; only a
  // renewal missing for 10 s ends its term. Watched past that deadline, with no other replica.
  test("the operator keeps the Lease past the renew deadline", async () => {
    await Bun.sleep(Math.max(0, ledAt + 14_000 - Date.now()));
    expect(e2e.op.log()).not.toMatch(/lost the leader-election Lease/);
    expect(e2e.op.log().match(/leading: watching HTCJobs/g)).toHaveLength(1);
    expect(e2e.op.log()).not.toMatch(/reconcile failed/);
  });
});
