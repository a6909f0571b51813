// How a mode ends (src/mode-setup.ts runMode; docs/architecture.md#layout, mode-setup.ts): a SIGTERM or SIGINT
// stops a running service gracefully, exit 0. The stop is wired before the mode starts, so a
// signal sent the moment the sidecar has logged "listening" (a supervisor's, a test's) stops it
// too, instead of killing it with the default action (exit 143).
import { expect, test } from "bun:test";
import { runMode } from "../src/mode-setup.ts";
import type { Runtime } from "../src/runtime/types.ts";

function fakeRuntime() {
  const handlers = new Map<string, () => void>();
  const exits: number[] = [];
  const runtime = {
    onSignal: (signal: string, fn: () => void) => void handlers.set(signal, fn),
    exit: (code: number) => void exits.push(code),
  } as unknown as Runtime;
  return { runtime, handlers, exits };
}

const io = { out: () => {}, err: () => {} };
const settle = () => new Promise((r) => setTimeout(r, 0));

test("a SIGTERM that arrives while the mode is still starting stops the service once it runs, exit 0", async () => {
  const { runtime, handlers, exits } = fakeRuntime();
  let started!: (o: { stop(): Promise<void> }) => void;
  let stops = 0;
  const done = runMode(runtime, io, () => new Promise((r) => (started = r)));
  await settle();
  // The service has said "listening" but its start has not returned yet.
  expect(handlers.has("SIGTERM")).toBe(true);
  handlers.get("SIGTERM")!();
  started({ stop: async () => void stops++ });
  await done;
  await settle();
  expect(stops).toBe(1);
  expect(exits).toEqual([0]);
});

test("a signal while it runs stops it once, however many arrive; a failed stop exits 1", async () => {
  const { runtime, handlers, exits } = fakeRuntime();
  let stops = 0;
  await runMode(runtime, io, async () => ({ stop: async () => void stops++ }));
  handlers.get("SIGINT")!();
  handlers.get("SIGTERM")!();
  await settle();
  expect([stops, exits]).toEqual([1, [0]]);

  const failing = fakeRuntime();
  await runMode(failing.runtime, io, async () => ({ stop: () => Promise.reject(new Error("store busy")) }));
  failing.handlers.get("SIGTERM")!();
  await settle();
  expect(failing.exits).toEqual([1]);
});

test("a mode that fails to start exits 1, and a signal then does nothing more", async () => {
  const { runtime, handlers, exits } = fakeRuntime();
  await runMode(runtime, io, () => Promise.reject(new Error("no schedd")));
  handlers.get("SIGTERM")?.();
  expect(exits).toEqual([1]);
});
