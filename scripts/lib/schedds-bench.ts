/**
 * The benchmark's rows for several schedds (docs/schedds.md): a burst of creates over
 * 1, 2 and 3 schedds, status with many pods over 3 schedds, and how soon creates go elsewhere once
 * a schedd stops. Each measurement runs on a minicondor pool of its own (one home, its other
 * schedds under it: test/minicondor/README.md#several-schedds) and a sidecar of its own.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startSchedd, stopSchedd } from "../../test/minicondor/src/testkit.ts";
import { type BenchRow, rowsBench } from "./bench-kit.ts";
import { cleanupHome, createHome, emulatorBin, type Flavour, podUid, type Reply, type Running, shPod, sorted, startSidecar } from "./kit.ts";

export interface ScheddsOptions {
  root: string;
  flavour: Flavour;
  binary: string;
  /** Creates in the burst rows (2,000 for the rows). */
  creates: number;
  /** Pods followed in the status row (10,000 for the row). */
  pods: number;
  emulatorNice: number;
  say: (msg: string) => void;
}

const OTHERS = ["second", "third"];
const HOST = "localhost";
const nameOf = (i: number) => (i === 0 ? HOST : `${OTHERS[i - 1]}@${HOST}`);
const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);
const failed = (): Reply => ({ status: 0, body: "", ms: 0, start: 0, end: 0 });

/** A pool of `n` schedds and a sidecar that lists them all (Spool never: each followed through its event log). */
async function pool(o: ScheddsOptions, n: number): Promise<{ home: string; s: Running; done(): Promise<void> }> {
  const home = createHome({ host: HOST, schedds: OTHERS.slice(0, n - 1), cpus: 4, memory: 64 * 1024 }, o.root);
  const dir = mkdtempSync(join(o.root, "schedds-"));
  const config = n === 1 ? [] : ["Spool: never", "Schedds:", ...Array.from({ length: n }, (_, i) => `  - Name: "${nameOf(i)}"`)];
  const s = await startSidecar({
    flavour: o.flavour,
    dir,
    home,
    binary: o.binary,
    config: n === 1 ? ["Spool: never"] : config,
    condorBin: emulatorBin(o.root, o.emulatorNice),
  });
  return {
    home,
    s,
    async done() {
      await s.stop();
      cleanupHome(home, true);
    },
  };
}

/** The schedd a PodJID names; the PodJID of a job of the first schedd (DataRootFolder) names none (docs/schedds.md#job-ids). */
const scheddOf = (jid: string) => (jid.includes("#") ? jid.slice(0, jid.lastIndexOf("#")) : HOST);
const jidOf = (r: Reply) => {
  try {
    return String(JSON.parse(r.body).PodJID ?? "");
  } catch {
    return "";
  }
};

async function burstRow(o: ScheddsOptions, n: number, runId: number): Promise<BenchRow> {
  o.say(`schedds: ${o.creates} concurrent creates over ${n} schedd(s)`);
  const p = await pool(o, n);
  try {
    const pods = Array.from({ length: o.creates }, (_, i) => shPod(`sb-${n}-${i}`, podUid(runId), "sleep 86400"));
    const t0 = performance.now();
    const replies = await Promise.all(pods.map((q) => p.s.client.create(q).catch(failed)));
    const wallMs = performance.now() - t0;
    const errors = replies.filter((r) => r.status !== 200).length;
    const per = new Map<string, number>();
    for (const r of replies) if (r.status === 200) per.set(scheddOf(jidOf(r)), (per.get(scheddOf(jidOf(r))) ?? 0) + 1);
    const spread = [...per].map(([k, v]) => `${k} ${v}`).join(", ");
    o.say(`  ${fmt(wallMs)}, ${errors} errors (${spread})`);
    return {
      row: `${o.creates} concurrent creates over ${n} schedd(s): time until all answered`,
      value: `${fmt(wallMs)} (${spread}; ${errors} errors)`,
      target: n === 1 ? "reported (the one-schedd baseline)" : "faster than over one schedd, an even spread",
      met: errors === 0 ? undefined : false,
    };
  } finally {
    await p.done();
  }
}

