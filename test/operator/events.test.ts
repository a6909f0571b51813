// The operator follows its procs from its job event log (docs/operator.md#following-the-procs):
// the log says WHICH procs to ask about, one condor_q of exactly those says WHAT they are; the
// full follow is the reconciler. Against the in-memory schedd and API server of fakes.ts.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COUNT_MS, WATCH_MS } from "../../src/condor/watch.ts";
import type { Logger } from "../../src/logger.ts";
import type { ControllerDeps } from "../../src/operator/controller.ts";
import { createEventDriver, type EventDriver, operatorEventsDir } from "../../src/operator/events.ts";
import { openHTCJobStore } from "../../src/operator/store.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { htcjob, type World, world } from "./fakes.ts";

let w: World;
let driver: EventDriver;
afterEach(async () => {
  await driver?.stop();
  w?.destroy();
}, 30_000);

const STATUS_CACHE_MS = 2000;
/** The watch's question of what changed (core/watch.ts changedSince), from the operator's first cluster on. */
const WHAT_CHANGED = /^ClusterId >= 100 && \(\(EnteredCurrentStatus >= \d+ && EnteredCurrentStatus <= time\(\)\)/;
const RECONCILE_MS = 300_000;

function setup(over: Partial<ControllerDeps> = {}): void {
  w = world({ eventLog: () => driver.logForNewJob(), recorded: (c, p) => driver.recorded(c, p), ...over });
  driver = newDriver();
}

function newDriver(): EventDriver {
  return createEventDriver({
    store: w.store,
    dataRoot: w.dir,
    follow: (scope) => w.controller.follow(scope),
    jobStatus: (id) => w.controller.jobStatus(id),
    condor: w.schedd,
    operatorId: "op-1",
    statusCacheMs: STATUS_CACHE_MS,
    reconcileMs: RECONCILE_MS,
    log: { debug() {}, info() {}, warn: (m: string, f?: object) => void w.logs.push(`warn ${m} ${JSON.stringify(f ?? {})}`), error() {} } as unknown as Logger,
    now: () => w.clock.t,
  });
}

async function submitted(name = "q", uid = "uid-1") {
  w.kube.put(htcjob(name, uid));
  await w.controller.reconcile(`default/${name}`);
  await driver.tick();
  return w.store.get(uid)!;
}

const logPath = (uid = "uid-1") => join(operatorEventsDir(w.dir), w.store.get(uid)!.eventLog!);

/** One event as the shadow or the schedd writes it (docs/htcondor.md#the-events-as-written). */
function event(type: number, id: string, first: string, body: string[] = []): string {
  const [c, p] = id.split(".");
  return `${String(type).padStart(3, "0")} (${c}.${p!.padStart(3, "0")}.000) 2024-05-01 10:00:00 ${first}\n${body.map((b) => `${b}\n`).join("")}...\n`;
}
const terminated = (id: string, code: number) => event(5, id, "Job terminated.", [`\t(1) Normal termination (return value ${code})`]);
const executing = (id: string) => event(1, id, "Job executing on host: <127.0.0.1:9618?addrs=127.0.0.1-9618>");

const queries = () => w.schedd.calls.filter((c) => c.tool === "query").map((c) => c.arg);
const status = (name = "q") => w.kube.objects.get(`default/${name}`)!.status!;

test("a new cluster's submit file names the operator's own event log; a spooled one keeps job.log and is polled (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  const rec = await submitted();
  expect(rec.eventLog).toMatch(/^events-\d{8}T\d{6}Z\.log$/);
  const sub = readFileSync(join(rec.dir, "job.sub"), "utf8");
  expect(sub).toContain(`log = ${logPath()}`);
  expect(driver.polled(rec)).toBe(false);
  await driver.stop();
  w.destroy();

  setup({ spool: true });
  await driver.tick();
  const spooled = await submitted();
  expect(spooled.eventLog).toBeUndefined();
  expect(readFileSync(join(spooled.dir, "job.sub"), "utf8")).toContain("log = job.log");
  expect(driver.polled(spooled)).toBe(true);
});

test("events name the procs; one condor_q of exactly those says what they are, and the status follows the queue (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted();
  const before = queries().length;
  w.schedd.queued.get("100.1")!.JobStatus = 2;
  appendFileSync(logPath(), executing("100.1"));
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 100 && ProcId == 1"]);
  await w.controller.reconcile("default/q");
  expect(status().running).toBe(1);

  w.schedd.end("100.1", { JobStatus: 4, ExitCode: 0 });
  appendFileSync(logPath(), terminated("100.1", 0));
  await driver.tick();
  await w.controller.reconcile("default/q");
  expect(status().succeeded).toBe(1);
  expect(status().active).toBe(1);
  // Steady state: no event, no query (the reconciler is minutes away).
  const steady = queries().length;
  for (let i = 0; i < 5; i++) {
    w.clock.t += 1000;
    await driver.tick();
  }
  expect(queries().length).toBe(steady);
  // The offset is durable and sits just past the last event read.
  expect(w.store.eventLogs()[0]!.offset).toBe(readFileSync(logPath()).length);
});

