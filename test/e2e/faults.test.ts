// Faults through minicondor's fault injection, and the remote-schedd (spool) path.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, scaled, type Sidecar, sidecars } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `3333dddd-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const pod = (name: string, script: string) =>
  makeCreateRequest({
    metadata: { name, uid: uid() },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
  });
const faults = (sc: Sidecar, f: unknown) => writeFileSync(join(sc.home, "faults.json"), JSON.stringify(f));
const historyIds = (sc: Sidecar) =>
  Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_history"), "-af:j", "JobStatus"], {
    env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
  })
    .stdout.toString().split("\n").map((l) => l.split(" ")[0]!);
const { start, started } = sidecars();

describe("remote schedd: -spool and condor_transfer_data (docs/htcondor.md#condor_submit-options, docs/htcondor.md#condor_transfer_data)", () => {
  test("a spooled job reads ContainerCreating while spooling, runs, and its output and logs come back once", async () => {
    const sc = await start({ args: ["--spool", "always"], env: { MINICONDOR_SPOOL_RELEASE_MS: "1500" } });
    const r = pod("spooled", "echo from-spool; exit 4");
    const res = await sc.call("POST", "/create", r);
    expect(res.status).toBe(200);
    const first = await sc.statusOf(r.pod);
    expect(first.containers[0].state.waiting?.reason).toBe("ContainerCreating");
    const s = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        return st?.containers[0].state.terminated ? st : undefined;
      },
      60_000,
      "spooled pod to finish",
    );
    expect(s.containers[0].state.terminated.exitCode).toBe(4);
    const logs = await sc.logs(r.pod, "main", {});
    expect(logs.body).toBe("from-spool\n");
    const transfers = sc.calls("condor_transfer_data");
    expect(transfers.length).toBe(1);
  }, 90_000);
});

