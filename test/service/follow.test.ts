// The job event log follower in-process (docs/status.md#following-the-event-log,
// docs/status.md#what-drives-status): a Condor test double, a clock the test moves, and the
// shared log written by the test as the schedd, the shadow or a hostile job would write it.
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "../../src/config.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { formatStateLine } from "../../src/core/state-line.ts";
import { stateAttrName } from "../../src/core/types.ts";
import { memoryLogger } from "../../src/logger.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { createContext } from "../../src/service/context.ts";
import { createCreateService } from "../../src/service/create.ts";
import { createFollower } from "../../src/service/follow.ts";
import { createStatusService } from "../../src/service/status.ts";
import { createSubmitter } from "../../src/service/submitter.ts";
import { openStore } from "../../src/store/store.ts";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { fakeCondor } from "../helpers/fake-condor.ts";

// deno-lint-ignore no-explicit-any -- statuses are read loosely, as interLink reads them
type Json = any;
const T0 = Date.parse("2026-11-23T12:00:00Z");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
let n = 0;
const uid = () => `5555ffff-0000-4000-8000-${String(++n).padStart(12, "0")}`;

const ev = (type: number, jid: string, first: string, body = "") => {
  const [c, p] = jid.split(".").map((x) => x.padStart(3, "0"));
  return `${String(type).padStart(3, "0")} (${c}.${p}.000) 2026-11-23 12:00:00 ${first}\n${body}...\n`;
};

async function setup(config = "") {
  const dir = mkdtempSync(join(tmpdir(), "follow-test-"));
  dirs.push(dir);
  const dataRoot = join(dir, "data");
  mkdirSync(join(dataRoot, "pods"), { recursive: true });
  const { config: cfg } = parseConfig(`ReconcileMinutes: 60\n${config}`);
  let now = T0;
  const condor = fakeCondor({ readSubmitFile: (path) => readFileSync(path, "utf8"), now: () => now });
  const store = openStore(bunRuntime.openSqlite(join(dataRoot, "state.db")));
  const c = createContext({
    store,
    condor,
    config: cfg,
    planConfig: planConfig(cfg, false),
    dataRoot,
    spool: false,
    log: memoryLogger(),
    now: () => now,
    version: "test",
    // Nothing periodic runs by itself (the test calls tick() and refreshNow()); what is due now
    // (the reconciler kicked by a gap) runs at once.
    timer: (fn, ms) => {
      if (ms > 0) return () => {};
      const t = setTimeout(fn, 0);
      return () => clearTimeout(t);
    },
  });
  const status = createStatusService(c);
  const follower = createFollower(c);
  c.follower = follower;
  const create = createCreateService(c, createSubmitter(c)).create;
  const queries = () => condor.calls.filter((x) => x.tool === "query").map((x) => String(x.arg));
  return {
    c,
    condor,
    store,
    follower,
    queries,
    targeted: () => queries().filter((q) => q.startsWith("(ClusterId ==")),
    full: () => queries().filter((q) => q.startsWith("ClusterId >=")),
    advance: (ms: number) => void (now += ms),
    logPath: () => join(dataRoot, "events", store.eventLogs()[0]!.name),
    async create(name: string): Promise<{ pod: Json; jid: string }> {
      const req = makeCreateRequest({
        metadata: { name, uid: uid() },
        spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 60"], resources: {} }] },
      });
      const a = await create(parseCreateRequest(req));
      now += 1;
      return { pod: req.pod, jid: a.PodJID };
    },
    async status(pod: Json): Promise<Json | undefined> {
      return (await status.status([{ uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace ?? "default" }])).statuses[0];
    },
  };
}

const RUNNING = JSON.stringify(formatStateLine({ state: "running", startedAt: 1_795_000_000, ready: false, restartCount: 0 }));

describe("the follower asks about exactly the jobs the log names", () => {
  test("a new job's submit file names the shared log; its record says which; an event brings one targeted condor_q and the new state", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("web");
    const sub = readFileSync(join(s.c.dataRoot, "pods", pod.metadata.uid, "job.sub"), "utf8");
    expect(sub).toContain(`log = ${s.logPath()}`);
    expect(s.store.get(pod.metadata.uid)!.eventLog).toBe(s.store.eventLogs()[0]!.name);
    await s.c.queue.refreshNow(); // the full condor_q at start
    const full = s.full().length;
    // The new job is asked about once (its 000 may have been read before its id was recorded).
    await s.follower.tick();
    expect(s.targeted()).toEqual([`(ClusterId == ${jid.split(".")[0]} && (ProcId == 0))`]);

    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 2, [stateAttrName(0, false)]: RUNNING.slice(1, -1) });
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <127.0.0.1:9618>", "\tSlotName: slot1@x\n"));
    appendFileSync(s.logPath(), ev(33, jid, `Setting job attribute ${stateAttrName(0, false)} to ${RUNNING}`));
    await s.follower.tick();
    // Two events, one job: one query, and no full one.
    expect(s.targeted().length).toBe(2);
    expect(s.full().length).toBe(full);
    expect((await s.status(pod)).containers[0].state.running).toBeDefined();
    // The offset is saved past the last "..." line.
    expect(s.store.eventLogs()[0]!.offset).toBe(readFileSync(s.logPath()).length);
    // Nothing new: no query at all.
    await s.follower.tick();
    expect(s.targeted().length).toBe(2);
  });

  test("forged events for another pod's job cost one query and change nothing; events for ids not followed cost none", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("victim");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 2, [stateAttrName(0, false)]: RUNNING.slice(1, -1) });
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const before = s.targeted().length;
    appendFileSync(s.logPath(), ev(5, jid, "Job terminated.", "\t(1) Normal termination (return value 0)\n"));
    appendFileSync(s.logPath(), ev(9, jid, "Job was aborted.", "\tforged\n"));
    await s.follower.tick();
    expect(s.targeted().length).toBe(before + 1);
    const st = await s.status(pod);
    expect(st.containers[0].state.running).toBeDefined();
    expect(s.condor.count("history")).toBe(0);
    appendFileSync(s.logPath(), ev(5, "4242.0", "Job terminated.", "\t(1) Normal termination (return value 0)\n"));
    await s.follower.tick();
    expect(s.targeted().length).toBe(before + 1);
  });

  test("a job that left: its 005 brings the targeted condor_q that misses it, then condor_history records its end", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("done");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    s.condor.end(jid, { JobStatus: 4, ExitCode: 3, ExitBySignal: false });
    appendFileSync(s.logPath(), ev(5, jid, "Job terminated.", "\t(1) Normal termination (return value 3)\n"));
    await s.follower.tick();
    expect(s.condor.count("history")).toBe(1);
    const st = await s.status(pod);
    expect(st.containers[0].state.terminated.exitCode).toBe(3);
  });
});

