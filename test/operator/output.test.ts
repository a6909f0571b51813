// A proc's working-directory files on the operator's side (src/operator/output.ts, logs.ts,
// retention.ts; docs/operator.md#output, #logs, #retention): whatever came back is believed only
// after the operator looked itself, a link is never followed, a proc's files are all kept or none,
// and a deleted HTCJob's output goes after HTCJob.OutputRetentionSeconds.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/logger.ts";
import { htcjobDir } from "../../src/operator/controller.ts";
import { htcjobLogs } from "../../src/operator/logs.ts";
import { settleWork, walkWork } from "../../src/operator/output.ts";
import { reapDeleted } from "../../src/operator/retention.ts";
import { htcjobStatus, statusEvents } from "../../src/operator/status.ts";
import { type HTCJobStore, openHTCJobStore } from "../../src/operator/store.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), "htcjob-output-"));
  made.push(d);
  return d;
}

/** A proc's folder as the output left it: `files` under work/, and the wrapper's report. */
function procFolder(files: Record<string, string>, marker?: string): string {
  const dir = join(temp(), "procs", "0");
  mkdirSync(join(dir, "work"), { recursive: true });
  mkdirSync(join(dir, "podstate"), { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, "work", path, ".."), { recursive: true });
    writeFileSync(join(dir, "work", path), content);
  }
  if (marker !== undefined) writeFileSync(join(dir, "podstate/work"), marker);
  return dir;
}

const LIMITS = { maxBytes: 100, maxFiles: 10 };

describe("settleWork: all or none, and the operator counts for itself (docs/operator.md#output)", () => {
  test("within the limits: kept, with the operator's own count", () => {
    const dir = procFolder({ "a.txt": "hello", "sub/b.txt": "bb" }, "kept 7 3 0\n");
    expect(settleWork(dir, LIMITS)).toEqual({ kept: true, bytes: 7, entries: 3 });
    expect(existsSync(join(dir, "work/sub/b.txt"))).toBe(true);
  });

  test("the wrapper reported too-big: not kept, and the reason names the limits", () => {
    const dir = procFolder({}, "too-big 5000 2 0\n");
    const r = settleWork(dir, LIMITS);
    expect(r).toMatchObject({ kept: false, bytes: 5000, entries: 2 });
    expect(r.reason).toContain("HTCJob.MaxOutputBytes 100");
    expect(existsSync(join(dir, "work"))).toBe(false);
  });

  test("a report that lies (kept) does not keep more than the limit: the whole folder goes", () => {
    const dir = procFolder({ "a.txt": "x".repeat(80), "b.txt": "y".repeat(80) }, "kept 1 1 0\n");
    expect(settleWork(dir, LIMITS)).toMatchObject({ kept: false, bytes: 160, entries: 2 });
    expect(existsSync(join(dir, "work"))).toBe(false);
    const many = procFolder(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, ""]))); // no report at all
    expect(settleWork(many, LIMITS)).toMatchObject({ kept: false });
    expect(existsSync(join(many, "work"))).toBe(false);
  });

  test("a symlink is counted as an entry and never followed: its target's size is not read", () => {
    const outside = join(temp(), "big");
    writeFileSync(outside, "z".repeat(1000));
    const dir = procFolder({ "a.txt": "a" });
    symlinkSync(outside, join(dir, "work/link"));
    symlinkSync(join(outside, ".."), join(dir, "work/dirlink"));
    expect(settleWork(dir, LIMITS)).toEqual({ kept: true, bytes: 1, entries: 3 });
    expect(walkWork(join(dir, "work"))!.entries.map((e) => `${e.kind} ${e.path}`)).toEqual(["file a.txt", "symlink dirlink", "symlink link"]);
  });

  test("work/ that did not come back, or is a link itself: not kept", () => {
    const dir = procFolder({});
    rmSync(join(dir, "work"), { recursive: true });
    expect(settleWork(dir, LIMITS)).toMatchObject({ kept: false, reason: expect.stringContaining("did not come back") });
    symlinkSync(temp(), join(dir, "work"));
    expect(settleWork(dir, LIMITS)).toMatchObject({ kept: false });
  });
});

describe("status and Events say when a proc's files were not kept (docs/operator.md#status)", () => {
  test("an OutputKept condition (False) and one Warning Event; none while every proc's files are kept", () => {
    const keptAll = htcjobStatus({
      generation: 1,
      procs: 1,
      cluster: 9,
      states: [{ state: "succeeded", exitCode: 0, files: { kept: true, bytes: 1, entries: 1 } }],
    });
    expect(keptAll.conditions.map((c) => c.type)).toEqual(["Submitted", "Complete", "Failed"]);
    const files = { kept: false, bytes: 5000, entries: 2, reason: "too many bytes" };
    const s = htcjobStatus({ generation: 1, procs: 2, cluster: 9, states: [{ state: "succeeded", exitCode: 0 }, { state: "succeeded", exitCode: 0, files }] });
    expect(s.conditions.find((c) => c.type === "OutputKept")).toMatchObject({
      status: "False",
      reason: "OutputNotKept",
      message: "The files of proc 9.1 were not kept: too many bytes",
    });
    expect(statusEvents(keptAll, s).filter((e) => e.reason === "OutputNotKept")).toHaveLength(1);
    expect(statusEvents(s, s)).toEqual([]);
  });
});

