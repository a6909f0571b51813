/**
 * The HTCJob operator on Deno, end to end: issue 21 says the operator works on Bun and on Deno,
 * and the other e2e files run it on Bun (or on Deno with OPERATOR_RUNTIME=deno). This file always
 * runs `deno run src/main.deno.ts operator` against a real kube-apiserver and minicondor, for the
 * core path of docs/operator.md#behaviour: the seed's queue.yaml succeeds with its ids in
 * status.jobid, an exit code other than 0 is a failure, and a delete removes the procs first.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { describeKube, type Kube, startKube } from "../helpers/kube.ts";
import {
  clustersOf,
  EXAMPLES,
  getHTCJob,
  type HTCJobView,
  htcjobYaml,
  installCrd,
  makeSite,
  ok,
  type Operator,
  type Site,
  startOperator,
  until,
} from "./harness.ts";

setDefaultTimeout(180_000);
const NS = "default";

describeKube("HTCJob operator on Deno", () => {
  let kube: Kube;
  let site: Site;
  let op: Operator;
  let ledAt = 0;

  beforeAll(async () => {
    kube = await startKube();
    await installCrd(kube);
    site = makeSite();
    op = await startOperator(site, kube.kubeconfig("files"), { runtime: "deno" });
    ledAt = Date.now();
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
    site?.destroy();
    await kube?.stop();
  }, 60_000);

  const done = (name: string, want: (s: NonNullable<HTCJobView["status"]>) => boolean) =>
    until(`HTCJob ${name}'s status`, async () => {
      const j = await getHTCJob(kube, NS, name);
      return j?.status && want(j.status) ? j : undefined;
    }, 120_000);

  // The operator says which runtime it runs on when it starts (src/operator/main.ts).
  test("the operator runs on Deno", () => {
    expect(op.log()).toMatch(/started .*runtime=deno/);
  });

  // docs/operator.md#status; issue 21: queue.yaml reaches succeeded 3, its ids in status.jobid.
  test("the seed's queue.yaml succeeds, with its ids in status.jobid", async () => {
    await ok(kube.kubectl(["apply", "-n", NS, "-f", join(EXAMPLES, "queue.yaml")]));
    const queue = await done("queue", (s) => s.succeeded === 3);
    expect(queue.status!.jobid).toEqual([0, 1, 2].map((p) => `${queue.status!.clusterId}.${p}`));
    expect(queue.status).toMatchObject({ active: 0, failed: 0, idle: 0, running: 0, held: 0, observedGeneration: 1 });
    expect(queue.status!.conditions!.find((c) => c.type === "Complete")).toMatchObject({ status: "True", reason: "AllSucceeded" });
    expect(queue.metadata.finalizers).toContain("htc.cern.ch/finalizer");
    expect(await clustersOf(site, queue.metadata.uid)).toEqual(new Set([queue.status!.clusterId!]));
  });

  // docs/operator.md#status: exit code 3 is a failure, and the condition names the code.
  test("a script that exits 3 counts as failed", async () => {
    await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("three", { source: "exit 3\n" }) }));
    const j = await done("three", (s) => s.failed === 1);
    expect(j.status).toMatchObject({ succeeded: 0, active: 0 });
    const failed = j.status!.conditions!.find((c) => c.type === "Failed")!;
    expect(failed).toMatchObject({ status: "True", reason: "ProcFailed" });
    expect(failed.message).toContain("exited with code 3");
  });

  // docs/operator.md#deleting: condor_rm of the recorded procs, then the finalizer goes, then the object.
  test("deleting a running HTCJob removes its procs, then the object goes", async () => {
    await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("sleepy", { queue: 2, source: "sleep 300\n" }) }));
    const j = await done("sleepy", (s) => (s.running ?? 0) === 2);
    const uid = j.metadata.uid;
    expect((await site.queue()).filter((a) => a.HTCJobUID === uid && a.JobStatus === 2).length).toBe(2);
    await ok(kube.kubectl(["delete", "htcjob", "-n", NS, "sleepy", "--wait=true", "--timeout=90s"]));
    expect(await getHTCJob(kube, NS, "sleepy")).toBeUndefined();
    const ads = [...(await site.queue()), ...(await site.history())].filter((a) => a.HTCJobUID === uid);
    expect(ads.map((a) => a.JobStatus)).toEqual([3, 3]);
  });

  // docs/operator.md#only-one-submits: a leader that renews every 2 s keeps the Lease; only a
  // renewal missing for 10 s ends its term. Watched past that deadline, with no other replica.
  test("the operator keeps the Lease past the renew deadline", async () => {
    await Bun.sleep(Math.max(0, ledAt + 14_000 - Date.now()));
    expect(op.log()).not.toMatch(/lost the leader-election Lease/);
    expect(op.log().match(/leading: watching HTCJobs/g)).toHaveLength(1);
    expect(op.log()).not.toMatch(/reconcile failed/);
  });
});