test("a forged event for another HTCJob's proc costs one query and changes nothing; one for a proc of no record costs nothing (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted("q", "uid-1");
  await submitted("r", "uid-2");
  w.schedd.queued.get("101.0")!.JobStatus = 2;
  appendFileSync(logPath("uid-2"), executing("101.0"));
  await driver.tick();
  await w.controller.reconcile("default/r");
  expect(status("r").running).toBe(1);

  // A proc of q's writes a "terminated, return value 0" for r's running proc.
  const before = queries().length;
  appendFileSync(logPath("uid-1"), terminated("101.0", 0));
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 101 && ProcId == 0"]);
  await w.controller.reconcile("default/r");
  expect(status("r").running).toBe(1);
  expect(status("r").succeeded ?? 0).toBe(0);
  expect(w.store.get("uid-2")!.outcomes).toEqual([null, null]);

  const after = queries().length;
  appendFileSync(logPath("uid-1"), terminated("999.0", 0) + event(12, "998.3", "Job was held."));
  await driver.tick();
  expect(queries().length).toBe(after);
});

test("the offset is saved only after the confirming query was acted on: a failed condor_q reads the events again (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted();
  const saved = w.store.eventLogs()[0]!.offset;
  w.schedd.end("100.0", { JobStatus: 4, ExitCode: 0 });
  appendFileSync(logPath(), terminated("100.0", 0));
  w.schedd.failing.add("query");
  await driver.tick();
  expect(w.store.eventLogs()[0]!.offset).toBe(saved);
  expect(w.store.get("uid-1")!.outcomes[0]).toBeNull();

  // A restart: a new operator on the same store reads the same events and settles the proc.
  w.schedd.failing.delete("query");
  await driver.stop();
  w.restart();
  driver = newDriver();
  await driver.tick();
  expect(w.store.get("uid-1")!.outcomes[0]?.state).toBe("succeeded");
  expect(w.store.eventLogs()[0]!.offset).toBe(readFileSync(logPath()).length);
});

test("a truncated log is a gap: one full follow of every live cluster (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted("q", "uid-1");
  await submitted("r", "uid-2");
  appendFileSync(logPath(), executing("100.0") + executing("101.0"));
  await driver.tick();
  expect(w.store.eventLogs()[0]!.offset).toBeGreaterThan(0);
  const before = queries().length;
  truncateSync(logPath(), 0);
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 100 || ClusterId == 101"]);
  expect(w.logs.some((l) => /cannot say what changed.*truncated/.test(l))).toBe(true);
});

test("a malformed event and a log in another format are gaps; a JSON log's clusters are watched (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  const rec = await submitted();
  appendFileSync(logPath(), "005 (100.000.000) garbage\n...\n");
  let before = queries().length;
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 100"]);

  w.clock.t += 11_000;
  appendFileSync(logPath(), '{"MyType":"ExecuteEvent","Cluster":100,"Proc":0}\n');
  await driver.tick();
  expect(driver.polled(w.store.get(rec.uid)!)).toBe(true);
  // The full follow's answer gave the watch its window: what changed since is asked, not the cluster whole.
  before = queries().length;
  w.clock.t += WATCH_MS;
  await driver.tick();
  expect(queries().slice(before)).toEqual([expect.stringMatching(WHAT_CHANGED)]);
});

test("the full follow runs every ReconcileMinutes (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted();
  const before = queries().length;
  w.clock.t += RECONCILE_MS - 1;
  await driver.tick();
  expect(queries().length).toBe(before);
  w.clock.t += 1;
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 100"]);
});

