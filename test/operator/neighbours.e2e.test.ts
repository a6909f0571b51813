/**
 * The operator among others: with deploy/rbac.yaml's rights (a service-account token, not the
 * admin) it works, and without them it says which verb it lacks (docs/operator.md#rbac); an
 * operator and an interLink sidecar on one schedd leave each other's jobs alone
 * (docs/operator.md#beside-a-sidecar).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { describeKube } from "../helpers/kube.ts";
import { ROOT, startSidecar } from "../helpers/sidecar.ts";
import { getHTCJob, ok, operatorE2E, startOperator, until } from "./harness.ts";

setDefaultTimeout(240_000);
const NS = "default";
const OPERATOR_SA = "system:serviceaccount:htcondor-operator:htcjob-operator";
const NOBODY = "system:serviceaccount:default:nobody";

describeKube("HTCJob operator among others", () => {
  const e2e = operatorE2E({
    kube: { users: [{ name: OPERATOR_SA }, { name: NOBODY }] },
    setup: (kube) => ok(kube.kubectl(["apply", "-f", join(ROOT, "deploy", "rbac.yaml")])),
    operator: false,
  });
  const succeeded = (name: string, n: number) => e2e.reach(name, (s) => s.succeeded === n);

  // docs/operator.md#rbac: deploy/rbac.yaml grants exactly what the operator uses.
  test("with the roles in deploy/rbac.yaml the operator works", async () => {
    const op = await startOperator(e2e.site, e2e.kube.kubeconfig("token", OPERATOR_SA), { args: ["--lease-namespace", "htcondor-operator"] });
    try {
      await ok(e2e.kube.kubectl(["apply", "-n", NS, "-f", join(ROOT, "deploy", "examples", "queue.yaml")]));
      const j = await succeeded("queue", 3);
      expect(j.metadata.finalizers).toContain("htc.cern.ch/finalizer");
      await ok(e2e.kube.kubectl(["delete", "htcjob", "-n", NS, "queue", "--timeout=60s"]));
      // as src/kube/errors.ts words a 403 (a bare /403/ also matches a UID or a timestamp's milliseconds)
      expect(op.log()).not.toMatch(/answered 403|lacks the RBAC verb/);
    } finally {
      await op.stop();
    }
  });

  // docs/operator.md#rbac: a missing verb is reported by name.
  test("without them it says which verb it lacks", async () => {
    const op = await startOperator(e2e.site, e2e.kube.kubeconfig("token", NOBODY), { waitFor: /lacks the RBAC verb/ });
    try {
      expect(op.log()).toMatch(/lacks the RBAC verb "get" on "leases" in API group "coordination.k8s.io"/);
    } finally {
      await op.stop();
    }
    // The Lease granted, HTCJobs not: the list is what it says it lacks.
    await ok(e2e.kube.kubectl(["create", "role", "lease-only", "-n", NS, "--verb=get,create,update", "--resource=leases.coordination.k8s.io"]));
    await ok(e2e.kube.kubectl(["create", "rolebinding", "lease-only", "-n", NS, "--role=lease-only", `--user=${NOBODY}`]));
    const again = await startOperator(e2e.site, e2e.kube.kubeconfig("token", NOBODY), { waitFor: /lacks the RBAC verb "list"/ });
    try {
      expect(again.log()).toMatch(/lacks the RBAC verb "list" on "htcjobs" in API group "htc.cern.ch"/);
    } finally {
      await again.stop();
    }
  });

  // docs/operator.md#beside-a-sidecar: separate stores and identities; neither adopts, follows or removes the other's jobs.
  test("an operator and a sidecar on one schedd leave each other's jobs alone", async () => {
    const pod = makeCreateRequest({
      metadata: { name: "neighbour", uid: "3333dddd-0000-4000-8000-000000000001" },
      spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 300"], resources: {} }] },
    });
    let sc = await startSidecar({ dir: e2e.site.dir });
    const op = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    try {
      expect((await sc.call("POST", "/create", pod)).status).toBe(200);
      await e2e.create("beside", { queue: 2, source: "sleep 300\n" });
      const j = await until("the HTCJob's procs to run", async () => {
        const v = await getHTCJob(e2e.kube, NS, "beside");
        return v?.status?.running === 2 ? v : undefined;
      });
      const podJob = async () => (await e2e.site.queue()).find((a) => a.InterLinkPodUID === pod.pod.metadata.uid);
      await until("the pod's job to run", async () => ((await podJob())?.JobStatus === 2 ? true : undefined));
      // The sidecar restarts and reconciles with the schedd: the HTCJob's procs are not its own.
      await sc.kill9();
      sc = await startSidecar({ dir: e2e.site.dir });
      await Bun.sleep(2500);
      const status = await sc.call("GET", "/status", [pod.pod]);
      expect(status.status).toBe(200);
      const htcProcs = (await e2e.site.queue()).filter((a) => a.HTCJobUID === j.metadata.uid);
      expect(htcProcs.map((a) => a.JobStatus)).toEqual([2, 2]);
      expect(htcProcs.every((a) => a.InterLinkPodUID === undefined)).toBe(true);
      // The HTCJob is deleted: only its procs go.
      await ok(e2e.kube.kubectl(["delete", "htcjob", "-n", NS, "beside", "--timeout=60s"]));
      expect((await podJob())?.JobStatus).toBe(2);
      // The pod is deleted through the sidecar, and a new HTCJob runs undisturbed beside it.
      await e2e.create("later", { source: "sleep 3; echo later\n" });
      await until("the later HTCJob to run", async () => ((await getHTCJob(e2e.kube, NS, "later"))?.status?.running === 1 ? true : undefined));
      expect((await sc.call("POST", "/delete", pod.pod)).status).toBe(200);
      await succeeded("later", 1);
      expect(op.log()).not.toMatch(/InterLink/);
    } finally {
      await op.stop();
      await sc.stop();
    }
  });
});
