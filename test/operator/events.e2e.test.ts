/**
 * The operator follows its procs from its job event log (docs/operator.md#following-the-procs),
 * end to end: a real kube-apiserver, minicondor (which writes the log as HTCondor does), and the
 * operator as a process. The site config's ReconcileMinutes is an hour, so within a test only the
 * log can move a status: the full follow runs at start and after a gap, and never on its period.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { describeKube } from "../helpers/kube.ts";
import { clustersOf, dropLease, getHTCJob, type HTCJobView, ok, operatorE2E, startOperator, until } from "./harness.ts";

setDefaultTimeout(180_000);
const NS = "default";

describeKube("HTCJob operator, following the job event log", () => {
  const e2e = operatorE2E();
  const create = e2e.create;
  const reach = (name: string, want: (s: NonNullable<HTCJobView["status"]>) => boolean, timeoutMs = 90_000) => e2e.reach(name, want, timeoutMs);
  const eventsDir = () => join(e2e.site.dataRoot, "htcjobs", "events");
  /** The log new clusters write: the newest in the operator's events folder. */
  const currentLog = () => {
    const names = readdirSync(eventsDir()).filter((n) => /^events-.*\.log$/.test(n)).sort();
    return join(eventsDir(), names.at(-1)!);
  };

  // docs/operator.md#following-the-procs: new clusters name the shared log; its events bring the status.
  test("procs reach succeeded through the job event log, with the reconciler an hour away", async () => {
    await create("logged", { queue: 3, source: "echo $1\n" });
    const j = await reach("logged", (s) => s.succeeded === 3);
    expect(j.status).toMatchObject({ active: 0, failed: 0 });
    const sub = readFileSync(join(e2e.site.dataRoot, "htcjobs", j.metadata.uid, "job.sub"), "utf8");
    const log = /^log = (.*)$/m.exec(sub)?.[1];
    expect(log?.startsWith(eventsDir() + "/events-")).toBe(true);
    const text = readFileSync(log!, "utf8");
    for (const p of [0, 1, 2]) {
      expect(text).toMatch(new RegExp(`^005 \\(${String(j.status!.clusterId).padStart(3, "0")}\\.${String(p).padStart(3, "0")}\\.000\\) `, "m"));
    }
  });

  // docs/operator.md#following-the-procs: the log says which procs to ask about, never what they are.
  test("a forged 'terminated' event for another HTCJob's running proc changes nothing", async () => {
    await create("victim", { source: "sleep 300\n" });
    const victim = await reach("victim", (s) => s.running === 1);
    const id = `${victim.status!.clusterId}.000.000`;
    // What a proc running as the log's owner could append (docs/threat-model.md).
    appendFileSync(currentLog(), `005 (${id}) 2024-05-01 10:00:00 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n`);
    // A later cluster's events come after the forged one in the same log: once it succeeded, the forged event was read.
    await create("witness", { source: "echo $1\n" });
    await reach("witness", (s) => s.succeeded === 1);
    const after = await getHTCJob(e2e.kube, NS, "victim");
    expect(after!.status).toMatchObject({ running: 1, succeeded: 0, failed: 0 });
    await ok(e2e.kube.kubectl(["delete", "-n", NS, "htcjob", "victim", "--timeout=60s"]));
  });

  // docs/operator.md#following-the-procs: a truncated log is a gap, and a gap runs the full follow.
  test("a log truncated under the operator: the full follow brings what the log lost", async () => {
    await create("cut", { queue: 2, source: "sleep 3; echo $1\n" });
    const j = await reach("cut", (s) => s.running === 2);
    const uid = j.metadata.uid;
    const log = currentLog();
    // The operator sleeps while the procs end; their events are then cut from the log.
    e2e.op.proc.kill("SIGSTOP");
    try {
      await until("cut's procs to leave the queue", async () => {
        const ended = (await e2e.site.history()).filter((a) => a.HTCJobUID === uid && a.ExitCode === 0);
        return ended.length === 2 ? true : undefined;
      }, 60_000);
      truncateSync(log, 0);
      expect(statSync(log).size).toBe(0);
    } finally {
      e2e.op.proc.kill("SIGCONT");
    }
    await reach("cut", (s) => s.succeeded === 2);
    expect(e2e.op.log()).toMatch(/cannot say what changed.*truncated/);
  });

  // docs/operator.md#following-the-procs: the offset is durable and saved only after the query acted on it.
  test("a restart in the middle of a burst of events loses nothing and submits nothing twice", async () => {
    await create("burst", { queue: 6, source: "sleep 1; echo $1\n" });
    const j = await reach("burst", (s) => (s.running ?? 0) + (s.succeeded ?? 0) >= 1);
    await e2e.op.kill9();
    await dropLease(e2e.kube);
    e2e.op = await startOperator(e2e.site, e2e.kube.kubeconfig("files"));
    const done = await reach("burst", (s) => s.succeeded === 6);
    expect(done.status!.clusterId).toBe(j.status!.clusterId);
    expect(await clustersOf(e2e.site, j.metadata.uid)).toEqual(new Set([j.status!.clusterId!]));
  });
});
