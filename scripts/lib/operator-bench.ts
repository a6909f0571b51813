/**
 * The benchmark's HTCJob operator rows (docs/performance.md#the-htcjob-operator): a real
 * etcd + kube-apiserver (test/helpers/kube.ts), minicondor, and the operator as a process of its
 * own with `--metrics-listen`, whose `htcjob_operator_api_writes_total` counts every API write.
 *
 *  1. a 100-proc HTCJob: from the POST that creates it to the first read of it whose
 *     `status.jobid` holds 100 ids (the object is read every 50 ms);
 *  2. API writes per minute at steady state, with that HTCJob's procs queued and followed;
 *  3. 1,000 HTCJobs of 10 procs each (10,000 procs): the time until every status.jobid is full,
 *     the operator's resident memory once they are in, and the API writes per minute then.
 *
 * Every proc runs `sleep 86400` on a minicondor machine of 2 slots, so two run and the rest stay
 * idle but queued and followed: the operator asks HTCondor about all of them every
 * StatusCacheSeconds, which is what it would do on a site while they wait.
 *
 * `scale` multiplies the sizes (100 procs, 1,000 HTCJobs; the 10 procs per HTCJob stay), so that a
 * quick run checks the script: `bun scripts/lib/operator-bench.ts --scale 0.05 --steady-seconds 10`.
 * Run alone it prints the rows; `npm run bench` runs it after its own rows.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Kube, kubeAvailable, startKube } from "../../test/helpers/kube.ts";
import { type BenchRow, rowsBench, rowsTable } from "./bench-kit.ts";
import { answered } from "./spool-bench.ts";
import { BINARY, BUN, cleanupHome, createHome, emulatorBin, fmtMiB, freePort, pool, readCalls, ROOT, rssKiB, SHIM } from "./kit.ts";

export interface OperatorBenchOptions {
  /** A scratch folder, removed by the caller. */
  root: string;
  /** How to start the executable: the binary, or Bun and the sources. */
  argv: string[];
  /** 1: the issue's sizes (a 100-proc HTCJob; 1,000 HTCJobs × 10 procs). */
  scale: number;
  /** Length of each steady-state window (60 s in a full run). */
  steadySeconds: number;
  /** minicondor's tools, schedd and jobs run at this niceness (kit.ts emulatorBin). */
  emulatorNice: number;
  say: (msg: string) => void;
}

const PROCS_PER_HTCJOB = 10;
const NS = "default";
const GROUP_PATH = "/apis/htc.cern.ch/v1alpha1";

interface HTCJobObj {
  metadata: { name: string; uid: string };
  status?: { jobid?: string[]; running?: number; succeeded?: number };
}

/** Installs the HTCJob CRD (deploy/htcjob-crd.yaml), waits until the API server serves it, and gives its client. */
async function htcjobApi(kube: Kube): Promise<ReturnType<typeof api>> {
  const crd = await kube.kubectl(["apply", "-f", join(ROOT, "deploy", "htcjob-crd.yaml")]);
  if (crd.code !== 0) throw new Error(`kubectl apply of the CRD failed: ${crd.stderr}`);
  await kube.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd/htcjobs.htc.cern.ch"]);
  return api(kube);
}

