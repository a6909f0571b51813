/**
 * A proc's life beyond a clean exit, end to end (a real kube-apiserver, minicondor, the operator
 * as a process): a hold shows in status.held and an Event; a hold with no way back counts as
 * failed and leaves the queue; the files a script leaves in its working directory come back
 * within HTCJob.MaxOutputBytes, a symlink it planted never followed, and above the bound none
 * come back and the status says so; the same through `Spool: always` (condor_transfer_data).
 * docs/operator.md#following-the-procs, #status, #output, #logs.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeKube, type Kube, startKube } from "../helpers/kube.ts";
import { runTool } from "../minicondor/src/testkit.ts";
import { events, getHTCJob, type HTCJobView, htcjobYaml, installCrd, makeSite, ok, type Operator, type Site, startOperator, until } from "./harness.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

setDefaultTimeout(180_000);
const NS = "default";
const SPOOL_NS = "spool";
const MAX_OUTPUT = 4096;

/**
 * The site's keys this file needs: allowed_job_duration in htcopts (a hold HTCondor makes itself),
 * a small output bound, and no grace for a hold with no way back, so that its test need not wait a minute.
 */
const siteConfig = (operatorId: string, extra = "") =>
  [
    "HoldGraceSeconds: 0",
    "HTCJob:",
    `  OperatorId: ${operatorId}`,
    `  SubmitOptions: ["+JobFlavour", "+MaxRuntime", "allowed_job_duration"]`,
    `  MaxOutputBytes: ${MAX_OUTPUT}`,
    extra,
  ].join("\n");

