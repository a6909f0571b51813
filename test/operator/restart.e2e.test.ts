/**
 * Never twice (docs/operator.md#never-twice): a `kill -9` of the operator between condor_submit
 * and the status write, then a restart, still leaves one cluster; an API server restarted while
 * procs run brings the watch back and submits nothing again. The kill point is reached through
 * the test-only hook HTCJOB_OPERATOR_TEST_HANG_AFTER (docs/operator.md#test-hooks).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { describeKube, type Kube, startKube } from "../helpers/kube.ts";
import { clustersOf, getHTCJob, htcjobYaml, installCrd, makeSite, ok, type Site, startOperator, until } from "./harness.ts";

setDefaultTimeout(240_000);
const NS = "default";

describeKube("HTCJob operator restarts", () => {
  let kube: Kube;
  let site: Site;

  beforeAll(async () => {
    kube = await startKube();
    await installCrd(kube);
    site = makeSite();
  }, 240_000);

  afterAll(async () => {
    site?.destroy();
    await kube?.stop();
  }, 60_000);

  const succeeded = (name: string, n: number) =>
    until(`HTCJob ${name} to succeed`, async () => {
      const j = await getHTCJob(kube, NS, name);
      return j?.status?.succeeded === n ? j : undefined;
    }, 120_000);

  for (const step of ["submit", "record"] as const) {
    // docs/operator.md#never-twice: the store (or a search by UID) decides, never the status.
    test(`kill -9 right after the ${step}, before the status write, then a restart: one cluster`, async () => {
      const name = `crash-${step}`;
      const first = await startOperator(site, kube.kubeconfig("files"), { env: { HTCJOB_OPERATOR_TEST_HANG_AFTER: step } });
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml(name, { queue: 2, source: "echo $1\n" }) }));
      await first.waitLog(new RegExp(`test hook: hanging after ${step}`), 60_000);
      await first.kill9();
      const before = await getHTCJob(kube, NS, name);
      expect(before?.status?.jobid ?? []).toEqual([]);
      expect((await clustersOf(site, before!.metadata.uid)).size).toBe(1);

      const second = await startOperator(site, kube.kubeconfig("files"));
      try {
        const j = await succeeded(name, 2);
        expect(await clustersOf(site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
      } finally {
        await second.stop();
      }
    });
  }

  // docs/operator.md#watching: the watch comes back after an API-server restart; nothing is submitted twice.
  // The API server takes longer to start again than the Lease's renew deadline (10 s), so the
  // operator usually stops leading, takes the Lease again and lists afresh: this test guards that
  // whole way back (checked to fail when a lost Lease is not sought again). The informer's own
  // resume, without a new list, is guarded by client.test.ts ("the watch comes back after the API
  // server restarts"), which fails when a broken watch is not resumed.
  test("an API server restarted while procs run: the watch comes back and nothing is submitted twice", async () => {
    const op = await startOperator(site, kube.kubeconfig("files"));
    try {
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("through", { queue: 2, source: "sleep 6; echo $1\n" }) }));
      const running = await until("the procs to run", async () => {
        const j = await getHTCJob(kube, NS, "through");
        return j?.status?.running === 2 ? j : undefined;
      });
      await kube.restartApiserver();
      const j = await succeeded("through", 2);
      expect(j.status!.clusterId).toBe(running.status!.clusterId!);
      expect(await clustersOf(site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
      // The watch is back: a new HTCJob made after the restart runs too.
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("after", { source: "echo after\n" }) }));
      await succeeded("after", 1);
    } finally {
      await op.stop();
    }
  });
});