/** The API server, as its admin: certificate, key and CA from the test helper's files. */
function api(kube: Kube) {
  const tls = { ca: kube.caPem, cert: kube.admin.certPem, key: kube.admin.keyPem };
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const r = await fetch(`${kube.url}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      tls,
    } as RequestInit);
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  };
  return {
    create: (name: string, queue: number, source = "sleep 86400\n") =>
      call<HTCJobObj>("POST", `${GROUP_PATH}/namespaces/${NS}/htcjobs`, {
        apiVersion: "htc.cern.ch/v1alpha1",
        kind: "HTCJob",
        metadata: { name },
        spec: { queue, script: { image: "centos", command: "bash", source } },
      }),
    get: (name: string) => call<HTCJobObj>("GET", `${GROUP_PATH}/namespaces/${NS}/htcjobs/${name}`),
    list: () => call<{ items: HTCJobObj[] }>("GET", `${GROUP_PATH}/namespaces/${NS}/htcjobs`),
    delete: (name: string) => call<unknown>("DELETE", `${GROUP_PATH}/namespaces/${NS}/htcjobs/${name}`),
  };
}

interface RunningOperator {
  pid: number;
  logPath: string;
  writes(): Promise<number>;
  stop(): Promise<void>;
}

async function startOperator(o: OperatorBenchOptions, kube: Kube, home: string, dir: string, spool = false): Promise<RunningOperator> {
  const config = join(dir, "SidecarConfig.yaml");
  writeFileSync(
    config,
    [
      "DataRootFolder: ./data",
      `ContainerRuntime: ${SHIM}`,
      ...(spool ? ["Spool: always"] : []),
      `HTCJob:`,
      `  MaxQueue: ${Math.max(1000, Math.ceil(100 * o.scale))}`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const logPath = join(dir, "operator.log");
  const fd = openSync(logPath, "a");
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    MINICONDOR_HOME: home,
    MINICONDOR_ALLOW_ROOT: "1",
  };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  const proc = Bun.spawn([
    ...o.argv,
    "operator",
    "--kubeconfig",
    kube.kubeconfig("files"),
    "--config",
    config,
    "--condor-bin",
    emulatorBin(o.root, o.emulatorNice),
    "--metrics-listen",
    `127.0.0.1:${port}`,
    "--log-format",
    "text",
  ], { cwd: ROOT, env, stdin: "ignore", stdout: fd, stderr: fd });
  closeSync(fd);
  const writes = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return [...text.matchAll(/^htcjob_operator_api_writes_total(?:\{[^}]*\})? (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const deadline = Date.now() + 60_000;
  while (!/leading: watching HTCJobs/.test(readFileSync(logPath, "utf8"))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`the operator did not start leading; its log ends with:\n${readFileSync(logPath, "utf8").slice(-2000)}`);
    }
    await Bun.sleep(50);
  }
  return {
    pid: proc.pid,
    logPath,
    writes,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}

/** Waits until the writes counter has not moved for `quietMs` (the procs settled), at most `maxMs`. */
async function settle(op: RunningOperator, quietMs: number, maxMs: number): Promise<void> {
  const end = Date.now() + maxMs;
  let last = await op.writes();
  let since = Date.now();
  while (Date.now() < end && Date.now() - since < quietMs) {
    await Bun.sleep(1000);
    const now = await op.writes();
    if (now !== last) [last, since] = [now, Date.now()];
  }
}

/** API writes per minute over `seconds`, with the condor tool runs meanwhile. */
async function steady(op: RunningOperator, home: string, seconds: number): Promise<{ perMinute: number; writes: number; tools: string }> {
  const from = readCalls(home).lines;
  const w0 = await op.writes();
  await Bun.sleep(seconds * 1000);
  const writes = (await op.writes()) - w0;
  const counts = new Map<string, number>();
  for (const c of readCalls(home, from).calls) if (c.tool !== "condor_chirp") counts.set(c.tool, (counts.get(c.tool) ?? 0) + 1);
  const tools = [...counts].map(([t, n]) => `${n} ${t}`).join(", ") || "no condor tool";
  return { perMinute: (writes * 60) / seconds, writes, tools };
}

const fmtS = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

export async function operatorRows(o: OperatorBenchOptions): Promise<BenchRow[]> {
  if (!kubeAvailable) {
    return [{ row: "HTCJob operator rows", value: "skipped: no kube-apiserver (scripts/kube-apiserver.sh provides it)", target: "–" }];
  }
  const queue = Math.max(1, Math.round(100 * o.scale));
  const many = Math.max(1, Math.round(1000 * o.scale));
  const rows: BenchRow[] = [];
  o.say(`operator: starting etcd and kube-apiserver`);
  const kube = await startKube();
  const home = createHome({ cpus: 2 }, o.root);
  const dir = mkdtempSync(join(o.root, "operator-"));
  let op: RunningOperator | undefined;
  try {
    const k = await htcjobApi(kube);
    op = await startOperator(o, kube, home, dir);
    await Bun.sleep(2000);
    const idleKiB = rssKiB(op.pid);

    // 1. One HTCJob of `queue` procs: create → status.jobid full.
    o.say(`operator: one HTCJob of ${queue} procs`);
    const t0 = performance.now();
    await k.create("bench-one", queue);
    let reads = 0;
    for (;;) {
      reads++;
      const j = await k.get("bench-one");
      if ((j.status?.jobid?.length ?? 0) >= queue) break;
      if (performance.now() - t0 > 300_000) throw new Error(`HTCJob bench-one: status.jobid not full after 300 s`);
      await Bun.sleep(50);
    }
    const firstMs = performance.now() - t0;
    const submit = readCalls(home).calls.find((c) => c.tool === "condor_submit");
    rows.push({
      row: `a ${queue}-proc HTCJob: create → status.jobid holds ${queue} ids`,
      value: `${fmtS(firstMs)} (its condor_submit ${submit ? fmtS(submit.ms) : "?"} inside the emulator; ${reads} reads)`,
      target: "reported",
    });

    // 2. Steady state with those procs followed.
    await settle(op, 6000, 60_000);
    o.say(`operator: steady state for ${o.steadySeconds} s with ${queue} procs followed`);
    const s1 = await steady(op, home, o.steadySeconds);
    rows.push({
      row: `API writes per minute at steady state, ${queue} procs followed`,
      value: `${s1.perMinute.toFixed(1)} (${s1.writes} in ${o.steadySeconds} s; meanwhile ${s1.tools})`,
      target: "0",
      met: s1.writes === 0,
    });
    await k.delete("bench-one");
    for (let i = 0; i < 600; i++) {
      if ((await k.list()).items.length === 0) break;
      await Bun.sleep(500);
    }

    // 3. `many` HTCJobs of 10 procs each, created by 10 clients at once.
    o.say(`operator: ${many} HTCJobs of ${PROCS_PER_HTCJOB} procs`);
    const made = await createMany(k, many, 3_600_000);
    rows.push({
      row: `${many} HTCJobs × ${PROCS_PER_HTCJOB} procs created at once: until every status.jobid is full`,
      value: `${fmtS(made.ms)}${made.full < many ? ` (only ${made.full} full: gave up)` : ""}`,
      target: "reported",
    });
    await settle(op, 6000, 120_000);
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      const kib = rssKiB(op.pid);
      if (kib !== undefined) samples.push(kib);
      await Bun.sleep(2000);
    }
    rows.push({
      row: `resident memory with ${many} HTCJobs and ${many * PROCS_PER_HTCJOB} procs`,
      value: `${fmtMiB(Math.max(...samples))} (max of ${samples.length} samples 2 s apart; idle ${fmtMiB(idleKiB)})`,
      target: "reported",
    });
    o.say(`operator: steady state for ${o.steadySeconds} s with ${many * PROCS_PER_HTCJOB} procs followed`);
    const s2 = await steady(op, home, o.steadySeconds);
    rows.push({
      row: `API writes per minute at steady state, ${many * PROCS_PER_HTCJOB} procs followed`,
      value: `${s2.perMinute.toFixed(1)} (${s2.writes} in ${o.steadySeconds} s; meanwhile ${s2.tools})`,
      target: "0",
      met: s2.writes === 0,
    });
    return rows;
  } finally {
    await op?.stop();
    await kube.stop();
    cleanupHome(home, true);
  }
}

/** Creates `many` HTCJobs of 10 procs, 10 clients at once; how long until every status.jobid is full, and how many are. */
async function createMany(k: ReturnType<typeof api>, many: number, limitMs: number): Promise<{ ms: number; full: number }> {
  const t0 = performance.now();
  await pool(Array.from({ length: many }, (_, i) => `bench-${i}`), 10, (name) => k.create(name, PROCS_PER_HTCJOB));
  let full = 0;
  for (;;) {
    const items = (await k.list()).items;
    full = items.filter((j) => (j.status?.jobid?.length ?? 0) === PROCS_PER_HTCJOB).length;
    if (full >= many || performance.now() - t0 > limitMs) break;
    await Bun.sleep(2000);
  }
  return { ms: performance.now() - t0, full };
}

/**
 * The spooled rows (`Spool: always`, as the operator's Deployment submits to a remote schedd):
 * `many` HTCJobs of 10 procs queued and followed; the job ads the schedd sent in a quiet window
 * (from minicondor's answers.log: every condor_q and condor_history answer, a -totals summary
 * counting as one); then a proc that was waiting for a file finishes, and the time from the
 * file's creation to the first read (every 50 ms) of its HTCJob whose status.succeeded is 1.
 * The proc ends within milliseconds of the file (it looks every 0.1 s); its output comes back
 * by condor_transfer_data before the operator counts it.
 */
export async function operatorSpoolRows(o: OperatorBenchOptions): Promise<BenchRow[]> {
  if (!kubeAvailable) {
    return [{ row: "spooled HTCJob operator rows", value: "skipped: no kube-apiserver (scripts/kube-apiserver.sh provides it)", target: "–" }];
  }
  const many = Math.max(1, Math.round(1000 * o.scale));
  const rows: BenchRow[] = [];
  o.say(`operator (spooled): starting etcd and kube-apiserver`);
  const kube = await startKube();
  const home = createHome({ cpus: 2 }, o.root);
  const dir = mkdtempSync(join(o.root, "operator-spool-"));
  // Not under /tmp: a container sees its sandbox's tmp there (wrapper-lib.bash prepare_binds), and the proc looks for this file.
  const flagDir = mkdtempSync("/var/tmp/operator-spool-");
  const flag = join(flagDir, "finish-now");
  let op: RunningOperator | undefined;
  try {
    const k = await htcjobApi(kube);
    op = await startOperator(o, kube, home, dir, true);
    // The proc that will finish: first, so that it has one of the two slots.
    await k.create("bench-finisher", 1, `while [ ! -e ${flag} ]; do sleep 0.1; done\necho done\n`);
    for (const t0 = Date.now(); (await k.get("bench-finisher")).status?.running !== 1;) {
      if (Date.now() - t0 > 120_000) throw new Error("the finisher HTCJob did not run within 120 s");
      await Bun.sleep(200);
    }
    o.say(`operator (spooled): ${many} HTCJobs of ${PROCS_PER_HTCJOB} procs`);
    const made = await createMany(k, many, 3_600_000);
    rows.push({
      row: `spooled: ${many} HTCJobs × ${PROCS_PER_HTCJOB} procs created at once: until every status.jobid is full`,
      value: `${fmtS(made.ms)}${made.full < many ? ` (only ${made.full} full: gave up)` : ""}`,
      target: "reported",
    });
    await settle(op, 6000, 120_000);
    o.say(`operator (spooled): a quiet window of ${o.steadySeconds} s with ${many * PROCS_PER_HTCJOB + 1} procs followed`);
    const from = answered(home).lines;
    const s = await steady(op, home, o.steadySeconds);
    const ads = answered(home, from);
    rows.push({
      row: `spooled: ads read per minute, ${many * PROCS_PER_HTCJOB + 1} procs that do not change`,
      value: `${((ads.ads * 60) / o.steadySeconds).toFixed(0)} (${ads.ads} ads in ${ads.lines - from} answers in ${o.steadySeconds} s; meanwhile ${s.tools})`,
      target: "reported",
    });
    writeFileSync(flag, "");
    const t0 = performance.now();
    let reads = 0;
    for (;;) {
      reads++;
      if ((await k.get("bench-finisher")).status?.succeeded === 1) break;
      if (performance.now() - t0 > 120_000) throw new Error("the finisher's status.succeeded did not change within 120 s");
      await Bun.sleep(50);
    }
    rows.push({
      row: "spooled: a proc finishes → its HTCJob's status.succeeded is 1",
      value: `${fmtS(performance.now() - t0)} (${reads} reads 50 ms apart)`,
      target: "reported",
    });
    return rows;
  } finally {
    await op?.stop();
    await kube.stop();
    cleanupHome(home, true);
    rmSync(flagDir, { recursive: true, force: true });
  }
}

export const operatorSpoolBench = rowsBench("operator-spool", { "operator-spool-scale": { type: "string" } }, (b) => {
  const scale = b.number("operator-spool-scale", b.quick ? 0.05 : 1);
  return {
    title: "The HTCJob operator on a spooled schedd (`Spool: always`): a kube-apiserver of its own, minicondor with 2 slots, every proc but one `sleep 86400`",
    run: () => operatorSpoolRows({ root: b.root, argv: [b.binary], scale, steadySeconds: b.quick ? 10 : 60, emulatorNice: b.emulatorNice, say: b.say }),
  };
});

export const operatorBench = rowsBench("operator", { "operator-scale": { type: "string" } }, (b) => {
  const scale = b.number("operator-scale", b.quick ? 0.05 : 1);
  return {
    title: "The HTCJob operator: a kube-apiserver of its own, minicondor with 2 slots, every proc `sleep 86400`",
    run: () => operatorRows({ root: b.root, argv: [b.binary], scale, steadySeconds: b.quick ? 10 : 60, emulatorNice: b.emulatorNice, say: b.say }),
  };
});

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      scale: { type: "string", default: "1" },
      "steady-seconds": { type: "string", default: "60" },
      "emulator-nice": { type: "string", default: "10" },
      binary: { type: "string" },
      spooled: { type: "boolean", default: false },
    },
    strict: true,
  });
  const scale = Number(values.scale);
  const steadySeconds = Number(values["steady-seconds"]);
  if (!(scale > 0) || !(steadySeconds > 0)) {
    console.error("operator-bench: --scale and --steady-seconds take positive numbers");
    process.exit(2);
  }
  // The binary when it is built, else the sources on Bun (the same code, a slower start).
  const binary = values.binary ?? (existsSync(BINARY) ? BINARY : undefined);
  const root = mkdtempSync(join(tmpdir(), "operator-bench-"));
  const t0 = performance.now();
  try {
    const rows = await (values.spooled ? operatorSpoolRows : operatorRows)({
      root,
      argv: binary ? [binary] : [BUN, join(ROOT, "src", "main.bun.ts")],
      scale,
      steadySeconds,
      emulatorNice: Number(values["emulator-nice"]),
      say: (m) => process.stderr.write(`[operator-bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${m}\n`),
    });
    console.log(`HTCJob operator (${binary ?? "sources on Bun"}), scale ${scale}`);
    console.log(rowsTable(rows));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
