// The service's own logic, in-process: a test double of the Condor interface and a clock the
// test moves, for the branches the end-to-end suite (real HTTP, minicondor) cannot reach in
// reasonable time or at all: a job lost from queue and history, tombstone expiry, credential
// expiry, the spooled-output fetch limit and the hold grace period.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "../../src/config.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { createService } from "../../src/service/index.ts";
import { certificateNotAfter } from "../../src/mode-setup.ts";
import { openStore } from "../../src/store/store.ts";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { fakeCondor } from "../helpers/fake-condor.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
const T0 = Date.parse("2026-11-23T12:00:00Z");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let n = 0;
const uid = () => `7777aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}`;

function setup(
  o: { config?: string; spool?: boolean; credential?: { path: string; kind?: "proxy" | "idtoken-file"; text: () => string | undefined } } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), "service-test-"));
  dirs.push(dir);
  const dataRoot = join(dir, "data");
  mkdirSync(join(dataRoot, "pods"), { recursive: true });
  const { config } = parseConfig(o.config ?? "");
  let now = T0;
  const condor = fakeCondor({ readSubmitFile: (path) => readFileSync(path, "utf8"), now: () => now });
  const log = memoryLogger();
  const store = openStore(bunRuntime.openSqlite(join(dataRoot, "state.db")));
  const service = createService({
    store,
    condor,
    config,
    planConfig: planConfig(config, false),
    dataRoot,
    spool: o.spool ?? false,
    credentials: o.credential ? [{ kind: o.credential.kind ?? "proxy", path: o.credential.path }] : [],
    readCredential: o.credential ? () => ({ kind: "file", text: o.credential!.text() }) : undefined,
    certificateExpiry: certificateNotAfter,
    log,
    now: () => now,
    version: "test",
    // The refresher never runs by itself here: each status below refreshes first, as the
    // background refresher would have done by then.
    timer: () => () => {},
  });
  const ref = (p: Json) => ({ uid: p.metadata.uid, name: p.metadata.name, namespace: p.metadata.namespace ?? "default" });
  return {
    service,
    condor,
    store,
    log,
    dataRoot,
    advance(ms: number) {
      now += ms;
    },
    async create(name = "p", script = "sleep 60"): Promise<{ pod: Json; jid: string }> {
      const req = makeCreateRequest({
        metadata: { name, uid: uid() },
        spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
      });
      const answer = await service.create(parseCreateRequest(req));
      now += 1; // a status after the create sees a snapshot newer than the record
      return { pod: req.pod, jid: answer.PodJID };
    },
    /** A refresh of the queue's view (the refresher's work), then the status call, a lookup. */
    async status(pod: Json): Promise<Json | undefined> {
      await service.refresh();
      return (await service.status([ref(pod)])).statuses[0] as Json | undefined;
    },
    ref,
  };
}

describe("a job lost from both the queue and the history", () => {
  test("is left out while it may be between the two, then reported JobLost after one search by id", async () => {
    const s = setup();
    const { pod, jid } = await s.create("vanish");
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("ContainerCreating");
    s.condor.queued.delete(jid); // gone, and never written to the history
    expect(await s.status(pod)).toBeUndefined();
    s.advance(59_000);
    expect(await s.status(pod)).toBeUndefined();
    const before = s.condor.count("history");
    s.advance(2_000);
    const st = await s.status(pod);
    // Before calling it lost: one condor_history for this job alone, with no scan limit.
    expect(s.condor.calls.slice(-1)[0]).toEqual({ tool: "history", arg: [jid] });
    expect(s.condor.count("history")).toBe(before + 2);
    expect(st.containers[0].state.terminated).toMatchObject({ reason: "JobLost", exitCode: 1 });
    expect(st.containers[0].state.terminated.message).toBe(`Job ${jid} is in neither the queue nor the history`);
    // Final: never asked again.
    const calls = s.condor.calls.length;
    expect(await s.status(pod)).toEqual(st);
    expect(s.condor.calls.length).toBe(calls);
    expect(s.store.get(pod.metadata.uid)!.phase).toBe("finished");
  });

  test("a job found by that last search is finalized from its history ad, not lost", async () => {
    const s = setup();
    const { pod, jid } = await s.create("late");
    const ad = s.condor.queued.get(jid)!;
    s.condor.queued.delete(jid);
    expect(await s.status(pod)).toBeUndefined();
    s.advance(61_000);
    // The bounded scan missed it (a busy schedd); the search by id alone finds it.
    s.condor.left.set(jid, { ...ad, JobStatus: 4, ExitCode: 3, ExitBySignal: false });
    const real = s.condor.history.bind(s.condor);
    s.condor.history = async (q) => (q.scanLimit !== undefined ? [] : real(q));
    const st = await s.status(pod);
    expect(st.containers[0].state.terminated).toMatchObject({ exitCode: 3 });
  });
});

