/**
 * Never twice (docs/operator.md#never-twice): a `kill -9` of the operator between condor_submit
 * and the status write, then a restart, still leaves one cluster; an API server restarted while
 * procs run brings the watch back and submits nothing again. The kill point is reached through
 * minicondor's fault `slowafter` (test/minicondor/README.md#fault-injection): the schedd has
 * queued the cluster, and condor_submit has not answered yet; or after the record, with the API
 * server stopped (SIGSTOP) so that the status write waits, and then killed with it.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeKube } from "../helpers/kube.ts";
import { clustersOf, dropLease, getHTCJob, operatorE2E, startOperator, until } from "./harness.ts";

setDefaultTimeout(240_000);
const NS = "default";

describeKube("HTCJob operator restarts", () => {
  const e2e = operatorE2E({ operator: false });
  const succeeded = (name: string, n: number) => e2e.reach(name, (s) => s.succeeded === n);

  // docs/operator.md#never-twice: the store (or a search by UID) decides, never the status.
  test("kill -9 once the cluster is queued, before condor_submit answers and the status is written, then a restart: one cluster", async () => {
    const name = "crash-submit";
    const faults = join(e2e.site.home, "faults.json");
    // The jobs are queued, then condor_submit sleeps before it prints the cluster's id.
    writeFileSync(faults, JSON.stringify({ tools: { condor_submit: "slowafter:30000" } }));
    const first = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    await e2e.create(name, { queue: 2, source: "echo $1\n" });
    const uid = await until("the HTCJob's uid", async () => (await getHTCJob(e2e.kube, NS, name))?.metadata.uid);
    await until("the cluster queued", async () => ((await clustersOf(e2e.site, uid)).size === 1 ? true : undefined));
    await first.kill9();
    writeFileSync(faults, "{}");
    const before = await getHTCJob(e2e.kube, NS, name);
    expect(before?.status?.jobid ?? []).toEqual([]);
    expect((await clustersOf(e2e.site, uid)).size).toBe(1);

    await dropLease(e2e.kube);
    const second = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    try {
      const j = await succeeded(name, 2);
      expect(await clustersOf(e2e.site, uid)).toEqual(new Set([j.status!.clusterId!]));
    } finally {
      await second.stop();
    }
  });

  // docs/operator.md#never-twice: the cluster recorded in the store, the status not yet written.
  // The API server is stopped (SIGSTOP) while condor_submit still sleeps, so that the status write
  // after the record waits; the operator logs "submitted" once the record is in its store. Then
  // the operator is killed, and the API server too, with the write unread.
  test("kill -9 after the cluster is recorded, before the status is written, then a restart: one cluster", async () => {
    const name = "crash-record";
    const faults = join(e2e.site.home, "faults.json");
    writeFileSync(faults, JSON.stringify({ tools: { condor_submit: "slowafter:3000" } }));
    const first = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    const apiserver = e2e.kube.pids().apiserver;
    let stopped = false;
    try {
      await e2e.create(name, { queue: 2, source: "echo $1\n" });
      const uid = await until("the HTCJob's uid", async () => (await getHTCJob(e2e.kube, NS, name))?.metadata.uid);
      await until("the cluster queued", async () => ((await clustersOf(e2e.site, uid)).size === 1 ? true : undefined));
      process.kill(apiserver, "SIGSTOP");
      stopped = true;
      await first.waitLog(/INFO {2}submitted htcjob=default\/crash-record/, 60_000);
      await first.kill9();
      // The status write sits in the stopped server's socket: a SIGCONT would still apply it. A
      // server that dies with it loses it, as one that crashed would (etcd keeps the rest).
      process.kill(apiserver, "SIGKILL");
      stopped = false;
      await e2e.kube.restartApiserver();
      writeFileSync(faults, "{}");
      const before = await until("the API server back", () => getHTCJob(e2e.kube, NS, name));
      expect(before.status?.jobid ?? []).toEqual([]);
      expect((await clustersOf(e2e.site, uid)).size).toBe(1);

      await dropLease(e2e.kube);
      const second = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
      try {
        const j = await succeeded(name, 2);
        expect(await clustersOf(e2e.site, uid)).toEqual(new Set([j.status!.clusterId!]));
        expect(second.log()).not.toMatch(/INFO {2}submitted htcjob=default\/crash-record/);
      } finally {
        await second.stop();
      }
    } finally {
      if (stopped) process.kill(apiserver, "SIGCONT");
      await first.kill9();
    }
  });

  // docs/operator.md#watching: the watch comes back after an API-server restart; nothing is submitted twice.
  // The API server takes longer to start again than the Lease's renew deadline (10 s), so the
  // operator usually stops leading, takes the Lease again and lists afresh: this test guards that
  // whole way back (checked to fail when a lost Lease is not sought again). The informer's own
  // resume, without a new list, is guarded by client.test.ts ("the watch comes back after the API
  // server restarts"), which fails when a broken watch is not resumed.
  test("an API server restarted while procs run: the watch comes back and nothing is submitted twice", async () => {
    const op = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    try {
      await e2e.create("through", { queue: 2, source: "sleep 6; echo $1\n" });
      const running = await until("the procs to run", async () => {
        const j = await getHTCJob(e2e.kube, NS, "through");
        return j?.status?.running === 2 ? j : undefined;
      });
      await e2e.kube.restartApiserver();
      const j = await succeeded("through", 2);
      expect(j.status!.clusterId).toBe(running.status!.clusterId!);
      expect(await clustersOf(e2e.site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
      // The watch is back: a new HTCJob made after the restart runs too.
      await e2e.create("after", { source: "echo after\n" });
      await succeeded("after", 1);
    } finally {
      await op.stop();
    }
  });
});
