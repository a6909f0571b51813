// What a delete leaves of a pod folder (docs/logs.md#the-wrappers-log): the wrapper's log and
// nothing else, and only when it is a regular file of the folder. The folder is the job's to
// write (docs/threat-model.md#2-the-sidecar-follows-a-link-the-job-left-in-its-pod-folder).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holdsOnlyKeptLog, KEPT_LOG_MAX, removePodDirKeepingLog, WRAPPER_LOG } from "../../src/store/files.ts";

const root = mkdtempSync(join(tmpdir(), "kept-log-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A pod folder as a finished job leaves it, with a secret file and an env file. */
function podFolder(log?: (dir: string) => void): string {
  const dir = join(root, "pods", `uid-${++n}`);
  mkdirSync(join(dir, "env"), { recursive: true });
  mkdirSync(join(dir, "volumes/secret"), { recursive: true });
  mkdirSync(join(dir, "podstate"), { recursive: true });
  writeFileSync(join(dir, "job.sh"), "#!/bin/bash\n");
  writeFileSync(join(dir, "env/c.main.env"), "PASSWORD=hunter2\0");
  writeFileSync(join(dir, "volumes/secret/pw"), "hunter2");
  writeFileSync(join(dir, "podstate/c.main"), "1 terminated StartError 1 - - 0 0 - - - - -\n");
  writeFileSync(join(dir, "c.main.log"), "");
  log?.(dir);
  return dir;
}

/** Every path under a folder, relative, symlinks not followed. */
function tree(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

const SECRETS = ["env/c.main.env", "volumes/secret/pw"];

describe("removePodDirKeepingLog", () => {
  test("a regular wrapper.log is kept at its place, 0600 in 0700 folders; nothing else is", () => {
    const dir = podFolder((d) => writeFileSync(join(d, WRAPPER_LOG), "line 1\nFATAL:   could not open image\n"));
    expect(removePodDirKeepingLog(dir, SECRETS)).toEqual({ kept: true });
    expect(tree(dir)).toEqual(["podstate", "podstate/wrapper.log"]);
    expect(readFileSync(join(dir, WRAPPER_LOG), "utf8")).toBe("line 1\nFATAL:   could not open image\n");
    expect(statSync(join(dir, WRAPPER_LOG)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "podstate")).mode & 0o777).toBe(0o700);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(holdsOnlyKeptLog(dir)).toBe(true);
  });

  test("no wrapper.log: the folder goes, nothing is kept, no complaint", () => {
    const dir = podFolder();
    expect(removePodDirKeepingLog(dir, SECRETS)).toEqual({ kept: false, problem: undefined });
    expect(existsSync(dir)).toBe(false);
  });

  test("a log larger than the bound keeps its end, from the start of a line", () => {
    const line = (i: number) => `${String(i).padStart(8, "0")} ${"x".repeat(90)}\n`;
    const count = Math.ceil((KEPT_LOG_MAX * 1.5) / line(0).length);
    const text = Array.from({ length: count }, (_, i) => line(i)).join("");
    const dir = podFolder((d) => writeFileSync(join(d, WRAPPER_LOG), text));
    expect(removePodDirKeepingLog(dir, SECRETS).kept).toBe(true);
    const kept = readFileSync(join(dir, WRAPPER_LOG), "utf8");
    expect(kept.length).toBeLessThanOrEqual(KEPT_LOG_MAX);
    expect(kept.length).toBeGreaterThan(KEPT_LOG_MAX - line(0).length);
    expect(text.endsWith(kept)).toBe(true);
    expect(kept.startsWith(line(count - kept.split("\n").length + 1))).toBe(true);
  });

  // Each of these would let a job make the sidecar keep (copy) a file of the submit host, or keep
  // a folder entry of the job's making.
  const hostile: [string, (dir: string, outside: string) => void][] = [
    ["a symlink to a sidecar file", (d, o) => symlinkSync(join(o, "state.db"), join(d, WRAPPER_LOG))],
    ["a hard link to a sidecar file", (d, o) => linkSync(join(o, "state.db"), join(d, WRAPPER_LOG))],
    ["a FIFO (a read would block)", (d) => Bun.spawnSync(["mkfifo", join(d, WRAPPER_LOG)])],
    ["a folder", (d) => mkdirSync(join(d, WRAPPER_LOG))],
    ["podstate a symlink to a folder outside", (d, o) => {
      rmSync(join(d, "podstate"), { recursive: true });
      mkdirSync(join(o, "podstate"));
      writeFileSync(join(o, "podstate/wrapper.log"), "outside");
      symlinkSync(join(o, "podstate"), join(d, "podstate"));
    }],
  ];
  test.each(hostile)("wrapper.log as %s: nothing is kept, the folder goes, the target is untouched", (_what, plant) => {
    const outside = mkdtempSync(join(root, "outside-"));
    writeFileSync(join(outside, "state.db"), "the sidecar's");
    const dir = podFolder((d) => plant(d, outside));
    const before = tree(outside);
    const r = removePodDirKeepingLog(dir, SECRETS);
    expect(r.kept).toBe(false);
    expect(r.problem).toContain("podstate/wrapper.log");
    expect(existsSync(dir)).toBe(false);
    expect(tree(outside)).toEqual(before);
    expect(readFileSync(join(outside, "state.db"), "utf8")).toBe("the sidecar's");
  });
});

describe("holdsOnlyKeptLog", () => {
  test("a live pod's folder, an empty one, or one with more than the log is not a kept log", () => {
    expect(holdsOnlyKeptLog(podFolder((d) => writeFileSync(join(d, WRAPPER_LOG), "x")))).toBe(false);
    const empty = join(root, "empty");
    mkdirSync(empty);
    expect(holdsOnlyKeptLog(empty)).toBe(false);
    const extra = join(root, "extra");
    mkdirSync(join(extra, "podstate"), { recursive: true });
    writeFileSync(join(extra, WRAPPER_LOG), "x");
    writeFileSync(join(extra, "podstate/c.main"), "x");
    expect(holdsOnlyKeptLog(extra)).toBe(false);
    expect(holdsOnlyKeptLog(join(root, "missing"))).toBe(false);
  });
});
