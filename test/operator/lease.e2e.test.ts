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
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeKube, type Kube, startKube } from "../helpers/kube.ts";
import { SHIM } from "../helpers/sidecar.ts";
import { clustersOf, getHTCJob, htcjobYaml, installCrd, makeSite, ok, type Site, startOperator, until } from "./harness.ts";

setDefaultTimeout(300_000);
const NS = "default";
/** The Lease's duration (src/kube/lease.ts's default), and a margin for the waiting replica's 2 s retry. */
const LEASE_SECONDS = 15;

describeKube("HTCJob operator, two replicas", () => {
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

  /** The same schedd and OperatorId as `site`, another data folder. */
  const secondSite = (): Site => {
    const dir = join(site.dir, "replica-2");
    mkdirSync(dir, { recursive: true });
    const configPath = join(dir, "SidecarConfig.yaml");
    writeFileSync(configPath, [`DataRootFolder: ./data`, `ContainerRuntime: ${SHIM}`, "StatusCacheSeconds: 1"].join("\n") + "\n");
    return { ...site, dataRoot: join(dir, "data"), configPath };
  };

  const lease = async () => {
    const out = await ok(kube.kubectl(["get", "lease", "-n", NS, "htcjob-operator", "-o", "json"]));
    return JSON.parse(out) as { spec: { holderIdentity?: string; leaseTransitions?: number } };
  };
  const identityIn = (log: string) => /leading: watching HTCJobs.*?identity[=:" ]+([A-Za-z0-9._-]+)/.exec(log)?.[1];
  const status = (name: string, want: (s: { succeeded?: number; running?: number }) => boolean) =>
    until(`HTCJob ${name}'s status`, async () => {
      const j = await getHTCJob(kube, NS, name);
      return j?.status && want(j.status) ? j : undefined;
    }, 120_000);
  const oneCluster = async (name: string) => {
    const j = (await getHTCJob(kube, NS, name))!;
    expect(typeof j.status?.clusterId).toBe("number");
    expect(await clustersOf(site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
  };

  // docs/operator.md#only-one-submits: a second replica waits; after a kill -9 it takes over, never submitting twice.
  test("a second replica waits while the first leads, and takes over after a kill -9 without submitting twice", async () => {
    const first = await startOperator(site, kube.kubeconfig("files"));
    const second = await startOperator(secondSite(), kube.kubeconfig("files"), { waitFor: /started/ });
    try {
      const firstId = identityIn(first.log());
      expect(firstId).toBeDefined();
      const waitingSince = Date.now();

      // While the first leads, HTCJobs run through it alone.
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("led", { queue: 2, source: "echo $1\n" }) }));
      await status("led", (s) => s.succeeded === 2);
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("long", { queue: 2, source: "sleep 8; echo $1\n" }) }));
      await status("long", (s) => s.running === 2);
      // Past the Lease's duration: a replica that judged the Lease wrongly would have taken it by now.
      const left = (LEASE_SECONDS + 3) * 1000 - (Date.now() - waitingSince);
      if (left > 0) await Bun.sleep(left);
      expect(second.log()).not.toMatch(/leading: watching HTCJobs|submitted/);
      expect((await lease()).spec.holderIdentity).toBe(firstId);

      // kill -9: the Lease is not given up, so the second must wait for it to expire.
      await first.kill9();
      await ok(kube.kubectl(["apply", "-n", NS, "-f", "-"], { stdin: htcjobYaml("orphan", { source: "echo orphan\n" }) }));
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
      const all = [...(await site.queue()), ...(await site.history())];
      expect(all.length).toBe(2 + 2 + 1);
      expect(second.log()).not.toMatch(/ClusterConflict|reconcile failed/);
    } finally {
      await first.stop();
      await second.stop();
    }
  });
});