describe("tombstones", () => {
  test("a delete for an unknown pod keeps a late create out for 24 h, then is forgotten by the reaper", async () => {
    const s = setup();
    const u = uid();
    const ref = { uid: u, name: "ghost", namespace: "default" };
    expect(await s.service.remove(ref)).toBe(`Pod ${u} is not known here; nothing to remove`);
    const late = makeCreateRequest({ metadata: { name: "ghost", uid: u } });
    await expect(s.service.create(parseCreateRequest(late))).rejects.toThrow(/was already deleted; a late create submits nothing/);
    s.advance(24 * 3600 * 1000 - 1000);
    await s.service.reap();
    expect(s.store.get(u)?.phase).toBe("deleted");
    s.advance(2000);
    await s.service.reap();
    expect(s.store.get(u)).toBeUndefined();
    expect(s.condor.count("submit")).toBe(0);
  });
});

describe("the wrapper's log after a delete (docs/logs.md#the-wrappers-log)", () => {
  test("is all that stays of the pod folder while the tombstone lives, and goes with it", async () => {
    const s = setup();
    const { pod, jid } = await s.create("failed-start");
    const dir = join(s.dataRoot, "pods", pod.metadata.uid);
    // The output that came back with the job.
    mkdirSync(join(dir, "podstate"), { recursive: true });
    writeFileSync(join(dir, "podstate/wrapper.log"), "FATAL:   could not open image\n");
    writeFileSync(join(dir, "podstate/c.main"), "1 terminated StartError 255 - - 0 0 - - - - -\n");
    s.condor.end(jid, { JobStatus: 4, ExitCode: 255, ExitBySignal: false });
    expect((await s.status(pod)).containers[0].state.terminated).toBeDefined();
    expect(await s.service.remove(s.ref(pod))).toContain("deleted");
    expect((readdirSync(dir, { recursive: true }) as string[]).sort()).toEqual(["podstate", "podstate/wrapper.log"]);
    expect(readFileSync(join(dir, "podstate/wrapper.log"), "utf8")).toBe("FATAL:   could not open image\n");
    s.advance(24 * 3600 * 1000 - 1000);
    await s.service.reap();
    expect(existsSync(join(dir, "podstate/wrapper.log"))).toBe(true);
    s.advance(2000);
    await s.service.reap();
    expect(s.store.get(pod.metadata.uid)).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
  });

  // A local job's output returns only when it exits (when_to_transfer_output = ON_EXIT); a
  // spooled job's only through condor_transfer_data, which a delete never runs.
  test.each([["local", false], ["spooled", true]] as const)("a %s pod deleted while its job runs keeps nothing", async (_what, spool) => {
    const s = setup({ spool });
    const { pod } = await s.create("running");
    const dir = join(s.dataRoot, "pods", pod.metadata.uid);
    expect((await s.status(pod)).containers[0].state.waiting).toBeDefined();
    expect(await s.service.remove(s.ref(pod))).toContain("removed");
    expect(existsSync(dir)).toBe(false);
    expect(s.condor.count("transferData")).toBe(0);
    await s.service.reap();
    expect(existsSync(dir)).toBe(false);
  });
});

