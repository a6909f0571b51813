// The job event log follower in-process (docs/status.md#following-the-event-log,
// docs/status.md#what-drives-status): a Condor test double, a clock the test moves, and the
// shared log written by the test as the schedd, the shadow or a hostile job would write it.
import { afterAll, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "../../src/config.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { formatStateLine } from "../../src/core/state-line.ts";
import { stateAttrName } from "../../src/core/types.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
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

async function setup(config = "", spool = false) {
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
    spool,
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
  const follower = c.follower;
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

describe("what the event log cannot be trusted to say (docs/status.md#following-the-event-log)", () => {
  const term = (jid: string, code: number) => ev(5, jid, "Job terminated.", `\t(1) Normal termination (return value ${code})\n`);

  test("a 005 read before the schedd marked the job done is asked about again until the queue agrees (docs/htcondor.md#who-writes-an-event-and-when)", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("ending");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 2, [stateAttrName(0, false)]: RUNNING.slice(1, -1) });
    await s.c.queue.refreshNow();
    await s.follower.tick();
    // The shadow logged its 005; the schedd's reaper has not set JobStatus yet.
    appendFileSync(s.logPath(), term(jid, 3));
    await s.follower.tick();
    expect((await s.status(pod)).containers[0].state.running).toBeDefined();
    s.condor.end(jid, { JobStatus: 4, ExitCode: 3, ExitBySignal: false });
    s.advance(500);
    await s.follower.tick();
    expect((await s.status(pod)).containers[0].state.terminated.exitCode).toBe(3);
  });

  test("the recheck after an event that ends a run is bounded: four, with a growing delay", async () => {
    const s = await setup();
    const { jid } = await s.create("stuck");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 2 });
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const before = s.targeted().length;
    appendFileSync(s.logPath(), ev(4, jid, "Job was evicted."));
    await s.follower.tick();
    for (const ms of [400, 100, 1000, 2000, 4000, 8000, 16000]) {
      s.advance(ms);
      await s.follower.tick();
    }
    expect(s.targeted().length - before).toBe(1 + 4);
  });

  test("a forged header with no `...` that swallows a real event: a gap, and both ids are asked about", async () => {
    const s = await setup();
    const { jid } = await s.create("swallowed");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const [before, full] = [s.targeted().length, s.full().length];
    appendFileSync(s.logPath(), `012 (4242.000.000) 2026-11-23 12:00:00 Job was held.\n` + term(jid, 0));
    await s.follower.tick();
    expect(s.targeted().slice(before)).toEqual([`(ClusterId == ${jid.split(".")[0]} && (ProcId == 0))`]);
    for (let i = 0; i < 50 && s.full().length === full; i++) await Bun.sleep(5);
    expect(s.full().length).toBe(full + 1);
  });

  test("a replaced log: its jobs are polled (shadows keep writing the old file), and new jobs get a new log", async () => {
    const s = await setup();
    const { jid } = await s.create("replaced");
    await s.c.queue.refreshNow();
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    await s.follower.tick();
    const name = s.store.eventLogs()[0]!.name;
    const path = s.logPath();
    // Another file moved over it (a new inode; a deleted inode may be reused at once).
    writeFileSync(path + ".new", ev(0, "1.0", "Job submitted from host: <x>") + ev(0, "2.0", "Job submitted from host: <x>"));
    renameSync(path + ".new", path);
    await s.follower.tick();
    expect(s.c.queue.polled(name)).toBe(true);
    s.advance(1);
    await s.create("after");
    expect(s.store.eventLogs().map((l) => l.name).filter((n) => n !== name).length).toBe(1);
    expect(s.store.get(s.store.list(["submitted"]).find((r) => r.name === "after")!.uid)!.eventLog).not.toBe(name);
  });

  test("a deleted log: its jobs are polled, not forgotten", async () => {
    const s = await setup();
    const { jid } = await s.create("gone");
    await s.c.queue.refreshNow();
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    await s.follower.tick();
    const name = s.store.eventLogs()[0]!.name;
    rmSync(s.logPath());
    await s.follower.tick();
    expect(s.c.queue.polled(name)).toBe(true);
  });

  test("an event longer than the read limit is skipped to its end; the log is still followed", async () => {
    const s = await setup();
    const { jid } = await s.create("big");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const name = s.store.eventLogs()[0]!.name;
    const before = s.targeted().length;
    appendFileSync(s.logPath(), ev(8, jid, "x".repeat(9 * 1024 * 1024)));
    appendFileSync(s.logPath(), ev(12, jid, "Job was held.", "\tx\n\tCode 1 Subcode 0\n"));
    await s.follower.tick();
    expect(s.c.queue.polled(name)).toBe(false);
    expect(s.store.eventLogs()[0]!.offset).toBe(readFileSync(s.logPath()).length);
    expect(s.targeted().length).toBe(before + 1);
  });

  test("a log in another format takes no new jobs", async () => {
    const s = await setup();
    await s.create("xml2");
    await s.c.queue.refreshNow();
    appendFileSync(s.logPath(), `<c>\n    <a n="MyType"><s>JobHeldEvent</s></a>\n</c>\n`);
    await s.follower.tick();
    const name = s.store.eventLogs()[0]!.name;
    s.advance(1);
    await s.create("next");
    expect(s.store.eventLogs().length).toBe(2);
    expect(s.c.queue.polled(s.store.eventLogs()[1]!.name)).toBe(false);
    expect(s.c.queue.polled(name)).toBe(true);
  });

  test("a create does not make the refresher read every followed job", async () => {
    const s = await setup();
    await s.create("a");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    let reads = 0;
    const liveJobs = s.store.liveJobs.bind(s.store);
    s.store.liveJobs = () => (reads++, liveJobs());
    for (const name of ["b", "c", "d"]) await s.create(name);
    expect(reads).toBe(0);
  });

  test("acting on the targeted query failed: the offset is not saved", async () => {
    const s = await setup();
    const { jid } = await s.create("act");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const saved = s.store.eventLogs()[0]!.offset;
    const after = s.c.queue.afterRefresh!;
    s.c.queue.afterRefresh = () => Promise.reject(new Error("store busy"));
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    await s.follower.tick();
    expect(s.store.eventLogs()[0]!.offset).toBe(saved);
    s.c.queue.afterRefresh = after;
  });

  test("a log whose jobs were removed is kept while their records may still be queued; files no record names are swept when old", async () => {
    const s = await setup();
    const { pod } = await s.create("removed");
    const first = s.logPath();
    appendFileSync(first, ev(0, "1.0", "Job submitted from host: <x>"));
    s.advance(24 * 3600_000 + 1);
    await s.create("new");
    // condor_rm accepted: the job stays in X while its shadow exits, and the schedd then writes 009 by path.
    s.store.requestRemoval(pod.metadata.uid, s.c.now());
    s.store.completeRemoval(pod.metadata.uid, s.c.now());
    s.advance(61_000);
    await s.follower.tick();
    expect(existsSync(first)).toBe(true);
    s.advance(24 * 3600_000);
    await s.follower.tick();
    expect(existsSync(first)).toBe(false);
    // A file of a lost store: kept while written to recently, swept once old.
    const stray = join(s.c.dataRoot, "events", "events-20200101T000000Z.log");
    appendFileSync(stray, ev(0, "1.0", "Job submitted from host: <x>"));
    const recent = (s.c.now() - 3600_000) / 1000;
    utimesSync(stray, recent, recent);
    s.advance(61_000);
    await s.follower.tick();
    expect(existsSync(stray)).toBe(true);
    const old = (s.c.now() - 8 * 24 * 3600_000) / 1000;
    utimesSync(stray, old, old);
    s.advance(61_000);
    await s.follower.tick();
    expect(existsSync(stray)).toBe(false);
  });

  test("the events folder is checked at use: a symlink in its place is not read, and its jobs are polled", async () => {
    const s = await setup();
    const { jid } = await s.create("link");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    const name = s.store.eventLogs()[0]!.name;
    const dir = join(s.c.dataRoot, "events");
    const elsewhere = join(s.c.dataRoot, "elsewhere");
    renameSync(dir, elsewhere);
    symlinkSync(elsewhere, dir);
    const before = s.targeted().length;
    appendFileSync(join(elsewhere, name), ev(1, jid, "Job executing on host: <x>"));
    await s.follower.tick();
    expect(s.targeted().length).toBe(before);
    expect(s.c.queue.polled(name)).toBe(true);
    // A new follower refuses the folder.
    expect(() => createFollower(s.c)).toThrow(/not a folder/);
    rmSync(dir);
    renameSync(elsewhere, dir);
    chmodSync(dir, 0o755);
    expect(() => createFollower(s.c)).toThrow(/mode 755/);
    chmodSync(dir, 0o700);
  });

  test("a probe that answers does not make the view fresh while a failed targeted query was not retried", async () => {
    const s = await setup();
    const { pod, jid } = await s.create("probe");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    appendFileSync(s.logPath(), ev(1, jid, "Job executing on host: <x>"));
    s.condor.failing.add("query");
    await s.follower.tick();
    s.condor.failing.delete("query");
    await s.c.queue.probe();
    expect(await s.status(pod)).toBeUndefined();
  });
});

