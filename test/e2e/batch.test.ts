// Many pods per condor process (docs/htcondor.md#submitting-many-pods-at-once). Bursts of creates go out as one condor_submit (one
// cluster, one proc per pod), a refused batch is split until only the bad pod fails, a batch
// killed at its timeout or with the sidecar is settled without a duplicate, and a burst of
// deletes is a few condor_rm. Jobs are the dummy job (--dummy-job) on ten emulated slots: the
// point is the sidecar's condor calls, not the jobs.
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, jobsByUid, type Sidecar, sidecars, toolsRunning } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `8888bbbb-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const SLOTS = { MINICONDOR_CPUS: "10" };

function pod(name: string, submitOptions?: string) {
  return makeCreateRequest({
    metadata: { name, uid: uid(), ...(submitOptions ? { annotations: { "htcondor-job.vk.io/submit-options": submitOptions } } : {}) },
    spec: { containers: [{ name: "main", image: "busybox", command: ["true"], resources: {} }] },
  });
}

const faults = (sc: Sidecar, f: unknown) => writeFileSync(join(sc.home, "faults.json"), JSON.stringify(f));

async function statuses(sc: Sidecar, pods: Json[]): Promise<Json[]> {
  return JSON.parse((await sc.call("GET", "/status", pods)).body) as Json[];
}

/** Waits until every pod reads terminated; returns their statuses. */
async function allTerminated(sc: Sidecar, pods: Json[], timeoutMs = 120_000): Promise<Json[]> {
  return eventually(
    async () => {
      const st = await statuses(sc, pods);
      return st.length === pods.length && st.every((s) => s.containers[0].state.terminated) ? st : undefined;
    },
    timeoutMs,
    `${pods.length} pods to end`,
  );
}

// Dummy jobs on SLOTS slots, but for the tests that start the sidecar as it is (startPlain).
const { start } = sidecars((o) => ({ ...o, args: ["--dummy-job", ...(o.args ?? [])], env: { ...SLOTS, ...o.env } }));
const { start: startPlain } = sidecars();

describe("batched submission (docs/htcondor.md#submitting-many-pods-at-once)", () => {
  // 30 pods show the rule; the benchmark's batching rows (npm run bench) take it to thousands.
  test("a burst of 30 creates: a few condor_submit, each pod its own cluster.proc, every pod runs", async () => {
    const sc = await start();
    const reqs = Array.from({ length: 30 }, (_, i) => pod(`burst-${i}`));
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    expect(answers.map((a) => a.status)).toEqual(reqs.map(() => 200));
    const jids = answers.map((a) => JSON.parse(a.body).PodJID as string);
    expect(new Set(jids).size).toBe(reqs.length);
    const submits = sc.calls("condor_submit").length;
    // A lone create goes at once; the ones that arrive meanwhile go together.
    expect(submits).toBeLessThanOrEqual(5);
    const clusters = new Set(jids.map((j) => j.split(".")[0]));
    expect(clusters.size).toBe(submits);
    // The job the schedd has for each pod is the one the create answered, and only that one.
    const jobs = jobsByUid(sc);
    reqs.forEach((r, i) => expect(jobs.get(r.pod.metadata.uid)).toEqual([jids[i]!]));
    const st = await allTerminated(sc, reqs.map((r) => r.pod));
    expect(st.map((s) => s.containers[0].state.terminated.exitCode)).toEqual(reqs.map(() => 0));
    expect(st.map((s) => s.JID).sort()).toEqual([...jids].sort());
  }, 240_000);

  test("a lone create is submitted at once, alone", async () => {
    const sc = await start();
    const r = pod("lone");
    expect((await sc.call("POST", "/create", r)).status).toBe(200);
    const submits = sc.calls("condor_submit");
    expect(submits).toHaveLength(1);
    expect(submits[0]!.argv.join(" ")).toContain("job.sub");
  }, 60_000);

  test("pods with different submit commands never share a cluster", async () => {
    const sc = await start();
    faults(sc, { tools: { condor_submit: "slow:800" } }); // so that the creates below wait together
    const first = pod("first");
    const plain = Array.from({ length: 4 }, (_, i) => pod(`plain-${i}`));
    const ranked = Array.from({ length: 4 }, (_, i) => pod(`ranked-${i}`, "rank = Memory"));
    const lone = sc.call("POST", "/create", first);
    await toolsRunning(sc.home, "condor_submit");
    const answers = await Promise.all([...plain, ...ranked].map((r) => sc.call("POST", "/create", r)));
    await lone;
    const cluster = (a: { body: string }) => JSON.parse(a.body).PodJID.split(".")[0];
    expect(new Set(answers.slice(0, 4).map(cluster)).size).toBe(1);
    expect(new Set(answers.slice(4).map(cluster)).size).toBe(1);
    expect(cluster(answers[0]!)).not.toBe(cluster(answers[4]!));
    faults(sc, {});
  }, 60_000);

  test("a batch with one bad pod: the others get their jobs, the bad one a 400 with condor_submit's words", async () => {
    const sc = await start();
    faults(sc, { tools: { condor_submit: "slow:800" } });
    // All with a rank, so that they share one description; one rank does not parse.
    const reqs = Array.from({ length: 40 }, (_, i) => pod(`mixed-${i}`, i === 17 ? "rank = (1 +" : "rank = Memory"));
    const lead = sc.call("POST", "/create", pod("lead", "rank = Memory"));
    await toolsRunning(sc.home, "condor_submit");
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    await lead;
    faults(sc, {});
    expect(answers.map((a) => a.status)).toEqual(reqs.map((_, i) => (i === 17 ? 400 : 200)));
    expect(answers[17]!.body).toMatch(/condor_submit refused the pod's submit options: .*Parse error/);
    // Halving: a few submits per level, never one per pod.
    expect(sc.calls("condor_submit").length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(40)) + 3);
    const jobs = jobsByUid(sc);
    expect(jobs.has(reqs[17]!.pod.metadata.uid)).toBe(false);
    reqs.forEach((r, i) => i !== 17 && expect(jobs.get(r.pod.metadata.uid)).toEqual([JSON.parse(answers[i]!.body).PodJID]));
    expect(existsSync(join(sc.dataRoot, "pods", reqs[17]!.pod.metadata.uid))).toBe(false);
    // Sent again (interLink retries), the bad pod goes alone and fails alone.
    const again = await sc.call("POST", "/create", reqs[17]);
    expect(again.status).toBe(400);
    expect(sc.calls("condor_submit").at(-1)!.argv.join(" ")).toContain("job.sub");
  }, 120_000);

  test("a failure to reach the schedd is not split: every pod of the batch gets the 503", async () => {
    const sc = await start();
    faults(sc, { tools: { condor_submit: "slow:800" } });
    const lead = sc.call("POST", "/create", pod("lead"));
    await toolsRunning(sc.home, "condor_submit");
    faults(sc, { scheddDown: true });
    const reqs = Array.from({ length: 10 }, (_, i) => pod(`down-${i}`));
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    await lead;
    expect(answers.map((a) => a.status)).toEqual(reqs.map(() => 503));
    expect(answers[0]!.body).toContain("Can't find address of local schedd");
    // The lead's submit and one for the batch.
    expect(sc.calls("condor_submit").length).toBe(2);
    faults(sc, {});
  }, 60_000);

  test("a batch killed at its timeout after the schedd queued it: every pod gets its one job", async () => {
    const sc = await start({ config: "SubmitTimeoutSeconds: 2\n" });
    // Every condor_submit queues, then sleeps past the timeout: the sidecar kills it and asks.
    faults(sc, { tools: { condor_submit: "slowafter:4000" } });
    const lead = pod("lead");
    const reqs = Array.from({ length: 20 }, (_, i) => pod(`late-${i}`));
    const first = sc.call("POST", "/create", lead);
    await toolsRunning(sc.home, "condor_submit");
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    expect((await first).status).toBe(200);
    expect(answers.map((a) => a.status)).toEqual(reqs.map(() => 200));
    faults(sc, {});
    const jobs = jobsByUid(sc);
    [lead, ...reqs].forEach((r) => expect(jobs.get(r.pod.metadata.uid)).toHaveLength(1));
    reqs.forEach((r, i) => expect(jobs.get(r.pod.metadata.uid)).toEqual([JSON.parse(answers[i]!.body).PodJID]));
    // Sent again, each create answers the same job and submits nothing.
    const before = sc.calls("condor_submit").length;
    const again = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    expect(again.map((a) => JSON.parse(a.body).PodJID)).toEqual(answers.map((a) => JSON.parse(a.body).PodJID));
    expect(sc.calls("condor_submit").length).toBe(before);
    expect(sc.log()).toContain("condor_submit timed out but the job was queued");
  }, 120_000);

  test("kill -9 during a batched condor_submit: after the restart every pod has exactly one job", async () => {
    const first = await start();
    faults(first, { tools: { condor_submit: "slow:2500" } });
    const lead = pod("lead");
    const reqs = Array.from({ length: 20 }, (_, i) => pod(`killed-${i}`));
    const pending = [first.call("POST", "/create", lead).catch(() => undefined)];
    await toolsRunning(first.home, "condor_submit");
    pending.push(...reqs.map((r) => first.call("POST", "/create", r).catch(() => undefined)));
    // The lead's submit is running; the batch starts when it ends. Kill the sidecar in the batch.
    await eventually(() => (first.calls("condor_submit").length >= 1 ? true : undefined), 20_000, "the lead's submit to end");
    // The batch's own submit file (a lone pod's is its job.sub).
    await toolsRunning(first.home, "condor_submit", 1, (argv) => argv.some((a) => a.endsWith(".sub") && !a.endsWith("job.sub")));
    await first.kill9();
    await Promise.all(pending);
    // The orphaned condor_submit goes on and queues the batch.
    await eventually(
      () => ([lead, ...reqs].every((r) => jobsByUid(first).get(r.pod.metadata.uid)?.length === 1) ? true : undefined),
      30_000,
      "the orphaned batch queued",
    );
    faults(first, {});
    const sc = await start({ dir: first.dir });
    // interLink sends the creates again: each answers the job the schedd has, and submits nothing.
    const again = await Promise.all([lead, ...reqs].map((r) => sc.call("POST", "/create", r)));
    expect(again.map((a) => a.status)).toEqual([lead, ...reqs].map(() => 200));
    const jobs = jobsByUid(sc);
    [lead, ...reqs].forEach((r, i) => expect(jobs.get(r.pod.metadata.uid)).toEqual([JSON.parse(again[i]!.body).PodJID]));
    expect(sc.calls("condor_submit").length).toBe(2); // the lead's and the batch's, before the restart
    const st = await allTerminated(sc, [lead, ...reqs].map((r) => r.pod));
    expect(st.every((s) => s.containers[0].state.terminated.exitCode === 0)).toBe(true);
  }, 180_000);
});

describe("batched removal (docs/htcondor.md#submitting-many-pods-at-once)", () => {
  test("a burst of deletes is a few condor_rm, each job removed", async () => {
    // The jobs run long (sleep), on enough slots: the deletes find them running or idle.
    const sc = await startPlain({ env: { MINICONDOR_CPUS: "4" } });
    const reqs = Array.from(
      { length: 30 },
      (_, i) =>
        makeCreateRequest({
          metadata: { name: `rm-${i}`, uid: uid() },
          spec: { containers: [{ name: "main", image: "busybox", command: ["sleep", "600"], resources: {} }] },
        }),
    );
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    expect(answers.map((a) => a.status)).toEqual(reqs.map(() => 200));
    const deleted = await Promise.all(reqs.map((r) => sc.call("POST", "/delete", r.pod)));
    expect(deleted.map((d) => d.status)).toEqual(reqs.map(() => 200));
    expect(deleted.every((d) => /deleted \(job \d+\.\d+ removed\)/.test(d.body))).toBe(true);
    expect(sc.calls("condor_rm").length).toBeLessThanOrEqual(5);
    // Marked for removal; each leaves the queue with JobStatus 3.
    const queued = () =>
      Bun.spawnSync([join(CONDOR_BIN, "condor_q"), "-allusers", "-af", "InterLinkPodUID"], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } })
        .stdout.toString();
    // Each removal stops a running wrapper and its containers: seconds alone, far more when the
    // machine is busy, so the bound only catches jobs that never leave.
    await eventually(() => (reqs.every((r) => !queued().includes(r.pod.metadata.uid)) ? true : undefined), 120_000, "every job to leave the queue");
  }, 240_000);
});