describe("credential expiry fails the ping (the README promises it)", () => {
  const jwt = (exp: number) => `${btoa(JSON.stringify({ alg: "none" }))}.${btoa(JSON.stringify({ exp })).replace(/=+$/, "")}.sig`;

  test("a SciToken (JWT) whose exp has passed", async () => {
    const exp = Math.floor(T0 / 1000) + 3600;
    const s = setup({ credential: { path: "/creds/token", text: () => `# a token\n${jwt(exp)}\n` } });
    expect((await s.service.ping()).healthy).toBe(true);
    s.advance(3600 * 1000 + 1000);
    const p = await s.service.ping();
    expect(p.healthy).toBe(false);
    expect((p.body as Json).status).toBe(`unhealthy: credential /creds/token expired at ${new Date(exp * 1000).toISOString()}`);
  });

  test("an X.509 certificate past its notAfter", async () => {
    const pem = readFileSync(join(import.meta.dir, "../fixtures/x509-until-2036.pem"), "utf8");
    const notAfter = certificateNotAfter(pem)!;
    expect(notAfter).toBeGreaterThan(T0);
    const s = setup({ credential: { path: "/creds/proxy", text: () => pem } });
    expect((await s.service.ping()).healthy).toBe(true);
    s.advance(notAfter - T0 + 1000);
    const p = await s.service.ping();
    expect(p.healthy).toBe(false);
    expect((p.body as Json).status).toBe(`unhealthy: credential /creds/proxy expired at ${new Date(notAfter).toISOString()}`);
  });

  test("a credential file that is missing", async () => {
    const s = setup({ credential: { path: "/creds/none", text: () => undefined } });
    expect(await s.service.ping()).toMatchObject({ healthy: false, body: { status: "unhealthy: credential file /creds/none is missing" } });
  });

  // docs/htcondor.md#idtokens-a-token-directory: the tools do not look at exp, the schedd does.
  test("an IDTOKEN (--token-file) whose exp has passed, and its expiry on /metrics meanwhile", async () => {
    const exp = Math.floor(T0 / 1000) + 600;
    const idtoken = `${btoa(JSON.stringify({ alg: "HS256", kid: "POOL" }))}.${
      btoa(JSON.stringify({ iss: "pool.example", sub: "alice@pool.example", exp }))
    }.c2ln`;
    const s = setup({
      credential: {
        path: "/creds/idtoken",
        kind: "idtoken-file",
        text: () =>
          `${idtoken}
`,
      },
    });
    expect((await s.service.ping()).healthy).toBe(true);
    expect(s.service.view().credentialExpiry).toBe(exp * 1000);
    s.advance(600 * 1000);
    const p = await s.service.ping();
    expect(p.healthy).toBe(false);
    expect((p.body as Json).status).toBe(`unhealthy: credential /creds/idtoken expired at ${new Date(exp * 1000).toISOString()}`);
  });

  test("an IDTOKEN file that holds no IDTOKEN (a SciToken has no kid the tools look for)", async () => {
    const s = setup({
      credential: {
        path: "/creds/idtoken",
        kind: "idtoken-file",
        text: () =>
          `${jwt(2_000_000_000)}
`,
      },
    });
    expect(await s.service.ping()).toMatchObject({
      healthy: false,
      body: { status: "unhealthy: credential file /creds/idtoken holds no IDTOKEN (a JWT with a kid, an iss and a sub)" },
    });
  });
});