describe("held jobs (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status, docs/htcondor.md#job-status-and-job-attributes)", () => {
  test("a held job reads waiting JobHeld with the reason; an unrecoverable hold is removed and reported OOMKilled", async () => {
    const sc = await start({ config: "HoldGraceSeconds: 1\n" });
    faults(sc, { holdOnStart: { code: 34, subCode: 102, reason: "Job has gone over memory limit of 128 megabytes" } });
    const r = pod("oom", "sleep 30");
    expect((await sc.call("POST", "/create", r)).status).toBe(200);
    const held = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        return st?.containers[0].state.waiting?.reason === "JobHeld" ? st : st?.containers[0].state.terminated ? st : undefined;
      },
      30_000,
      "held",
    );
    if (held.containers[0].state.waiting) expect(held.containers[0].state.waiting.message).toMatch(/over memory limit.*34/);
    const s = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        return st?.containers[0].state.terminated ? st : undefined;
      },
      30_000,
      "removed after the grace period",
    );
    // no container line was written before the hold: it reads the same, with HTCondor's words
    // (docs/status.md#memory-kills)
    expect(s.containers[0].state.terminated).toMatchObject({ reason: "OOMKilled", exitCode: 137, message: "Job has gone over memory limit of 128 megabytes" });
    faults(sc, {});
  }, 90_000);

  test("a hold that can recover stays JobHeld", async () => {
    const sc = await start({ config: "HoldGraceSeconds: 1\n" });
    faults(sc, { holdOnStart: { code: 1, reason: "via condor_hold (by user admin)" } });
    const r = pod("paused", "sleep 30");
    await sc.call("POST", "/create", r);
    const st = await eventually(
      async () => {
        const x = await sc.statusOf(r.pod);
        return x?.containers[0].state.waiting?.reason === "JobHeld" ? x : undefined;
      },
      30_000,
      "held",
    );
    await Bun.sleep(2500);
    expect((await sc.statusOf(r.pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    expect(st.containers[0].state.waiting.message).toContain("via condor_hold");
    faults(sc, {});
  }, 60_000);
});

describe("tools that fail, hang or warn", () => {
  test("condor_submit hanging past its timeout: the create fails with a clear message and leaves no record", async () => {
    const sc = await start({ config: "SubmitTimeoutSeconds: 2\n" });
    faults(sc, { tools: { condor_submit: "hang" } });
    const r = pod("hung", "true");
    const t0 = Date.now();
    const res = await sc.call("POST", "/create", r);
    expect(res.status).toBe(504);
    expect(res.body).toMatch(/condor_submit did not answer within 2 s/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(existsSync(join(sc.dataRoot, "pods", r.pod.metadata.uid))).toBe(false);
    expect(await sc.statusOf(r.pod)).toBeUndefined();
    faults(sc, {});
  }, 30_000);

  // A condor_submit killed at its timeout after the schedd committed the job: the sidecar asks the
  // schedd by pod UID (settleTimedOut) and answers with the job that exists, never a second one.
  test("condor_submit killed at its timeout after the commit: the create answers the queued job, once", async () => {
    const sc = await start({ config: "SubmitTimeoutSeconds: 2\n" });
    faults(sc, { tools: { condor_submit: "slowafter:4000" } });
    const r = pod("committed", "sleep 30");
    const res = await sc.call("POST", "/create", r);
    expect(res.status).toBe(200);
    const jid = JSON.parse(res.body).PodJID;
    expect(jid).toMatch(/^\d+\.\d+$/);
    const again = await sc.call("POST", "/create", r);
    expect([again.status, JSON.parse(again.body).PodJID]).toEqual([200, jid]);
    // One condor_submit, the killed one (SIGTERM: exit 143 in calls.log); the repeat submitted nothing.
    const submits = sc.calls("condor_submit");
    expect(submits).toHaveLength(1);
    expect(submits[0]!.code).toBe(143);
    expect(sc.log()).toContain("condor_submit timed out but the job was queued");
    const tool = (name: string, args: string[]) =>
      Bun.spawnSync([join(import.meta.dir, "../minicondor/bin", name), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } })
        .stdout.toString().split("\n").filter(Boolean);
    const constraint = `InterLinkPodUID == "${r.pod.metadata.uid}"`;
    const jobs = [
      ...tool("condor_q", ["-allusers", "-constraint", constraint, "-af", "ClusterId", "ProcId"]),
      ...tool("condor_history", ["-constraint", constraint, "-af", "ClusterId", "ProcId"]),
    ].map((l) => l.replace(" ", "."));
    expect(jobs).toEqual([jid]);
    faults(sc, {});
    await sc.call("POST", "/delete", r.pod);
  }, 60_000);

  test("condor_submit printing a warning on stderr still succeeds", async () => {
    const sc = await start();
    faults(sc, { tools: { condor_submit: "warn" } });
    const res = await sc.call("POST", "/create", pod("warned", "true"));
    expect(res.status).toBe(200);
    faults(sc, {});
  }, 30_000);

  test("a hung condor_q does not block other requests for long", async () => {
    const sc = await start({ config: "QueryTimeoutSeconds: 2\n" });
    const r = pod("slowq", "sleep 20");
    await sc.call("POST", "/create", r);
    faults(sc, { tools: { condor_q: "hang" } });
    const t0 = Date.now();
    const [st, ping] = await Promise.all([sc.call("GET", "/status", [r.pod]), sc.call("GET", "/status", [])]);
    expect(st.status).toBe(200);
    expect(ping.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(8_000);
    faults(sc, {});
  }, 30_000);

  test("a condor_q that hangs (within its 20 s timeout) holds the ping for 5 s at most (docs/interlink.md#the-ping: answer well within 120 s)", async () => {
    const sc = await start();
    expect((await sc.call("GET", "/status", [])).status).toBe(200); // condor_status has answered once
    faults(sc, { tools: { condor_q: "hang" } });
    await Bun.sleep(300); // past StatusCacheSeconds
    const t0 = Date.now();
    const ping = await sc.call("GET", "/status", []);
    expect(ping.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(9_000);
    faults(sc, {});
  }, 60_000);

  test(
    "schedd down: status still answers 200 and leaves the pod out, so interLink keeps its last state (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status)",
    async () => {
      const sc = await start();
      const r = pod("steady", "sleep 20");
      await sc.call("POST", "/create", r);
      await eventually(async () => ((await sc.statusOf(r.pod))?.containers[0].state.running ? true : undefined), 30_000, "running");
      faults(sc, { scheddDown: true });
      // The next background refresh (every StatusCacheSeconds) finds the schedd gone.
      const st = await eventually(
        async () => {
          const res = await sc.call("GET", "/status", [r.pod]);
          return res.headers["x-sidecar-stale"] ? res : undefined;
        },
        10_000,
        "a stale answer",
      );
      expect(st.status).toBe(200);
      expect(JSON.parse(st.body)).toEqual([]);
      expect(String(st.headers["x-sidecar-stale"])).toMatch(/condor_q failing since .*Could not find the local condor_schedd/);
      // Said in the log too, by whichever condor_q of the view found the schedd gone first (the
      // probe, the full refresh, or a targeted one for an event the job's wrapper wrote; first
      // under load). The line can reach this process after the answer does.
      await eventually(() => (/interLink keeps their last state|status leaves the followed pods out/.test(sc.log()) ? true : undefined), 10_000, "the warning");
      faults(sc, {});
      const back = await eventually(async () => await sc.statusOf(r.pod), 10_000, "the pod back in the answer");
      expect(back.containers[0].state.running).toBeDefined();
      await sc.call("POST", "/delete", r.pod);
    },
    60_000,
  );

  test("condor_chirp failing inside the job: status falls back to the returned state files", async () => {
    const sc = await start();
    faults(sc, { tools: { condor_chirp: "fail" } });
    const r = pod("nochirp", "exit 6");
    await sc.call("POST", "/create", r);
    const s = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        return st?.containers[0].state.terminated ? st : undefined;
      },
      60_000,
      "finished",
    );
    expect(s.containers[0].state.terminated.exitCode).toBe(6);
    expect(s.containers[0].state.terminated.startedAt).toMatch(/Z$/);
    faults(sc, {});
  }, 90_000);

  test("a delete after status saw the job end: condor_rm of the recorded id all the same, 200, files gone but the wrapper's log", async () => {
    const sc = await start();
    const r = pod("gone", "true");
    const created = JSON.parse((await sc.call("POST", "/create", r)).body) as { PodJID: string };
    await eventually(async () => ((await sc.statusOf(r.pod))?.containers[0].state.terminated ? true : undefined), 60_000, "finished");
    const d = await sc.call("POST", "/delete", r.pod);
    expect(d.status).toBe(200);
    expect(d.body).toMatch(/had already ended/);
    // Only the wrapper's log stays, while the tombstone lives (docs/logs.md#the-wrappers-log).
    expect((readdirSync(join(sc.dataRoot, "pods", r.pod.metadata.uid), { recursive: true }) as string[]).sort()).toEqual(["podstate", "podstate/wrapper.log"]);
    // A final status may come from a job that only hid itself (docs/threat-model.md#4-a-job-forges-another-pods-status): the recorded
    // id is removed whatever the pod's status says.
    const rms = sc.calls("condor_rm");
    expect(rms).toHaveLength(1);
    expect(rms[0]!.argv.join(" ")).toContain(created.PodJID);
  }, 90_000);

  test("HTCondor refusing a root-owned job: a message that says what to change, and only then", async () => {
    // MINICONDOR_OWNER=root: the emulator refuses as the schedd does for root, whoever runs the test.
    const sc = await start({ env: { MINICONDOR_ALLOW_ROOT: "0", MINICONDOR_OWNER: "root" } });
    const r = pod("asroot", "true");
    const res = await sc.call("POST", "/create", r);
    expect(res.status).toBe(503);
    expect(res.body).toMatch(/HTCondor refuses jobs owned by root: run it as an ordinary submit user/);
    expect(existsSync(join(sc.dataRoot, "pods", r.pod.metadata.uid))).toBe(false);
    // Another failure says what it is, with no advice about root.
    faults(sc, { scheddDown: true });
    const down = await sc.call("POST", "/create", pod("down", "true"));
    expect(down.status).toBe(503);
    expect(down.body).toMatch(/Can't find address of local schedd/);
    expect(down.body).not.toMatch(/root/);
    faults(sc, {});
  }, 30_000);

  test("condor_rm of a job that left the queue unobserved: delete answers 200, says so, and cleans up", async () => {
    const sc = await start();
    const r = pod("unobserved", "true");
    const jid = JSON.parse((await sc.call("POST", "/create", r)).body).PodJID;
    // No status call: the sidecar has not seen the job end when the delete comes.
    await eventually(() => (historyIds(sc).includes(jid) ? true : undefined), 60_000, "the job in the history");
    const d = await sc.call("POST", "/delete", r.pod);
    expect(d.status).toBe(200);
    expect(d.body).toContain(`job ${jid} had already ended`);
    // Only the wrapper's log stays, while the tombstone lives (docs/logs.md#the-wrappers-log).
    expect((readdirSync(join(sc.dataRoot, "pods", r.pod.metadata.uid), { recursive: true }) as string[]).sort()).toEqual(["podstate", "podstate/wrapper.log"]);
    expect(sc.calls("condor_rm").length).toBe(1);
  }, 90_000);

  test("a create while the schedd is down: a clear 503, no record, no folder; the next create works", async () => {
    const sc = await start();
    faults(sc, { scheddDown: true });
    const r = pod("whiledown", "true");
    const res = await sc.call("POST", "/create", r);
    expect(res.status).toBe(503);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/^Cannot submit job for pod "default\/whiledown": condor_submit exited with 1: ERROR: Can't find address of local schedd\n$/);
    expect(existsSync(join(sc.dataRoot, "pods", r.pod.metadata.uid))).toBe(false);
    faults(sc, {});
    expect(await sc.statusOf(r.pod)).toBeUndefined();
    expect((await sc.call("POST", "/create", r)).status).toBe(200);
    await sc.call("POST", "/delete", r.pod);
  }, 60_000);
});

describe("the schedd down while the collector answers (docs/interlink.md#the-ping, docs/interlink.md#what-the-virtual-kubelet-does-with-a-status)", () => {
  test("the ping degrades after consecutive condor_q failures; status leaves pods out and says it is stale", async () => {
    const sc = await start({ config: "PingFailureThreshold: 2\n" });
    const r = pod("stale", "sleep 60");
    await sc.call("POST", "/create", r);
    await eventually(async () => ((await sc.statusOf(r.pod))?.containers[0].state.running ? true : undefined), 30_000, "running");
    faults(sc, { tools: { condor_q: "fail", condor_history: "fail", condor_submit: "fail", condor_rm: "fail" } });
    const ping = async () => {
      const p = await sc.call("GET", "/status", []);
      return [p.status, JSON.parse(p.body).status] as [number, string];
    };
    // The refresher fails every second, but the streak counts one failure per 10 s at most
    // (docs/architecture.md#9-the-ping-fails-only-for-real): refreshes that fail within seconds of each other do not make the node NotReady.
    await eventually(async () => ((await ping())[1] === "degraded: condor_q failing" ? true : undefined), scaled(10_000), "the ping degraded");
    const t0 = Date.now();
    for (let i = 0; i < 3; i++) {
      await Bun.sleep(1500);
      if (Date.now() - t0 < 8_000) expect(await ping()).toEqual([200, "degraded: condor_q failing"]);
    }
    const down = await eventually(
      async () => {
        const p = await ping();
        return p[0] === 503 ? p : undefined;
      },
      scaled(20_000),
      "the second counted failure",
    );
    expect(Date.now() - t0).toBeGreaterThan(5_000);
    expect(down[1]).toMatch(/^unhealthy: HTCondor unreachable \(schedd: .*Failed to fetch ads/);
    const st = await sc.call("GET", "/status", [r.pod]);
    expect(st.status).toBe(200);
    expect(JSON.parse(st.body)).toEqual([]);
    expect(String(st.headers["x-sidecar-stale"])).toMatch(/^condor_q failing since \d{4}-\d\d-\d\dT[\d:.]+Z \(\d+ consecutive\): /);
    const info = JSON.parse((await sc.call("GET", "/system-info")).body);
    expect(info.status).toBe("unhealthy");
    expect(info.condor_q_failing_since).toMatch(/Z$/);
    faults(sc, {});
    const back = await eventually(
      async () => {
        const p = await sc.call("GET", "/status", []);
        return p.status === 200 && JSON.parse(p.body).status === "ok" ? p : undefined;
      },
      10_000,
      "the ping to recover",
    );
    expect(back.status).toBe(200);
    const again = await eventually(
      async () => {
        const res = await sc.call("GET", "/status", [r.pod]);
        return res.headers["x-sidecar-stale"] === undefined && JSON.parse(res.body)[0] ? res : undefined;
      },
      10_000,
      "a fresh answer",
    );
    expect(JSON.parse(again.body)[0].containers[0].state.running).toBeDefined();
    await sc.call("POST", "/delete", r.pod);
  }, 60_000);

  test("before condor_status has answered once, the ping reports no resources (zeros would empty the node)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
    mkdirSync(join(dir, "minicondor"), { recursive: true });
    writeFileSync(join(dir, "minicondor", "faults.json"), JSON.stringify({ tools: { condor_status: "fail" } }));
    const sc = await start({ dir });
    const p = await sc.call("GET", "/status", []);
    expect(p.status).toBe(200);
    const body = JSON.parse(p.body);
    expect(body.status).toBe("degraded: condor_status failing");
    expect(body.resources).toBeUndefined();
    faults(sc, {});
    // The failed answer serves the pings of the next few seconds (docs/status.md#the-ping).
    const cpu = await eventually(async () => JSON.parse((await sc.call("GET", "/status", [])).body).resources?.cpu, 15_000, "condor_status to answer");
    expect(cpu).toMatch(/^\d+$/);
  }, 30_000);
});

describe("ping and system-info (docs/interlink.md#the-ping)", () => {
  test("the node advertises the smaller of the pool's totals and the configured caps, and the configured taints", async () => {
    const sc = await start({
      config: 'Node:\n  Cpu: "4"\n  Memory: 2Gi\n  Pods: "50"\n  Taints: [{key: example.org/htc, value: "true", effect: NoSchedule}]\n',
    });
    const r = await sc.call("GET", "/status", []);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({
      status: "ok",
      resources: { cpu: "4", memory: "2048Mi", pods: "50", accelerators: [{ resourceType: "nvidia.com/gpu", available: "0" }] },
      taints: [{ key: "example.org/htc", value: "true", effect: "NoSchedule" }],
    });
    const info = JSON.parse((await sc.call("GET", "/system-info")).body);
    expect(info).toMatchObject({ status: "healthy", htcondor_connected: true, version: expect.any(String), tracked_pods: 0 });
    expect(typeof info.uptime_seconds).toBe("number");
    expect(info.condor_status_output).toMatch(/slot/);
  }, 30_000);

  test("a missing credential file makes the ping fail (interLink then marks the node NotReady)", async () => {
    const sc = await start({ args: ["--auth-method", "SCITOKENS", "--proxy", "/nonexistent/token"] });
    const r = await sc.call("GET", "/status", []);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).status).toMatch(/credential file \/nonexistent\/token is missing/);
  }, 30_000);
});

