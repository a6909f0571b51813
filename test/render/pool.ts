/**
 * The one pool of running wrappers for the test files that run generated wrappers
 * (run.test.ts, isolation.test.ts, start-error.test.ts): at most MAX_RUNNING at a time across
 * them, also when `bun test --parallel` runs them in different processes. Each wrapper is a bash
 * supervisor per container plus shim processes polling every 0.2 s: more of them at once on two
 * cores starve the timings the tests check.
 *
 * Across processes the slots are directories made with mkdir (atomic) in a folder of this test
 * run (its coordinator's PID with --parallel, else this process's), each with its owner's PID
 * inside: a slot whose owner has died is free again. The waits back off from 10 ms to 100 ms.
 */
import { mkdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAX_RUNNING = 3;
const RUN = process.env.BUN_TEST_WORKER_ID ? process.ppid : process.pid;
const SLOTS = join(tmpdir(), `htcondor-sidecar-wrapper-slots-${RUN}`);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Takes a free slot, or frees one whose owner is gone and takes it; undefined when all are busy. */
function tryTake(): string | undefined {
  mkdirSync(SLOTS, { recursive: true });
  for (let i = 0; i < MAX_RUNNING; i++) {
    const slot = join(SLOTS, String(i));
    try {
      mkdirSync(slot);
      writeFileSync(join(slot, "pid"), String(process.pid));
      return slot;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return undefined; // the folder went with the last process out: try again
      if (code !== "EEXIST") throw err;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(slot, "pid"), "utf8"));
    } catch {
      // being taken (no pid yet), or just freed
    }
    // A slot with no owner written for a minute was left by a process killed between mkdir and write.
    const orphan = Number.isNaN(owner) && Date.now() - (statSafe(slot) ?? Date.now()) > 60_000;
    if ((!Number.isNaN(owner) && !alive(owner)) || orphan) rmSync(slot, { recursive: true, force: true });
  }
  return undefined;
}
const statSafe = (p: string) => {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return undefined;
  }
};

/**
 * Removes the folder once this process has nothing queued (rmdir fails while another process of the
 * run holds a slot): bun test runs no exit handler, so the last one out cleans up as it goes.
 */
function tidy(): void {
  if (pending > 0) return;
  try {
    rmdirSync(SLOTS);
  } catch {
    // a slot is taken
  }
}

/** Runs fn once a slot is free (in the order of the calls within this process); frees the slot when fn settles. */
let queue: Promise<unknown> = Promise.resolve();
let pending = 0;
export function slot<T>(fn: () => Promise<T>): Promise<T> {
  pending++;
  // Waiters take slots one at a time, in call order: a scenario queued first starts first.
  const taken = queue.then(async () => {
    let pause = 10;
    for (;;) {
      const s = tryTake();
      if (s) return s;
      await Bun.sleep(pause);
      pause = Math.min(2 * pause, 100);
    }
  });
  queue = taken;
  return taken.then(async (s) => {
    try {
      return await fn();
    } finally {
      rmSync(s, { recursive: true, force: true });
      pending--;
      tidy();
    }
  });
}