describe("spooled output", () => {
  test("condor_transfer_data is retried every 10 s while the state files do not come back, 10 times, then the pod is finalized", async () => {
    const s = setup({ spool: true });
    const { pod, jid } = await s.create("spooled");
    const ad = s.condor.queued.get(jid)!;
    // Completed; a spooled job stays in the queue until its output is fetched
    // (docs/htcondor.md#condor_submit-options).
    Object.assign(ad, { JobStatus: 4, ExitCode: 0, ExitBySignal: false, InterLinkCtr0State: "1 terminated Completed 0 1 2 0 0 - - - - -" });
    for (let attempt = 1; attempt <= 10; attempt++) {
      const st = await s.status(pod);
      expect(s.condor.count("transferData")).toBe(attempt);
      // A status within the retry interval does not fetch again.
      s.advance(5_000);
      await s.status(pod);
      expect(s.condor.count("transferData")).toBe(attempt);
      if (attempt < 10) expect(st.containers[0].state.terminated).toBeUndefined();
      else expect(st.containers[0].state.terminated).toMatchObject({ reason: "Completed", exitCode: 0 });
      s.advance(5_001);
    }
    expect(s.store.get(pod.metadata.uid)).toMatchObject({ phase: "finished", outputFetched: true, fetchAttempts: 10 });
    expect(s.log.lines.some((l) => l.msg === "giving up fetching the spooled output")).toBe(true);
  });

  test("output that came back ends the retries at once", async () => {
    const s = setup({ spool: true });
    const { pod, jid } = await s.create("fetched", "exit 2");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 4, ExitCode: 2, ExitBySignal: false });
    s.condor.onTransfer = () => {
      mkdirSync(join(s.dataRoot, "pods", pod.metadata.uid, "podstate"), { recursive: true });
      writeFileSync(join(s.dataRoot, "pods", pod.metadata.uid, "podstate", "c.main"), "1 terminated Error 2 1 2 0 0 - - - - -\n");
    };
    const st = await s.status(pod);
    expect(st.containers[0].state.terminated).toMatchObject({ reason: "Error", exitCode: 2 });
    expect(s.condor.count("transferData")).toBe(1);
  });
});

describe("the hold grace period (HoldGraceSeconds)", () => {
  const hold = (ad: Json) => Object.assign(ad, { JobStatus: 5, HoldReasonCode: 34, HoldReasonSubCode: 102, HoldReason: "Job has gone over memory limit" });

  test("an unrecoverable hold reads JobHeld for the grace period, then is removed and reported OOMKilled", async () => {
    const s = setup({ config: "HoldGraceSeconds: 60\n" });
    const { pod, jid } = await s.create("oom");
    hold(s.condor.queued.get(jid)!);
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    s.advance(59_000);
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    expect(s.condor.count("remove")).toBe(0);
    s.advance(2_000);
    const st = await s.status(pod);
    expect(s.condor.calls.filter((c) => c.tool === "remove")).toEqual([{ tool: "remove", arg: [jid] }]);
    expect(st.containers[0].state.terminated).toMatchObject({ reason: "OOMKilled", exitCode: 137 });
    // docs/status.md#memory-kills: HTCondor's words are the message
    expect(st.containers[0].state.terminated.message).toBe("Job has gone over memory limit");
  });

  test("a container the kernel killed (137) before the starter held the job for memory reads OOMKilled with the hold reason (docs/status.md#memory-kills)", async () => {
    const s = setup({ config: "HoldGraceSeconds: 60\n" });
    const { pod, jid } = await s.create("memory-hog");
    const why =
      "Error from slot1_1@localhost: Job has gone over cgroup memory limit of 128 megabytes. Last measured usage: 128 megabytes.  Consider resubmitting with a higher request_memory.";
    Object.assign(s.condor.queued.get(jid)!, {
      InterLinkCtr0State: "1 terminated Error 137 1795332741 1795332745 0 0 - - - - -",
      JobStatus: 5,
      HoldReasonCode: 34,
      HoldReasonSubCode: 102,
      HoldReason: why,
    });
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    s.advance(61_000);
    const st = await s.status(pod);
    expect(st.containers[0].state.terminated).toMatchObject({ reason: "OOMKilled", exitCode: 137, message: why, finishedAt: "2026-11-22T07:32:25Z" });
  });

  test("a release restarts the grace period for the next hold", async () => {
    const s = setup({ config: "HoldGraceSeconds: 60\n" });
    const { pod, jid } = await s.create("flappy");
    const ad = s.condor.queued.get(jid)!;
    hold(ad);
    await s.status(pod);
    s.advance(50_000);
    Object.assign(ad, { JobStatus: 2, HoldReasonCode: undefined });
    await s.status(pod);
    hold(ad);
    await s.status(pod);
    s.advance(50_000);
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    expect(s.condor.count("remove")).toBe(0);
  });

  test("a hold that can recover is never removed", async () => {
    const s = setup({ config: "HoldGraceSeconds: 1\n" });
    const { pod, jid } = await s.create("held");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 5, HoldReasonCode: 1, HoldReason: "via condor_hold" });
    await s.status(pod);
    s.advance(3_600_000);
    expect((await s.status(pod)).containers[0].state.waiting).toMatchObject({ reason: "JobHeld" });
    expect(s.condor.count("remove")).toBe(0);
  });
});