describe("spooled clusters are followed by the watch the sidecar's spooled pods have (docs/operator.md#following-the-procs)", () => {
  const calls = (from: number) =>
    w.schedd.calls.slice(from).map((c) => c.tool === "query" || c.tool === "totals" || c.tool === "history" ? `${c.tool} ${c.arg}` : c.tool);
  const changed = expect.stringMatching(new RegExp(`^query ${WHAT_CHANGED.source.slice(1)}`));
  /** The count of live procs (every COUNT_MS): no ad. */
  const COUNT = 'totals HTCJobOperatorId == "op-1" && ClusterId >= 100 && JobStatus != 3 && JobStatus != 4';

  test("until an answer gave the schedd's clock they are read whole; then a quiet second costs one question of what changed, and no ad", async () => {
    setup({ spool: true });
    // No ServerTime comes back (an older schedd's answer without it): the cluster is read whole every StatusCacheSeconds.
    const query = w.schedd.query.bind(w.schedd);
    w.schedd.query = async (o) => (await query(o)).map(({ ServerTime: _, ...ad }) => ad);
    await driver.tick();
    await submitted();
    let from = w.schedd.calls.length;
    for (let i = 0; i < 2; i++) {
      w.clock.t += STATUS_CACHE_MS;
      await driver.tick();
    }
    expect(calls(from)).toEqual(["query ClusterId == 100", "query ClusterId == 100"]);

    w.schedd.query = query;
    w.clock.t += STATUS_CACHE_MS;
    await driver.tick();
    from = w.schedd.calls.length;
    for (let i = 0; i < 4; i++) {
      w.clock.t += WATCH_MS;
      await driver.tick();
    }
    expect(calls(from).filter((c) => c !== COUNT)).toEqual(Array(4).fill(changed));
    // A pass sooner than WATCH_MS asks nothing.
    from = w.schedd.calls.length;
    w.clock.t += WATCH_MS / 2;
    await driver.tick();
    expect(calls(from)).toEqual([]);
  });

  test("a proc that completes is read from the answer of what changed: its output fetched, the status follows", async () => {
    setup({ spool: true });
    await driver.tick();
    const rec = await submitted();
    w.schedd.onTransfer = (ids) => {
      for (const i of ids) {
        mkdirSync(join(rec.dir, "procs", String(i.proc), "podstate"), { recursive: true });
        writeFileSync(join(rec.dir, "procs", String(i.proc), "podstate", "c.htcjob"), "0 terminated Completed\n");
      }
    };
    // The cluster read whole once, with the schedd's clock: the watch's window starts there.
    w.clock.t += STATUS_CACHE_MS;
    await driver.tick();
    const from = w.schedd.calls.length;
    Object.assign(w.schedd.queued.get("100.1")!, { JobStatus: 4, ExitCode: 0 });
    w.clock.t += WATCH_MS;
    await driver.tick();
    expect(calls(from).filter((c) => c !== COUNT)).toEqual([changed, "transferData"]);
    expect(w.schedd.calls.find((c, i) => i >= from && c.tool === "transferData")!.arg).toEqual(["100.1"]);
    await w.controller.reconcile("default/q");
    expect(status().succeeded).toBe(1);
    expect(status().active).toBe(1);
  });

  test("a proc that leaves the queue unseen (removed while idle) is found by the count and the history", async () => {
    setup({ spool: true });
    await driver.tick();
    await submitted();
    w.clock.t += STATUS_CACHE_MS;
    await driver.tick();
    // Removed by someone else between two questions: it leaves at once, with no ad left to send.
    w.schedd.end("100.0", { JobStatus: 3, RemoveReason: "by the site" });
    const from = w.schedd.calls.length;
    for (let i = 0; i < COUNT_MS / WATCH_MS; i++) {
      w.clock.t += WATCH_MS;
      await driver.tick();
    }
    const seen = calls(from);
    expect(seen.filter((c) => c.startsWith("totals"))).toEqual([COUNT]);
    expect(seen.some((c) => /^history HTCJobOperatorId == "op-1" && ClusterId >= 100 && EnteredCurrentStatus >= \d+$/.test(c))).toBe(true);
    expect(seen.some((c) => c.startsWith("query ClusterId == 100"))).toBe(false);
    expect(w.store.get("uid-1")!.outcomes[0]?.state).toBe("failed");
    expect(w.store.get("uid-1")!.outcomes[1]).toBeNull();
  });
});

test("a terminal event ahead of the schedd's commit: the proc is asked about again until its ad says so (docs/operator.md#following-the-procs)", async () => {
  setup();
  await driver.tick();
  await submitted();
  w.schedd.queued.get("100.0")!.JobStatus = 2;
  appendFileSync(logPath(), terminated("100.0", 0));
  await driver.tick();
  expect(w.store.get("uid-1")!.outcomes[0]).toBeNull();
  w.schedd.end("100.0", { JobStatus: 4, ExitCode: 0 });
  const before = queries().length;
  w.clock.t += 1000;
  await driver.tick();
  expect(queries().slice(before)).toEqual(["ClusterId == 100 && ProcId == 0"]);
  expect(w.store.get("uid-1")!.outcomes[0]?.state).toBe("succeeded");
});

test("a hold that cannot recover is looked at again when its grace ends, with no event (docs/operator.md#following-the-procs)", async () => {
  setup({ holdGraceMs: 30_000 });
  await driver.tick();
  await submitted();
  Object.assign(w.schedd.queued.get("100.0")!, { JobStatus: 5, HoldReasonCode: 34, HoldReason: "memory" });
  appendFileSync(logPath(), event(12, "100.0", "Job was held.", ["\tmemory", "\tCode 34 Subcode 0"]));
  await driver.tick();
  expect(w.schedd.count("remove")).toBe(0);
  w.clock.t += 30_000;
  await driver.tick();
  expect(w.schedd.count("remove")).toBe(1);
  expect(w.store.get("uid-1")!.outcomes[0]?.state).toBe("failed");
});

test("the store's migration keeps an older operator's records: they have no event log and are polled (docs/operator.md#the-store)", async () => {
  setup();
  await driver.tick();
  await submitted();
  const again = openHTCJobStore(bunRuntime.openSqlite(join(w.dir, "htcjobs.db")));
  expect(again.get("uid-1")!.eventLog).toBe(w.store.get("uid-1")!.eventLog);
  expect(again.eventLogs().map((l) => l.name)).toEqual([w.store.get("uid-1")!.eventLog!]);
  again.close();
});
