/**
 * Start-up and memory (docs/performance.md#what-is-measured-and-the-targets): spawn → first
 * successful ping on an empty store, several runs per runtime, and the resident memory once idle.
 * The memory with every pod tracked comes from the /status rows (status-bench.ts).
 */
import { join } from "node:path";
import { type Flavour, fmtMiB, fmtMs, median, rssKiB, startSidecar, table } from "./kit.ts";

export interface StartupResult {
  flavour: Flavour;
  runs: number[];
  medianMs: number;
  rssIdleKiB?: number;
}

export interface MemoryResult {
  flavour: Flavour;
  idleKiB?: number;
  maxPods: number;
  withMaxPodsKiB?: number;
}

export async function measureStartup(flavour: Flavour, root: string, home: string, runs: number, binary: string): Promise<StartupResult> {
  const times: number[] = [];
  let rssIdle: number | undefined;
  if (flavour === "deno") {
    // The first Deno run fills its module cache (transpiling the sources): not timed.
    const warm = await startSidecar({ flavour, dir: join(root, "startup-deno-warm"), home, binary });
    await warm.stop();
  }
  for (let i = 0; i < runs; i++) {
    const sc = await startSidecar({ flavour, dir: join(root, `startup-${flavour}-${i}`), home, binary });
    times.push(sc.startupMs);
    if (i === runs - 1) {
      await Bun.sleep(1000);
      rssIdle = rssKiB(sc.pid);
    }
    await sc.stop();
  }
  return { flavour, runs: times, medianMs: median(times)!, rssIdleKiB: rssIdle };
}

/** The "Start-up and memory" table. */
export function startupLines(
  startup: readonly StartupResult[],
  memory: readonly MemoryResult[],
  flavours: Flavour[],
  startupRuns: number,
  maxLevel: number,
): string[] {
  const s = (f: Flavour) => startup.find((x) => x.flavour === f);
  const m = (f: Flavour) => memory.find((x) => x.flavour === f);
  return [
    "Start-up and memory",
    table(
      ["", ...flavours, "target"],
      [
        [`start → first ping 200 (median of ${startupRuns}, empty store)`, ...flavours.map((f) => fmtMs(s(f)?.medianMs)), "< 150 ms"],
        [`  min … max`, ...flavours.map((f) => (s(f) ? `${fmtMs(Math.min(...s(f)!.runs))} … ${fmtMs(Math.max(...s(f)!.runs))}` : "–")), ""],
        ["resident memory idle (VmRSS)", ...flavours.map((f) => fmtMiB(m(f)?.idleKiB)), ""],
        [
          `resident memory with ${maxLevel} pods tracked`,
          ...flavours.map((f) => fmtMiB(m(f)?.withMaxPodsKiB)),
          maxLevel >= 5000 ? "< 80 MiB (5000 pods)" : "< 80 MiB at 5000 pods",
        ],
      ],
    ),
  ];
}