/** `htcondor-sidecar htcjob logs`, as a user runs it on the operator's machine. */
function htcjobLogs(site: Site, target: string, args: string[] = []): { code: number; out: string; err: string } {
  const r = Bun.spawnSync([process.execPath, sidecarEntry(), "htcjob", "logs", target, "--config", site.configPath, ...args]);
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describeKube("HTCJob procs: holds, working-directory files, spool", () => {
  let kube: Kube;
  let site: Site;
  let spoolSite: Site;
  let op: Operator;
  let spoolOp: Operator;
  /** A file on the operator's machine that no job may bring back. */
  let secret: string;

  beforeAll(async () => {
    kube = await startKube();
    await installCrd(kube);
    await ok(kube.kubectl(["create", "namespace", SPOOL_NS]));
    site = makeSite(siteConfig("procs-local"));
    spoolSite = makeSite(siteConfig("procs-spool", "Spool: always"));
    // HTCondor evaluates allowed_job_duration in its periodic pass: once a second here, not a minute.
    for (const s of [site, spoolSite]) writeFileSync(join(s.home, "config.json"), JSON.stringify({ periodicIntervalS: 1 }));
    secret = join(site.dir, "operator-secret.txt");
    writeFileSync(secret, "the operator's secret\n", { mode: 0o600 });
    // Two operators, each leading its own Lease (its OperatorId), each watching one namespace.
    op = await startOperator(site, kube.kubeconfig("files"), { args: ["--namespace", NS] });
    spoolOp = await startOperator(spoolSite, kube.kubeconfig("files"), { args: ["--namespace", SPOOL_NS] });
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
    await spoolOp?.stop();
    site?.destroy();
    spoolSite?.destroy();
    await kube?.stop();
  }, 60_000);

  const status = (ns: string, name: string, want: (s: NonNullable<HTCJobView["status"]>) => boolean, what = "") =>
    until(`HTCJob ${ns}/${name}'s status${what}`, async () => {
      const j = await getHTCJob(kube, ns, name);
      return j?.status && want(j.status) ? j : undefined;
    }, 120_000);
  const apply = (ns: string, yaml: string) => ok(kube.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: yaml }));
  const reasons = async (ns: string, name: string) => (await events(kube, ns, name)).map((e) => `${e.type} ${e.reason}`);
  const adsOf = async (s: Site, uid: string) => [...(await s.queue()), ...(await s.history())].filter((a) => a.HTCJobUID === uid);

  describe("holds (docs/operator.md#following-the-procs)", () => {
    // docs/operator.md#status: active = idle + running + held; Events for a hold.
    test("a proc held with condor_hold shows in status.held and active, and a ProcHeld Event", async () => {
      await apply(NS, htcjobYaml("held", { source: "sleep 300\n" }));
      const running = await status(NS, "held", (s) => s.running === 1, " (running)");
      const id = running.status!.jobid![0]!;
      const hold = await runTool(site.home, "condor_hold", ["-reason", "looked at by an admin", id]);
      expect(hold.code).toBe(0);
      const held = await status(NS, "held", (s) => s.held === 1, " (held)");
      expect(held.status).toMatchObject({ held: 1, active: 1, running: 0, failed: 0 });
      expect(held.status!.conditions!.find((c) => c.type === "Failed")).toMatchObject({ status: "False" });
      const ev = await until("the ProcHeld Event", async () => (await events(kube, NS, "held")).find((e) => e.reason === "ProcHeld"));
      expect(ev.type).toBe("Warning");
      // A user hold can be released: the proc is not counted as failed, and is still in the queue.
      expect((await adsOf(site, held.metadata.uid)).map((a) => a.JobStatus)).toEqual([5]);
      await ok(kube.kubectl(["delete", "htcjob", "-n", NS, "held", "--wait=true", "--timeout=90s"]));
    });

    // docs/operator.md#status: failed includes a proc held with no way back. HTCondor holds a proc that outlives
    // allowed_job_duration with code 46, one of TerminalHoldCodes: past HoldGraceSeconds (0 here)
    // the proc fails and the operator removes it, so that it holds nothing of the user's.
    test("a proc held with no way back (code 46, allowed_job_duration) counts as failed and leaves the queue", async () => {
      await apply(NS, htcjobYaml("overtime", { source: "sleep 300\n", htcopts: "allowed_job_duration = 1\n" }));
      const j = await status(NS, "overtime", (s) => s.failed === 1, " (failed)");
      expect(j.status).toMatchObject({ failed: 1, held: 0, active: 0, succeeded: 0 });
      const failed = j.status!.conditions!.find((c) => c.type === "Failed")!;
      expect(failed).toMatchObject({ status: "True", reason: "ProcHeld" });
      expect(failed.message).toContain("held (code 46)");
      expect(await reasons(NS, "overtime")).toContain("Warning ProcHeld");
      // Removed by the operator: JobStatus 3, in the queue a moment longer or in the history.
      const ads = await until("the held proc's removal", async () => {
        const a = await adsOf(site, j.metadata.uid);
        return a.length === 1 && a[0]!.JobStatus === 3 ? a : undefined;
      });
      expect(ads).toHaveLength(1);
    });
  });

  /** A script that leaves files, a folder, a link to a file outside and a link to a folder. */
  const leaves = () =>
    [
      'echo "result $1" > result.txt',
      "mkdir -p out && echo deep > out/deep.txt",
      `ln -s ${secret} leak`,
      `ln -s ${site.dir} dirlink`,
    ].join("\n") + "\n";

  /** What `htcjob logs --files` lists: the entries' paths. */
  const listed = (out: string) => out.trim().split("\n").map((l) => l.trim().split(/\s+/).slice(1).join(" ")).sort();

  function expectFilesBack(s: Site, ns: string, name: string, uid: string) {
    const files = htcjobLogs(s, `${ns}/${name}`, ["--files"]);
    expect(files.err).toBe("");
    expect(listed(files.out)).toEqual(["out/", "out/deep.txt", "result.txt"]);
    expect(htcjobLogs(s, `${ns}/${name}`, ["--file", "result.txt"]).out).toBe("result 0\n");
    expect(htcjobLogs(s, `${ns}/${name}`, ["--file", "out/deep.txt"]).out).toBe("deep\n");
    // Neither link came back, not even as a copy of what it pointed at.
    const work = join(s.dataRoot, "htcjobs", uid, "procs", "0", "work");
    for (const link of ["leak", "dirlink"]) expect(() => lstatSync(join(work, link))).toThrow();
    const leaked = htcjobLogs(s, `${ns}/${name}`, ["--file", "leak"]);
    expect(leaked.code).toBe(1);
    expect(leaked.out + leaked.err).not.toContain("secret");
  }

  describe("working-directory files (docs/operator.md#output)", () => {
    test("come back under the HTCJob's UID; a symlink the script planted is never followed", async () => {
      await apply(NS, htcjobYaml("files", { source: leaves() }));
      const j = await status(NS, "files", (s) => s.succeeded === 1);
      expect(j.status!.output).toContain(join("htcjobs", j.metadata.uid, "procs"));
      expect(j.status!.output).toContain("work/");
      expect(j.status!.conditions!.find((c) => c.type === "OutputKept")).toBeUndefined();
      expectFilesBack(site, NS, "files", j.metadata.uid);
      // The wrapper's own account: 3 entries kept, the two links dropped.
      const marker = join(site.dataRoot, "htcjobs", j.metadata.uid, "procs", "0", "podstate", "work");
      expect(readFileSync(marker, "utf8")).toBe("kept 14 3 2\n");
    });

    test(`above HTCJob.MaxOutputBytes (${MAX_OUTPUT}) none come back; an OutputKept condition and an Event say so`, async () => {
      await apply(NS, htcjobYaml("too-big", { source: `head -c ${MAX_OUTPUT + 1} /dev/zero > big.bin\necho small > small.txt\n` }));
      const j = await status(NS, "too-big", (s) => s.succeeded === 1 && (s.conditions ?? []).some((c) => c.type === "OutputKept"));
      const kept = j.status!.conditions!.find((c) => c.type === "OutputKept")!;
      expect(kept).toMatchObject({ status: "False", reason: "OutputNotKept" });
      expect(kept.message).toContain(`proc ${j.status!.jobid![0]}`);
      expect(kept.message).toContain(`HTCJob.MaxOutputBytes ${MAX_OUTPUT}`);
      expect(await until("the OutputNotKept Event", async () => (await reasons(NS, "too-big")).find((r) => r === "Warning OutputNotKept"))).toBeDefined();
      const files = htcjobLogs(site, `${NS}/too-big`, ["--files"]);
      expect(files.code).toBe(1);
      expect(files.err).toContain("were not kept");
      expect(existsSync(join(site.dataRoot, "htcjobs", j.metadata.uid, "procs", "0", "work", "small.txt"))).toBe(false);
      // The proc itself succeeded: its files are what was dropped, not its outcome.
      expect(j.status!.conditions!.find((c) => c.type === "Complete")).toMatchObject({ status: "True" });
    });
  });

  describe("Spool: always (docs/operator.md#following-the-procs, condor_transfer_data)", () => {
    test("a spooled HTCJob succeeds, and its log and working-directory files come back by condor_transfer_data", async () => {
      await apply(SPOOL_NS, htcjobYaml("spooled", { queue: 2, source: leaves() }));
      const j = await status(SPOOL_NS, "spooled", (s) => s.succeeded === 2);
      expect(j.status!.jobid).toEqual([0, 1].map((p) => `${j.status!.clusterId}.${p}`));
      const calls = readFileSync(join(spoolSite.home, "calls.log"), "utf8");
      expect(calls).toMatch(/condor_submit \[[^\n]*"-spool"/);
      expect(calls).toContain("condor_transfer_data");
      expectFilesBack(spoolSite, SPOOL_NS, "spooled", j.metadata.uid);
      expect(htcjobLogs(spoolSite, `${SPOOL_NS}/spooled`, ["--proc", "1", "--file", "result.txt"]).out).toBe("result 1\n");
      // Nothing of the other operator's: the local site never saw this HTCJob.
      expect(await adsOf(site, j.metadata.uid)).toEqual([]);
    });
  });
});