/** An in-memory database through the runtime adapter the operator opens its store with. */
const sqlite = () => bunRuntime.openSqlite(":memory:");

/** A store with one finished HTCJob whose proc 0 exited, its folder under `dataRoot`. */
function finished(dataRoot: string, uid: string, files?: { kept: boolean; bytes: number; entries: number; reason?: string }): HTCJobStore {
  const store = openHTCJobStore(sqlite());
  const dir = htcjobDir(dataRoot, uid);
  store.beginSubmit({ uid, namespace: "ns", name: "job", generation: 1, dir, procs: 1, spooled: false }, 1000);
  store.recordCluster(uid, 4, 1, 1001);
  store.setOutcomes(uid, [{ state: "succeeded", exitCode: 0, ...(files ? { files } : {}) }], 1002);
  mkdirSync(join(dir, "procs/0/work/sub"), { recursive: true });
  writeFileSync(join(dir, "procs/0/work/result.txt"), "42\n");
  writeFileSync(join(dir, "procs/0/work/sub/x"), "xyz");
  return store;
}

describe("htcjob logs --files / --file (docs/operator.md#logs)", () => {
  const req = (store: HTCJobStore, o: { files?: boolean; file?: string }) =>
    htcjobLogs({ store, namespace: "ns", name: "job", proc: 0, timestamps: false, ...o });

  test("lists the working directory and prints one file", () => {
    const root = temp();
    const store = finished(root, "u-1", { kept: true, bytes: 6, entries: 3 });
    expect(req(store, { files: true })).toEqual({ text: ["           3 result.txt", "         dir sub/", "           3 sub/x"].join("\n") });
    expect(req(store, { file: "result.txt" })).toEqual({ text: "42" });
    expect(req(store, { file: "sub/x" })).toEqual({ text: "xyz" });
  });

  test("a link planted in work/ is listed, never followed, and refused when read; so is a path leading out", () => {
    const root = temp();
    const store = finished(root, "u-2", { kept: true, bytes: 6, entries: 3 });
    const secret = join(temp(), "token");
    writeFileSync(secret, "the operator's token");
    const work = join(htcjobDir(root, "u-2"), "procs/0/work");
    symlinkSync(secret, join(work, "leak"));
    symlinkSync(join(secret, ".."), join(work, "dirleak"));
    const listed = req(store, { files: true });
    expect("text" in listed && listed.text).toContain("     symlink leak (not followed)");
    for (const file of ["leak", "dirleak/token", "../../../../" + secret, "sub/../../podstate/work"]) {
      const r = req(store, { file });
      expect(r).toHaveProperty("error");
      expect(JSON.stringify(r)).not.toContain("the operator's token");
    }
  });

  test("files not kept, or a proc not ended: the reason, not an empty listing", () => {
    const root = temp();
    const store = finished(root, "u-3", { kept: false, bytes: 9e9, entries: 1, reason: "above the limit" });
    expect(req(store, { files: true })).toEqual({ error: 'Cannot read the files of HTCJob "ns/job" proc 0: they were not kept: above the limit' });
  });
});

describe("retention of a deleted HTCJob's output (docs/operator.md#retention)", () => {
  const log = createLogger({ level: "error", format: "text", write: () => {} });

  test("kept while the object exists and for OutputRetentionSeconds after its delete, then folder and record go", () => {
    const root = temp();
    const store = finished(root, "u-4");
    const dir = htcjobDir(root, "u-4");
    const reap = (now: number) => reapDeleted({ store, dataRoot: root, retentionMs: 60_000, now: () => now, log });
    expect(reap(10_000_000)).toEqual([]); // finished, not deleted: stays however old
    store.markDeleted("u-4", 2_000_000);
    expect(reap(2_000_000 + 59_999)).toEqual([]);
    expect(existsSync(dir)).toBe(true);
    expect(reap(2_000_000 + 60_000)).toEqual(["u-4"]);
    expect(existsSync(dir)).toBe(false);
    expect(store.get("u-4")).toBeUndefined();
  });

  test("only the folder named by the UID under the data folder is removed, whatever the record says", () => {
    const root = temp();
    const elsewhere = temp();
    const store = openHTCJobStore(sqlite());
    store.beginSubmit({ uid: "u-5", namespace: "ns", name: "j", generation: 1, dir: elsewhere, procs: 1, spooled: false }, 1);
    store.markDeleted("u-5", 2);
    expect(reapDeleted({ store, dataRoot: root, retentionMs: 0, now: () => 3, log })).toEqual(["u-5"]);
    expect(existsSync(elsewhere)).toBe(true);
  });
});