describe("the store's disk (DataRootFolder on a small tmpfs: needs root, as CI and these machines run)", () => {
  test("disk full, then read-only: creates fail with a clear message, the sidecar keeps serving, and recovers", async () => {
    const { mkdtempSync, writeFileSync: write, rmSync, mkdirSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const mnt = mkdtempSync(join(tmpdir(), "sidecar-disk-"));
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt]);
    if (mounted.exitCode !== 0) throw new Error(`cannot mount a tmpfs here (the test needs root): ${mounted.stderr}`);
    try {
      mkdirSync(join(mnt, "data"));
      const sc = await start({ config: `DataRootFolder: ${join(mnt, "data")}\n` });
      expect((await sc.call("POST", "/create", pod("fits", "true"))).status).toBe(200);
      // Fill the disk.
      const filler = join(mnt, "filler");
      Bun.spawnSync(["dd", "if=/dev/zero", `of=${filler}`, "bs=64k", "count=100"]);
      const full = await sc.call("POST", "/create", pod("nospace", "true"));
      expect(full.status).toBe(503);
      expect(full.body).toMatch(/No space left on device|disk is full|ENOSPC/i);
      expect(full.body.trimEnd()).not.toContain("\n");
      expect((await sc.call("GET", "/status", [])).status).toBe(200);
      rmSync(filler);
      // Read-only (a read-only bind over the folder: the open store keeps writing through its
      // descriptor, as after an admin's remount, but nothing new can be created there).
      const data = join(mnt, "data");
      expect(Bun.spawnSync(["mount", "--bind", data, data]).exitCode).toBe(0);
      expect(Bun.spawnSync(["mount", "-o", "remount,ro,bind", data]).exitCode).toBe(0);
      const ro = await sc.call("POST", "/create", pod("readonly", "true"));
      expect(ro.status).toBe(503);
      expect(ro.body).toMatch(/read-?only/i);
      expect((await sc.call("GET", "/status", [])).status).toBe(200);
      expect(Bun.spawnSync(["umount", data]).exitCode).toBe(0);
      expect((await sc.call("POST", "/create", pod("recovered", "true"))).status).toBe(200);
      write(join(mnt, "ok"), "");
      await sc.destroy();
      started.splice(started.indexOf(sc), 1);
    } finally {
      Bun.spawnSync(["umount", "-l", mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  }, 60_000);
});
