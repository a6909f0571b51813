// The sidecar's own overload is not HTCondor's failure (docs/status.md#the-ping): a tool call
// that timed out while the sidecar was starved of CPU leaves the streaks alone; one that timed
// out while it was not, or that HTCondor answered with an error, counts.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "../../src/config.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { blamesHTCondor, PING_ANSWER_KEEP_MS, STARVED_LATE_MS } from "../../src/core/health.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { createService } from "../../src/service/index.ts";
import { watchStarvation } from "../../src/service/starvation.ts";
import { openStore } from "../../src/store/store.ts";
import { fakeCondor } from "../helpers/fake-condor.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("blamesHTCondor (docs/status.md#the-ping)", () => {
  test.each([
    ["the tool answered with an error", { timedOut: false, starved: false }, true],
    ["the tool answered with an error while the sidecar was starved", { timedOut: false, starved: true }, true],
    ["a timeout while the sidecar ran on time", { timedOut: true, starved: false }, true],
    ["a timeout while the sidecar was starved", { timedOut: true, starved: true }, false],
  ])("%s", (_what, failure, counts) => {
    expect(blamesHTCondor(failure)).toBe(counts);
  });
});

async function setup(starved: boolean, kind: "timeout" | "unavailable") {
  const dir = mkdtempSync(join(tmpdir(), "ping-overload-"));
  dirs.push(dir);
  mkdirSync(join(dir, "pods"), { recursive: true });
  const { config } = parseConfig("PingFailureThreshold: 2\n");
  let now = Date.parse("2026-11-23T12:00:00Z");
  const condor = fakeCondor({ readSubmitFile: (p) => readFileSync(p, "utf8"), now: () => now });
  const fail = (tool: string) => Promise.reject(new SidecarError(kind, `${tool} did not answer within 20 s`));
  condor.machines = () => fail("condor_status");
  condor.query = () => fail("condor_q");
  const service = createService({
    store: openStore(bunRuntime.openSqlite(join(dir, "state.db"))),
    condor,
    config,
    planConfig: planConfig(config, false),
    dataRoot: dir,
    spool: false,
    log: memoryLogger(),
    now: () => now,
    version: "test",
    timer: () => () => {},
    starved: () => starved,
  });
  // The refresher's first pass at start finds nothing to follow and sleeps: the ping then asks condor_q itself.
  await Bun.sleep(10);
  return {
    service,
    /** Past the ping's answer cache and the schedd's once-per-10-s count. */
    later: () => void (now += Math.max(PING_ANSWER_KEEP_MS, 10_000) + 1),
  };
}

describe("timeouts while the sidecar is starved (docs/status.md#the-ping)", () => {
  test("do not fail the ping, however many", async () => {
    const s = await setup(true, "timeout");
    for (let i = 0; i < 4; i++) {
      const p = await s.service.ping();
      expect(p.healthy).toBe(true);
      expect(s.service.view().failures).toEqual({ schedd: 0, collector: 0 });
      s.later();
    }
  });

  test("count when the sidecar was not starved", async () => {
    const s = await setup(false, "timeout");
    await s.service.ping();
    expect(s.service.view().failures).toEqual({ schedd: 1, collector: 1 });
    s.later();
    expect(await s.service.ping()).toMatchObject({ healthy: false });
  });

  test("an error HTCondor answered counts even while the sidecar is starved", async () => {
    const s = await setup(true, "unavailable");
    await s.service.ping();
    expect(s.service.view().failures).toEqual({ schedd: 1, collector: 1 });
  });
});

describe("watchStarvation (docs/status.md#the-ping)", () => {
  test("notices an event loop held up longer than STARVED_LATE_MS", async () => {
    const w = watchStarvation({ now: () => Date.now(), tickMs: 50 });
    try {
      const since = Date.now();
      await Bun.sleep(120);
      const until = performance.now() + STARVED_LATE_MS + 500;
      while (performance.now() < until) {
        // hold the event loop, as a sidecar busy with its own work would
      }
      expect(w.starvedSince(since)).toBe(true);
      await Bun.sleep(120);
      expect(w.starvedSince(since)).toBe(true);
      expect(w.starvedSince(Date.now() + 1)).toBe(false);
    } finally {
      w.stop();
    }
  });
});
