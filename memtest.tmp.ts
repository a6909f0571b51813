import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "./src/config.ts";
import { memoryLogger } from "./src/logger.ts";
import { bunRuntime } from "./src/runtime/bun.ts";
import { createService } from "./src/service/index.ts";
import { openStore } from "./src/store/store.ts";
import { parseJsonAds, splitJsonAds } from "./src/condor/parse.ts";
const dir = mkdtempSync(join(tmpdir(), "mem-")); mkdirSync(join(dir, "pods"));
const store = openStore(bunRuntime.openSqlite(join(dir, "state.db")));
const N = 5000;
for (let i = 0; i < N; i++) {
  const uid = `uid-${i}`;
  store.accept({ uid, name: `p${i}`, namespace: "default", dir: join(dir, "pods", uid), spooled: false, containers: [{ name: "main", init: false, image: "docker://busybox" }], secrets: [], createdAt: 1 });
  store.recordJob(uid, 1000 + i, 0, 2);
}
const ads = Array.from({ length: N }, (_, i) => ({ ClusterId: 1000 + i, ProcId: 0, JobStatus: 2, InterLinkPodUID: `uid-${i}`, InterLinkSidecarId: "htcondor-sidecar", HoldReasonCode: null, HoldReasonSubCode: null, HoldReason: null, ExitCode: null, ExitBySignal: null, ExitSignal: null, RemoveReason: null, NumJobStarts: 1, EnteredCurrentStatus: 1795469517, InterLinkCtr0State: "1 running - - 1795469517 - 1 0 - - - - -" }));
const text = JSON.stringify(ads, null, 2);
const condor: any = {
  query: async () => parseJsonAds(text.slice()),
  queryTexts: async () => splitJsonAds(`${text}\n`),
  history: async () => [], remove: async () => new Map(), transferData: async () => {}, machines: async () => [], submit: async () => [], tail: async () => ({}),
};
const { config } = parseConfig("");
const svc = createService({ store, condor, config, planConfig: planConfig(config, false), dataRoot: dir, spool: false, log: memoryLogger(), now: () => Date.now(), version: "t", timer: () => () => {} });
const rss = () => (bunRuntime.rss() / 1048576).toFixed(1);
console.log("start", rss());
for (let i = 0; i < 150; i++) { await svc.refresh(); if (i % 30 === 0) console.log(i, rss()); }
const t0 = performance.now(); await svc.refresh(); console.log("one refresh ms", (performance.now() - t0).toFixed(1), "rss", rss());
const st = performance.now(); await svc.status([{ uid: "uid-7", name: "", namespace: "" }]); console.log("one status ms", (performance.now() - st).toFixed(2));
{
  let t = performance.now(); const a = parseJsonAds(text.slice()); console.log("parse ms", (performance.now() - t).toFixed(1));
  t = performance.now(); const l = store.liveJobs(); console.log("liveJobs ms", (performance.now() - t).toFixed(1), l.length);
  t = performance.now(); for (let i = 0; i < 10; i++) await svc.status([{ uid: "uid-7", name: "", namespace: "" }]); console.log("10 status ms", (performance.now() - t).toFixed(2));
}
{
  const { heapStats } = await import("bun:jsc");
  console.log("heap before gc", JSON.stringify({ heap: (heapStats().heapSize/1048576).toFixed(1), cap: (heapStats().heapCapacity/1048576).toFixed(1) }));
  Bun.gc(true);
  console.log("after gc rss", rss(), "heap", (heapStats().heapSize/1048576).toFixed(1));
  for (let i = 0; i < 300; i++) await svc.refresh();
  console.log("after 300 more rss", rss(), "heap", (heapStats().heapSize/1048576).toFixed(1));
}