describe("a removed job still in the queue (docs/status.md#what-drives-status)", () => {
  test("is asked about again, less often the longer it stays, until its end is in the history", async () => {
    const s = await setup("StatusCacheSeconds: 2\n");
    const { pod, jid } = await s.create("leaving");
    await s.c.queue.refreshNow();
    await s.follower.tick();
    // condor_rm of a running job: status 3 while its shadow stops; the 009 comes now, and no event
    // follows when the job leaves the queue later.
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 3, RemoveReason: "via condor_rm" });
    appendFileSync(s.logPath(), ev(9, jid, "Job was aborted.", "\tvia condor_rm\n"));
    await s.follower.tick();
    const asked = () => s.targeted().length;
    const first = asked();
    // Within StatusCacheSeconds: not yet; after it: once more.
    s.advance(1_500);
    await s.follower.tick();
    expect(asked()).toBe(first);
    s.advance(600);
    await s.follower.tick();
    expect(asked()).toBe(first + 1);
    // Staying: the next one waits half as long as it has stayed (22.1 s in: 11 s).
    s.advance(20_000);
    await s.follower.tick();
    expect(asked()).toBe(first + 2);
    s.advance(9_000);
    await s.follower.tick();
    expect(asked()).toBe(first + 2);
    // It left: the next question misses it, and the history gives its end.
    s.condor.end(jid, { JobStatus: 3 });
    s.advance(2_100);
    await s.follower.tick();
    expect(asked()).toBe(first + 3);
    expect(s.condor.count("history")).toBe(1);
    expect((await s.status(pod)).containers[0].state.terminated).toMatchObject({ reason: "JobRemoved", exitCode: 137 });
  });
});

describe("a spooled job whose output did not come back (docs/status.md#following-spooled-jobs)", () => {
  test("is asked about again 10 s later, and the fetch tried again, though no status changed", async () => {
    const s = await setup("", true);
    const { jid } = await s.create("spooled");
    Object.assign(s.condor.queued.get(jid)!, { JobStatus: 4, ExitCode: 0, ExitBySignal: false });
    await s.c.queue.refreshNow();
    expect(s.condor.count("transferData")).toBe(1);
    s.advance(9_000);
    await s.follower.tick();
    expect(s.condor.count("transferData")).toBe(1);
    s.advance(1_100);
    await s.follower.tick();
    expect(s.condor.count("transferData")).toBe(2);
  });
});
