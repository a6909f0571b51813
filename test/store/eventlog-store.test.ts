// The saved place in the shared job event log is durable state (docs/status.md#nothing-is-lost-across-restarts).
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { openStore } from "../../src/store/store.ts";

const dir = mkdtempSync(join(tmpdir(), "eventlog-store-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rec = (uid: string, eventLog?: string) => ({
  uid,
  name: uid,
  namespace: "ns",
  dir: `/d/${uid}`,
  spooled: false,
  containers: [],
  secrets: [],
  createdAt: 1,
  eventLog,
});

test("the offset, inode and size of each log survive a reopen, and saving them leaves the followed jobs' version alone", () => {
  const path = join(dir, "a.db");
  const store = openStore(bunRuntime.openSqlite(path), path);
  store.addEventLog("events-1.log", 10);
  store.addEventLog("events-2.log", 20);
  store.addEventLog("events-1.log", 99); // known: no-op
  const v = store.version();
  store.saveEventLog("events-1.log", { offset: 4096, inode: 77, size: 5000 });
  expect(store.version()).toBe(v);
  store.close();
  const again = openStore(bunRuntime.openSqlite(path), path);
  expect(again.eventLogs()).toEqual([
    { name: "events-1.log", createdAt: 10, offset: 4096, inode: 77, size: 5000 },
    { name: "events-2.log", createdAt: 20, offset: 0, inode: 0, size: 0 },
  ]);
  again.removeEventLog("events-1.log");
  expect(again.eventLogs().map((l) => l.name)).toEqual(["events-2.log"]);
  again.close();
});

test("a log is in use while one of its jobs may be queued (creating, submitted, removing), and while a finished or deleted record is younger than `since` (docs/status.md#following-the-event-log)", () => {
  const path = join(dir, "b.db");
  const store = openStore(bunRuntime.openSqlite(path), path);
  store.accept(rec("u1", "events-1.log"));
  store.accept(rec("u2", "events-1.log"));
  store.accept(rec("u3"));
  store.recordJob("u1", 5, 0, 2);
  store.recordJob("u3", 6, 0, 2);
  expect(store.get("u1")!.eventLog).toBe("events-1.log");
  expect(store.liveJobs().map((j) => [j.uid, j.eventLog])).toEqual([["u1", "events-1.log"], ["u3", undefined]]);
  expect(store.eventLogUsers(0)).toEqual(new Map([["events-1.log", 2]]));
  store.abandon("u2");
  store.requestRemoval("u1", 3);
  expect(store.eventLogUsers(0)).toEqual(new Map([["events-1.log", 1]]));
  // condor_rm was accepted, but the job stays in X while its shadow exits; the schedd then writes its 009 to the log.
  store.completeRemoval("u1", 4);
  expect(store.eventLogUsers(4)).toEqual(new Map([["events-1.log", 1]]));
  expect(store.eventLogUsers(5)).toEqual(new Map());
  store.close();
});