describe("the refresher's view", () => {
  test("follows a job recorded since the last refresh and an ad that changed, and keeps what did not change", async () => {
    const s = setup();
    const a = await s.create("a");
    const queued = await s.status(a.pod);
    expect(queued).toMatchObject({ UID: a.pod.metadata.uid });
    // A store write since the last refresh: the refresher follows the new job.
    const b = await s.create("b");
    expect(await s.status(b.pod)).toMatchObject({ UID: b.pod.metadata.uid });
    expect(await s.status(a.pod)).toEqual(queued);
    // The same jobs, one ad changed.
    Object.assign(s.condor.queued.get(a.jid)!, { JobStatus: 5, HoldReasonCode: 1, HoldReason: "via condor_hold" });
    expect((await s.status(a.pod)).containers[0].state.waiting).toMatchObject({ reason: "JobHeld" });
    expect(await s.status(b.pod)).toMatchObject({ UID: b.pod.metadata.uid });
  });
});

describe("pods interLink forgot (docs/status.md#pods-interlink-forgot)", () => {
  test("a pod no call names while others are asked about is reported; while the schedd does not answer, none is", async () => {
    const s = setup({ config: "ForgottenPods:\n  AfterSeconds: 10\n  Rounds: 3\n  SilenceSeconds: 10\n  RemoveAfterSeconds: 0\n" });
    const [a, b, c] = [await s.create("a"), await s.create("b"), await s.create("c")];
    await s.service.refresh();
    const forgotten = async () => ((await s.service.ping()).body as Json).forgotten?.pods.map((p: Json) => p.pod) ?? [];
    expect(await forgotten()).toEqual([]); // c is first seen now: its clock starts here
    /** Rounds of the virtual kubelet's loop over a and b, 5 s apart. */
    const rounds = async (k: number) => {
      for (let i = 0; i < k; i++) {
        s.advance(5_000);
        for (const p of [a, b]) await s.status(p.pod);
      }
    };
    await rounds(2);
    expect(await forgotten()).toEqual([]);
    await rounds(2);
    expect(await forgotten()).toEqual(["default/c"]);
    expect(s.service.view().forgottenPods).toBe(1);
    await s.service.reap();
    const said = (msg: string) => s.log.lines.filter((l) => String(l.msg).includes(msg) && l.pod === "default/c").length;
    expect(said("forgotten")).toBe(1);
    // condor_q fails: whether c's job still runs is unknown, so it does not count, and is not "remembered" either
    s.condor.failing.add("query");
    await rounds(3);
    expect(await forgotten()).toEqual([]);
    expect(s.service.view().forgottenPods).toBe(0);
    await s.service.reap();
    expect(said("remembered")).toBe(0);
    s.condor.failing.delete("query");
    await rounds(1);
    expect(await forgotten()).toEqual(["default/c"]);
    // its job ends: nothing to report
    s.condor.end(c.jid, { JobStatus: 4, ExitCode: 0, ExitBySignal: false });
    await rounds(1);
    expect(await forgotten()).toEqual([]);
  });
});