async function statusRow(o: ScheddsOptions, runId: number): Promise<BenchRow> {
  o.say(`schedds: status with ${o.pods} pods over 3 schedds`);
  const p = await pool(o, 3);
  try {
    const pods = Array.from({ length: o.pods }, (_, i) => shPod(`ss-${i}`, podUid(runId), "sleep 86400"));
    for (let i = 0; i < pods.length; i += 1000) await Promise.all(pods.slice(i, i + 1000).map((q) => p.s.client.create(q).catch(failed)));
    const refs = pods.map((q) => q.pod);
    const times: number[] = [];
    for (let i = 0; i < 50; i++) times.push((await p.s.client.call("GET", "/status", refs, 120_000)).ms);
    const s = sorted(times);
    const p99 = s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]!;
    o.say(`  p99 ${fmt(p99)}, p50 ${fmt(s[Math.floor(s.length / 2)]!)}`);
    return {
      row: `GET /status of ${o.pods} pods over 3 schedds: p99 of 50 calls`,
      value: `${fmt(p99)} (p50 ${fmt(s[Math.floor(s.length / 2)]!)})`,
      target: "as with one schedd (docs/performance.md)",
    };
  } finally {
    await p.done();
  }
}

/** Creates one after another; the second schedd stops after the first few: when the next create answers, and where. */
async function failoverRow(o: ScheddsOptions, runId: number): Promise<BenchRow> {
  o.say("schedds: stopping a schedd while creates arrive one after another");
  const p = await pool(o, 3);
  try {
    const send = (i: number) => p.s.client.create(shPod(`sf-${i}`, podUid(runId), "sleep 86400")).catch(failed);
    for (let i = 0; i < 6; i++) await send(i);
    const submitsBefore = readFileSync(join(p.home, "schedds", "second", "calls.log"), "utf8").split("\n").filter((l) => / condor_submit /.test(l)).length;
    const stoppedAt = performance.now();
    stopSchedd(p.home, "second");
    const after: { r: Reply; at: number }[] = [];
    for (let i = 0; i < 12; i++) after.push({ r: await send(100 + i), at: performance.now() - stoppedAt });
    startSchedd(p.home, "second");
    const errors = after.filter((a) => a.r.status !== 200).length;
    const onStopped = after.filter((a) => scheddOf(jidOf(a.r)) === nameOf(1)).length;
    const tried = readFileSync(join(p.home, "schedds", "second", "calls.log"), "utf8").split("\n").filter((l) => / condor_submit /.test(l)).length -
      submitsBefore;
    const first = after[0]!;
    o.say(`  first create after the stop answered ${first.r.status} in ${fmt(first.at)}; ${errors} errors; ${tried} submit(s) tried on the stopped schedd`);
    return {
      row: "a schedd stopped: time until the first create after the stop answered (elsewhere)",
      value: `${fmt(first.at)} (${first.r.status}, on ${
        scheddOf(jidOf(first.r))
      }; of 12 creates after the stop: ${errors} errors, ${onStopped} on the stopped schedd, ${tried} condor_submit tried there)`,
      target: "the first create after the stop, none failed",
      met: first.r.status === 200 && errors === 0 && onStopped === 0,
    };
  } finally {
    await p.done();
  }
}

export async function scheddsRows(o: ScheddsOptions): Promise<BenchRow[]> {
  const runId = Math.floor(Math.random() * 0xffffffff);
  const rows: BenchRow[] = [];
  for (const n of [1, 2, 3]) rows.push(await burstRow(o, n, runId));
  rows.push(await statusRow(o, runId));
  rows.push(await failoverRow(o, runId));
  return rows;
}

export const scheddsBench = rowsBench("schedds", { "schedds-creates": { type: "string" }, "schedds-pods": { type: "string" } }, (b) => {
  const creates = Math.max(1, Math.floor(b.number("schedds-creates", b.quick ? 50 : 2000)));
  const pods = Math.max(1, Math.floor(b.number("schedds-pods", b.quick ? 100 : 10_000)));
  return {
    title:
      "Several schedds (docs/schedds.md): creates over 1, 2 and 3 schedds, status over 3, a schedd stopped; each row on a minicondor pool and a sidecar of its own",
    run: () => scheddsRows({ root: b.root, flavour: "binary", binary: b.binary, creates, pods, emulatorNice: b.emulatorNice, say: b.say }),
  };
});
