/**
 * The HTCJob operator end to end: a real kube-apiserver, minicondor, and the operator as a
 * process. The behaviour docs/operator.md#behaviour states: the seed's examples
 * succeed with their ids in status.jobid, each HTCJob gets its own cluster, an exit code other
 * than 0 is a failure that names it, a forbidden htcopts key submits nothing, and a delete
 * removes the procs before the object goes.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { describeKube } from "../helpers/kube.ts";
import { clustersOf, deleteRunning, events, EXAMPLES, exitThree, htcjobYaml, ok, operatorE2E, until } from "./harness.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

setDefaultTimeout(180_000);
const NS = "default";

describeKube("HTCJob operator", () => {
  const e2e = operatorE2E({ operator: { args: ["--metrics-listen", "127.0.0.1:0"] } });
  const done = e2e.reach;

  // docs/operator.md#status: zero.yaml and queue.yaml reach succeeded 1 and 3, ids in jobid.
  test("the seed's zero.yaml and queue.yaml succeed, with their ids in status.jobid", async () => {
    await ok(e2e.kube.kubectl(["apply", "-n", NS, "-f", join(EXAMPLES, "zero.yaml"), "-f", join(EXAMPLES, "queue.yaml")]));
    const zero = await done("zero", (s) => s.succeeded === 1);
    const queue = await done("queue", (s) => s.succeeded === 3);
    expect(zero.status!.jobid).toEqual([`${zero.status!.clusterId}.0`]);
    expect(queue.status!.jobid).toEqual([0, 1, 2].map((p) => `${queue.status!.clusterId}.${p}`));
    expect(queue.status).toMatchObject({ active: 0, failed: 0, idle: 0, running: 0, held: 0, observedGeneration: 1 });
    expect(queue.status!.conditions!.find((c) => c.type === "Complete")).toMatchObject({ status: "True", reason: "AllSucceeded" });
    expect(queue.metadata.finalizers).toContain("htc.cern.ch/finalizer");
    // One cluster each, and the procs in the queue or history carry the HTCJob's UID.
    expect(await clustersOf(e2e.site, queue.metadata.uid)).toEqual(new Set([queue.status!.clusterId!]));
    expect(zero.status!.clusterId).not.toBe(queue.status!.clusterId);
    // kubectl get htcj shows the progress.
    const table = await ok(e2e.kube.kubectl(["get", "htcj", "-n", NS, "queue"]));
    expect(table).toMatch(/queue\s+0\s+3\s+0/);
    const evs = await events(e2e.kube, NS, "queue");
    expect(evs.map((e) => e.reason)).toEqual(expect.arrayContaining(["Submitted", "Completed"]));
    // docs/operator.md#logs: each proc's output is kept by UID, and htcjob logs prints it.
    expect(queue.status!.output).toContain(queue.metadata.uid);
    const logs = Bun.spawnSync([
      process.execPath,
      sidecarEntry(),
      "htcjob",
      "logs",
      `${NS}/queue`,
      "--proc",
      "2",
      "--config",
      e2e.site.configPath,
    ]);
    expect(logs.stderr.toString()).toBe("");
    expect(logs.stdout.toString().trim()).toBe("2");
  });

  // docs/operator.md#never-twice: each HTCJob has its own cluster, even when several are created at once.
  test("several HTCJobs created at once each get a cluster of their own", async () => {
    const names = ["many-a", "many-b", "many-c", "many-d"];
    await ok(e2e.kube.kubectl(["apply", "-n", NS, "-f", "-"], {
      stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items: names.map((n, i) => JSON.parse(htcjobYaml(n, { queue: i + 1, source: "echo $1\n" }))) }),
    }));
    const views = await Promise.all(names.map((n, i) => done(n, (s) => s.succeeded === i + 1)));
    const clusters = views.map((v) => v.status!.clusterId);
    expect(new Set(clusters).size).toBe(names.length);
    for (const v of views) expect(await clustersOf(e2e.site, v.metadata.uid)).toEqual(new Set([v.status!.clusterId!]));
  });

  // docs/operator.md#status: exit code 3 is a failure, and the condition names the code.
  test("a script that exits 3 counts as failed, with the exit code in the Failed condition", async () => {
    const { status, failed } = await exitThree(e2e, "three");
    expect(status).toMatchObject({ succeeded: 0, active: 0 });
    expect(failed).toMatchObject({ status: "True", reason: "ProcFailed" });
    expect(failed.message).toContain("exited with code 3");
    expect((await events(e2e.kube, NS, "three")).some((e) => e.type === "Warning" && e.message.includes("code 3"))).toBe(true);
  });

  // docs/operator.md#htcopts: a key outside HTCJob.SubmitOptions submits nothing; condition and Event name it.
  test("a forbidden htcopts key submits nothing, and the condition and an Event name the key", async () => {
    const before = (await e2e.site.jobs()).length;
    await ok(e2e.kube.kubectl(["apply", "-n", NS, "-f", "-"], {
      stdin: htcjobYaml("sneaky", { queue: 2, source: "echo hi\n", htcopts: '+JobFlavour = "espresso"\ntransfer_input_files = /etc/passwd\n' }),
    }));
    const j = await done("sneaky", (s) => s.failed === 2);
    const failed = j.status!.conditions!.find((c) => c.type === "Failed")!;
    expect(failed.status).toBe("True");
    expect(failed.message).toContain("transfer_input_files");
    expect(j.status!.jobid).toEqual([]);
    const evs = await until("the refusal's Event", async () => {
      const e = (await events(e2e.kube, NS, "sneaky")).filter((x) => x.message.includes("transfer_input_files"));
      return e.length > 0 ? e : undefined;
    });
    expect(evs[0]!.type).toBe("Warning");
    const ads = await e2e.site.jobs();
    expect(ads.filter((a) => a.HTCJobUID === j.metadata.uid)).toEqual([]);
    expect(ads.length).toBe(before);
  });

  // docs/operator.md#deleting: condor_rm of the recorded procs, then the finalizer goes, then the object.
  test("deleting a running HTCJob removes its procs from the queue, then the object goes", async () => {
    const d = await deleteRunning(e2e, "sleepy");
    expect(d.runningBefore).toBe(2);
    expect(d.after).toBeUndefined();
    // Removed (JobStatus 3), whether the schedd still shows them or they moved to the history.
    expect(d.ads.map((a) => a.JobStatus)).toEqual([3, 3]);
    expect((await events(e2e.kube, NS, "sleepy")).map((e) => e.reason)).toContain("Removed");
  });

  /** The operator's own count of its API writes (docs/operator.md#running-it: GET /metrics). */
  const apiWrites = async () => {
    const url = /metricsUrl=(\S+)/.exec(e2e.op.log())?.[1];
    if (!url) throw new Error(`the operator logged no metricsUrl:\n${e2e.op.log()}`);
    const text = await (await fetch(`${url}/metrics`)).text();
    return [...text.matchAll(/^htcjob_operator_api_writes_total(?:\{[^}]*\})? (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };

  // docs/operator.md#watch-not-poll: at steady state the operator writes nothing, even while procs
  // run and are followed every StatusCacheSeconds. The API server drops a patch that changes
  // nothing without a new resourceVersion, so only the operator's own counter sees a needless
  // write; the resourceVersions catch a write that changes something (a time stamp, an Event).
  test("at steady state the operator makes no API writes", async () => {
    await e2e.create("steady", { queue: 2, source: "sleep 300\n" });
    await done("steady", (s) => (s.running ?? 0) === 2);
    await Bun.sleep(3000);
    const before = e2e.op.log().length;
    const versions = async () => {
      const jobs = await ok(e2e.kube.kubectl(["get", "htcjobs", "-n", NS, "-o", "jsonpath={.items[*].metadata.resourceVersion}"]));
      const evs = await ok(e2e.kube.kubectl(["get", "events", "-n", NS, "-o", "jsonpath={.items[*].metadata.resourceVersion}"]));
      return `${jobs} / ${evs}`;
    };
    const first = await versions();
    const writes = await apiWrites();
    expect(writes).toBeGreaterThan(0);
    // Four follow passes or more (StatusCacheSeconds: 1), each seeing the same running procs.
    await Bun.sleep(4000);
    expect(await apiWrites()).toBe(writes);
    expect(await versions()).toBe(first);
    expect(e2e.op.log().slice(before)).not.toMatch(/reconcile failed/);
  });
});
