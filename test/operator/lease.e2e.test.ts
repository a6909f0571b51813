/**
 * Only one submits (docs/operator.md#only-one-submits): a second replica of the operator, with
 * the same kubeconfig and so the same Lease, waits and submits nothing while the first holds it;
 * when the first is killed with `kill -9` (no chance to give the Lease up), the second takes over
 * once the Lease has gone unrenewed for its duration, and nothing is submitted twice.
 *
 * The second replica has a data folder of its own (a new pod on a new volume, the worst case):
 * so its store cannot be what keeps it from submitting while it waits, only the Lease can; and
 * after the takeover it knows the first's clusters only from each HTCJob's status
 * (docs/operator.md#never-twice).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeKube } from "../helpers/kube.ts";
import { SHIM } from "../helpers/sidecar.ts";
import { clustersOf, getHTCJob, OPERATOR_LEASE, operatorE2E, type Site, startOperator } from "./harness.ts";

setDefaultTimeout(300_000);
const NS = "default";
/**
 * The Lease's duration (`--lease-duration`, docs/operator.md#running-it): the test waits past it
 * while the first replica leads, then for the takeover. Shorter than the default 15 s, long enough
 * that a renewal (every 2/15 of it) slowed by a busy machine does not miss the deadline (2/3 of it).
 */
const LEASE_SECONDS = 8;
const LEASE_ARGS = ["--lease-duration", String(LEASE_SECONDS)];

describeKube("HTCJob operator, two replicas", () => {
  const e2e = operatorE2E({ operator: false });

  /** The same schedd and OperatorId as `site`, another data folder. */
  const secondSite = (): Site => {
    const dir = join(e2e.site.dir, "replica-2");
    mkdirSync(dir, { recursive: true });
    const configPath = join(dir, "SidecarConfig.yaml");
    writeFileSync(configPath, [`DataRootFolder: ./data`, `ContainerRuntime: ${SHIM}`, "StatusCacheSeconds: 1"].join("\n") + "\n");
    return { ...e2e.site, dataRoot: join(dir, "data"), configPath };
  };

  const lease = async () => {
    const r = await e2e.kube.get(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${OPERATOR_LEASE}`);
    if (r.status !== 200) throw new Error(`GET lease failed (${r.status}): ${r.body}`);
    return JSON.parse(r.body) as { spec: { holderIdentity?: string; leaseTransitions?: number; leaseDurationSeconds?: number } };
  };
  const identityIn = (log: string) => /leading: watching HTCJobs.*?identity[=:" ]+([A-Za-z0-9._-]+)/.exec(log)?.[1];
  const status = e2e.reach;
  const oneCluster = async (name: string) => {
    const j = (await getHTCJob(e2e.kube, NS, name))!;
    expect(typeof j.status?.clusterId).toBe("number");
    expect(await clustersOf(e2e.site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
  };

  // docs/operator.md#only-one-submits: a second replica waits; after a kill -9 it takes over, never submitting twice.
  test("a second replica waits while the first leads, and takes over after a kill -9 without submitting twice", async () => {
    const first = await startOperator(e2e.site, e2e.kube.kubeconfig("files"), { args: LEASE_ARGS });
    const second = await startOperator(secondSite(), e2e.kube.kubeconfig("files"), { args: LEASE_ARGS, waitFor: /started/ });
    try {
      const firstId = identityIn(first.log());
      expect(firstId).toBeDefined();
      const waitingSince = Date.now();

      // While the first leads, HTCJobs run through it alone.
      await e2e.create("led", { queue: 2, source: "echo $1\n" });
      await status("led", (s) => s.succeeded === 2);
      await e2e.create("long", { queue: 2, source: "sleep 8; echo $1\n" });
      await status("long", (s) => s.running === 2);
      // Past the Lease's duration: a replica that judged the Lease wrongly would have taken it by now.
      const left = (LEASE_SECONDS + 3) * 1000 - (Date.now() - waitingSince);
      if (left > 0) await Bun.sleep(left);
      expect(second.log()).not.toMatch(/leading: watching HTCJobs|submitted/);
      expect((await lease()).spec).toMatchObject({ holderIdentity: firstId, leaseDurationSeconds: LEASE_SECONDS });

      // kill -9: the Lease is not given up, so the second must wait for it to expire.
      await first.kill9();
      await e2e.create("orphan", { source: "echo orphan\n" });
      await second.waitLog(/leading: watching HTCJobs/, 90_000);
      const secondId = identityIn(second.log());
      expect(secondId).toBeDefined();
      expect(secondId).not.toBe(firstId);
      const after = await lease();
      expect(after.spec.holderIdentity).toBe(secondId);
      expect(after.spec.leaseTransitions).toBe(1);

      // The second finishes what the first began and runs what nobody had: each HTCJob one cluster.
      await status("long", (s) => s.succeeded === 2);
      await status("orphan", (s) => s.succeeded === 1);
      for (const name of ["led", "long", "orphan"]) await oneCluster(name);
      // Every proc in the schedd is one of these three HTCJobs' clusters: nothing else was submitted.
      const all = await e2e.site.jobs();
      expect(all.length).toBe(2 + 2 + 1);
      expect(second.log()).not.toMatch(/ClusterConflict|reconcile failed/);
    } finally {
      await first.stop();
      await second.stop();
    }
  });
});
