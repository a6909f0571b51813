/**
 * What following idle pods costs in the JavaScript heap, per pod and per structure
 * (docs/performance.md#memory-per-followed-pod): the store's followed jobs, then the queue's view
 * after one full condor_q, then after a second one (what a long-running sidecar keeps).
 *
 *   bun scripts/heap-ledger.ts [--pods 10000]
 *
 * Each step runs in a process of its own (a collection cannot be trusted to free what an earlier
 * step made), on a store of `--pods` records in a temporary folder and the real queue view, whose
 * condor_q answers the same `-json` text for every job (the attributes of an idle job). The
 * numbers are the heap after full collections: JavaScript cells, and the memory the heap counts
 * outside them (ArrayBuffers, string contents). Not a benchmark: the same on every machine.
 */
import { heapStats } from "bun:jsc";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sliceJsonAds } from "../src/condor/parse.ts";
import type { Condor } from "../src/condor/tools.ts";
import { bunRuntime } from "../src/runtime/bun.ts";
import { createQueueView } from "../src/service/queue.ts";
import { openStore } from "../src/store/store.ts";

const STEPS = [
  "a store of followed pods, nothing read",
  "the followed jobs read from the store",
  "the view after one full condor_q",
  "the view after a second one",
];

const { values } = parseArgs({ options: { pods: { type: "string", default: "10000" }, step: { type: "string" } } });
const pods = Math.max(1, Number(values.pods));

if (values.step === undefined) {
  const at = STEPS.map((_, step) => {
    const p = Bun.spawnSync([process.execPath, import.meta.path, "--pods", String(pods), "--step", String(step)], { stderr: "inherit" });
    return JSON.parse(p.stdout.toString()) as { cells: number; extra: number; adBytes: number };
  });
  console.log(`${pods} followed pods, condor_q answers ${at[0]!.adBytes.toFixed(0)} bytes per ad; per pod, cumulative:`);
  for (const [i, s] of at.entries()) {
    if (i === 0) continue;
    const per = (v: number, base: number) => ((v - base) / pods).toFixed(0).padStart(5);
    console.log(`  ${STEPS[i]!.padEnd(40)} cells ${per(s.cells, at[0]!.cells)} B, outside cells ${per(s.extra, at[0]!.extra)} B`);
  }
} else {
  const step = Number(values.step);
  const dir = mkdtempSync(join(tmpdir(), "heap-ledger-"));
  try {
    const store = openStore(bunRuntime.openSqlite(join(dir, "state.db")));
    const uid = (i: number) => `${i.toString(16).padStart(8, "0")}-1234-4a5b-9c8d-0123456789ab`;
    const log = "20261128T154300Z-000.log";
    store.addEventLog(log, 0);
    for (let i = 0; i < pods; i++) {
      const rec = { uid: uid(i), namespace: "bench", name: `follow-${i}`, dir: `/data/pods/bench/follow-${i}`, spooled: false, secrets: [], createdAt: 1 };
      store.accept({ ...rec, containers: [{ name: "main", init: false, image: "docker://busybox:1.36" }], eventLog: log });
      store.recordJob(uid(i), 100 + Math.floor(i / 170), i % 170, 2);
    }
    const sidecarId = "htcondor-sidecar-0123456789abcdef";
    const ads = Array.from({ length: pods }, (_, i) => ({
      ClusterId: 100 + Math.floor(i / 170),
      EnteredCurrentStatus: 1795880000,
      InterLinkPodUID: uid(i),
      InterLinkSidecarId: sidecarId,
      JobStatus: 1,
      NumJobStarts: 0,
      ProcId: i % 170,
    }));
    const answer = new TextEncoder().encode(`[\n${ads.map((a) => JSON.stringify(a, null, 2)).join("\n,\n")}\n]\n`);
    // Read into the buffer it is given, grown as the runtime adapter grows one (spawn-util.ts room()).
    const querySlices = ({ into }: { into: Uint8Array }) => {
      const buf = into.byteLength >= answer.byteLength ? into : new Uint8Array(answer.byteLength + (answer.byteLength >> 2));
      buf.set(answer);
      return Promise.resolve(sliceJsonAds(buf.subarray(0, answer.byteLength)));
    };
    const view = createQueueView({
      store,
      condor: { querySlices, query: () => Promise.resolve([]) } as unknown as Condor,
      sidecarId,
      config: { StatusCacheSeconds: 2, ReconcileMinutes: 5 },
      now: () => Date.now(),
      log: { warn() {}, info() {} },
      timer: () => () => {},
    });
    view.polled = (l) => l === undefined;
    if (step >= 1) view.follows("0.0");
    for (let k = 2; k <= step; k++) await view.refreshNow();
    for (let i = 0; i < 4; i++) {
      Bun.gc(true);
      await Bun.sleep(10);
    }
    const h = heapStats();
    // `answer` is kept in every step alike, so it cancels out.
    console.log(JSON.stringify({ cells: h.heapSize - h.extraMemorySize, extra: h.extraMemorySize, adBytes: answer.byteLength / pods }));
    await view.stop();
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