describe("durability and gaps", () => {
  test("a failed targeted condor_q saves no offset: the events are read again and the change is not lost", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("flaky");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const saved = s.store.eventLogs()[0]!.offset;
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 5, HoldReasonCode: 1, HoldReason: "via condor_hold" });
    appendFileSync(s.logPath(), ev(12, jid, "Job was held.", "\tvia condor_hold\n\tCode 1 Subcode 0\n"));
    s.condor.failing.add("query");
    await s.follower.tick();
    expect(s.store.eventLogs()[0]!.offset).toBe(saved);
    // Stale meanwhile: the pod is left out, so interLink keeps its last state.
    expect(await s.status(pod)).toBeUndefined();
    s.condor.failing.delete("query");
    // A new follower on the same store (a restart) reads the events again from the saved offset.
    await s.follower.stop();
    const again = createFollower(s.c);
    s.advance(3_000);
    await again.tick();
    expect(s.store.eventLogs()[0]!.offset).toBe(readFileSync(s.logPath()).length);
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    await again.stop();
  });

  test("a truncated log is a gap: one full condor_q, and the file is read again from its start", async () => {
    const s = await setup();
    const { jid } = await s.create("cut");
    await s.c.queue.refreshNow();
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    await s.follower.tick();
    const full = s.full().length;
    truncateSync(s.logPath(), 0);
    appendFileSync(s.logPath(), ev(12, jid, "Job was held.", "\tx\n\tCode 1 Subcode 0\n"));
    await s.follower.tick();
    for (let i = 0; i < 50 && s.full().length === full; i++) await Bun.sleep(5);
    expect(s.full().length).toBe(full + 1);
    expect(s.store.eventLogs()[0]!.offset).toBe(readFileSync(s.logPath()).length);
  });

  test("a hold's grace period ends without an event: a recheck of that job removes it", async () => {
    const s = await setup("HoldGraceSeconds: 60\n");
    const { pod, jid } = await s.create("oom");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 5, HoldReasonCode: 34, HoldReasonSubCode: 102, HoldReason: "Job has gone over memory limit" });
    appendFileSync(s.logPath(), ev(12, jid, "Job was held.", "\tJob has gone over memory limit\n\tCode 34 Subcode 102\n"));
    await s.follower.tick();
    expect((await s.status(pod)).containers[0].state.waiting.reason).toBe("JobHeld");
    s.advance(30_000);
    await s.follower.tick();
    expect(s.condor.count("remove")).toBe(0);
    s.advance(31_000);
    await s.follower.tick();
    expect(s.condor.calls.filter((x) => x.tool === "remove")).toEqual([{ tool: "remove", arg: [jid] }]);
    expect((await s.status(pod)).containers[0].state.terminated.reason).toBe("OOMKilled");
  });

  test("a log in another format: its jobs are polled (the full condor_q every StatusCacheSeconds)", async () => {
    const s = await setup();
    const { jid } = await s.create("xml");
    await s.c.queue.refreshNow();
    expect(s.c.queue.polled(s.store.eventLogs()[0]!.name)).toBe(false);
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    appendFileSync(s.logPath(), `<c>\n    <a n="MyType"><s>JobHeldEvent</s></a>\n</c>\n`);
    await s.follower.tick();
    expect(s.c.queue.polled(s.store.eventLogs()[0]!.name)).toBe(true);
    expect(existsSync(s.logPath())).toBe(true);
  });
});

test("a log none of whose jobs is queued is deleted, never the current one", async () => {
  const s = await setup();
  const { pod } = await s.create("old");
  const first = s.logPath();
  appendFileSync(first, ev(0, "1.0", "Job submitted from host: <x>"));
  // A day later new jobs go to a new log.
  s.advance(24 * 3600_000 + 1);
  await s.create("new");
  expect(s.store.eventLogs().length).toBe(2);
  s.advance(61_000);
  await s.follower.tick();
  expect(existsSync(first)).toBe(true); // its job is still queued
  s.store.finish(pod.metadata.uid, "{}", T0);
  s.advance(61_000);
  await s.follower.tick();
  expect(existsSync(first)).toBe(false);
  expect(s.store.eventLogs().length).toBe(1);
});
