// condor_rm / condor_hold / condor_release, condor_transfer_data, condor_tail. spec: htcondor-cli §4, §5.2, §5.3; observed §7/§8
import * as fs from "node:fs";
import * as path from "node:path";
import { Ad, evaluate, isTrue, parse, type Node } from "./classad.ts";
import {
  allJobs, bumpGen, err, getJob, getRun, isOpt, killGroup, loadConfig, nowSec, openDb, out, ownerName, putJob, setStatus,
  toHistory, tx, PLATFORM, VERSION,
} from "./common.ts";
import { ensureSchedd, finalizeRemoved } from "./schedd.ts";
import { ulog } from "./userlog.ts";
import { copyTo, parseRemaps } from "./files.ts";
import { acceptableSchedd } from "./submit.ts";

type Mode = "rm" | "hold" | "release";
const VERB: Record<Mode, { past: string; marked: string; find: string }> = {
  rm: { past: "marked for removal", marked: "have been marked for removal", find: "remove" },
  hold: { past: "held", marked: "have been held", find: "hold" },
  release: { past: "released", marked: "have been released", find: "release" },
};

type Result = "ok" | "notfound" | "already" | "badstatus";

function actOn(mode: Mode, ad: Ad, reason: string, subcode: number, logs: (() => void)[]): Result {
  const st = ad.num("JobStatus");
  const db = openDb();
  const c = ad.num("ClusterId")!, p = ad.num("ProcId")!;
  const run = getRun(db, c, p);
  const now = nowSec();
  if (mode === "rm") {
    if (st === 3) return "already";
    ad.set("RemoveReason", reason);
    setStatus(ad, 3, now);
    if (run) {
      putJob(db, ad);
      if (run.pid) { const pid = run.pid; logs.unshift(() => killGroup(pid, "SIGTERM")); }
    } else {
      finalizeRemoved(ad);
      toHistory(db, ad);
      logs.push(() => ulog(ad, 9, "Job was aborted.", `\t${reason}\n`));
    }
    return "ok";
  }
  if (mode === "hold") {
    if (st === 5) return "already";
    if (st === 3 || st === 4) return "badstatus";
    setStatus(ad, 5, now);
    ad.set("HoldReason", reason);
    ad.set("HoldReasonCode", 1);
    ad.set("HoldReasonSubCode", subcode);
    ad.set("NumHolds", (ad.num("NumHolds") ?? 0) + 1);
    putJob(db, ad);
    if (run && run.pid) { const pid = run.pid; logs.unshift(() => killGroup(pid, "SIGTERM")); }
    logs.push(() => ulog(ad, 12, "Job was held.", `\t${reason}\n\tCode 1 Subcode ${subcode}\n`));
    return "ok";
  }
  if (st !== 5) return "badstatus";
  for (const [a, b] of [["HoldReason", "LastHoldReason"], ["HoldReasonCode", "LastHoldReasonCode"], ["HoldReasonSubCode", "LastHoldReasonSubCode"]] as const) {
    const v = ad.get(a);
    if (v !== undefined) { ad.setText(b, v); ad.delete(a); }
  }
  const lr = ad.get("ReleaseReason");
  if (lr !== undefined) ad.setText("LastReleaseReason", lr);
  ad.set("ReleaseReason", reason);
  setStatus(ad, 1, now);
  putJob(db, ad);
  logs.push(() => ulog(ad, 13, "Job was released.", `\t${reason}\n`));
  return "ok";
}

export function condorRm(tool: string, argv: string[]): number {
  const mode: Mode = tool === "condor_hold" ? "hold" : tool === "condor_release" ? "release" : "rm";
  const cfg = loadConfig();
  let reason: string | null = null;
  let subcode = 0;
  let all = false;
  const ids: [number, number][] = [];
  const groups: { kind: "cluster" | "user" | "constraint"; text: string; c?: number }[] = [];
  let name: string | null = null;
  let totals = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const need = () => {
      if (i + 1 >= argv.length) { err(`${tool}: ${a} requires another argument\n`); throw new Error("usage"); }
      return argv[++i]!;
    };
    try {
      if (a.startsWith("-")) {
        if (isOpt(a, "all", 2) || a === "-a") all = true;
        else if (isOpt(a, "constraint", 2)) groups.push({ kind: "constraint", text: need() });
        else if (isOpt(a, "reason", 1)) reason = need();
        else if (isOpt(a, "subcode", 2)) subcode = Number(need()) || 0;
        else if (isOpt(a, "name", 1)) name = need();
        else if (isOpt(a, "pool", 1) || isOpt(a, "addr", 2)) need();
        else if (isOpt(a, "totals", 2)) totals = true;
        else if (isOpt(a, "forcex", 1) || isOpt(a, "debug", 1) || isOpt(a, "long", 1) || isOpt(a, "transfer", 2)) { /* accepted */ }
        else if (isOpt(a, "version", 1)) { out(VERSION + "\n" + PLATFORM + "\n"); return 0; }
        else if (isOpt(a, "help", 1)) { out(usage(tool)); return 0; }
        else { err(`Unrecognized option: ${a}\n` + usage(tool)); return 1; }
        continue;
      }
    } catch { return 1; }
    const m = /^(\d+)(?:\.(\d+))?$/.exec(a);
    if (m && m[2] !== undefined) ids.push([Number(m[1]), Number(m[2])]);
    else if (m) groups.push({ kind: "cluster", text: m[1]!, c: Number(m[1]) });
    else groups.push({ kind: "user", text: a });
  }
  if (all) groups.push({ kind: "constraint", text: "" });
  if (!ids.length && !groups.length) { err(`You did not specify any jobs\n` + usage(tool)); return 1; }
  if (name !== null && !acceptableSchedd(name, cfg)) { err(`${tool}: Can't find address of schedd ${name}\n`); return 1; }
  const me = ownerName();
  const why = `${reason ?? `via ${tool}`} (by user ${me})`;
  const db = openDb();
  let rc = 0;
  const logs: (() => void)[] = [];
  const stdoutLines: string[] = [];
  const stderrLines: string[] = [];
  let nOk = 0, nNotFound = 0, nAlready = 0, nBad = 0;
  tx(db, () => {
    // fully qualified IDs: one request, one line per ID (spec §4.1)
    if (ids.length) {
      const res: string[] = [];
      const errs: string[] = [];
      let anyOk = false;
      for (const [c, p] of ids) {
        const ad = getJob(db, c, p);
        const id = `${c}.${p}`;
        if (!ad) { errs.push(`Job ${id} not found`); nNotFound++; continue; }
        const r = actOn(mode, ad, why, subcode, logs);
        if (r === "ok") { res.push(`Job ${id} ${VERB[mode].past}`); anyOk = true; nOk++; }
        else if (r === "already") { nAlready++; errs.push(mode === "rm" ? `Job ${id} already marked for removal` : `Job ${id} already held`); }
        else { nBad++; errs.push(mode === "release" ? `Job ${id} not held to be released` : mode === "hold" ? `Job ${id} not found` : `Job ${id} not found`); }
      }
      stdoutLines.push(...res);
      if (!anyOk) { rc = 1; stderrLines.push(""); }
      stderrLines.push(...errs);
    }
    // clusters / users / constraints / -all (spec §4.2)
    for (const g of groups) {
      const jobs = allJobs(db);
      let node: Node | null = null;
      if (g.kind === "constraint" && g.text) {
        try { node = parse(g.text); } catch { stderrLines.push(`Error: Invalid constraint: ${g.text}`); rc = 1; continue; }
      }
      const match = (ad: Ad) => {
        if (g.kind === "cluster") return ad.num("ClusterId") === g.c;
        if (g.kind === "user") return (ad.str("Owner") ?? "").toLowerCase() === g.text.toLowerCase();
        if (node) return isTrue(evaluate(node, ad));
        return true;
      };
      const desc = g.kind === "cluster" ? `in cluster ${g.text}` : g.kind === "user" ? `of user "${g.text}"` : g.text ? `matching constraint (${g.text})` : "";
      if (!jobs.length) {
        stderrLines.push(`${tool}:0:There are no jobs in the queue`);
        continue;
      }
      let ok = 0;
      for (const ad of jobs.filter(match)) {
        const r = actOn(mode, ad, why, subcode, logs);
        if (r === "ok") { ok++; nOk++; } else if (r === "already") nAlready++; else nBad++;
      }
      if (ok) stdoutLines.push(`All jobs${desc ? " " + desc : ""} ${VERB[mode].marked}`);
      else { rc = 1; stderrLines.push("", `Couldn't find/${VERB[mode].find} all jobs${desc ? " " + desc : ""}`); }
    }
    bumpGen(db);
  });
  for (const l of logs) l();
  if (stdoutLines.length) out(stdoutLines.join("\n") + "\n");
  if (stderrLines.length) err(stderrLines.join("\n") + "\n");
  if (totals) out(`${nOk} Succeeded, ${nBad} Failed, ${nNotFound} Not Found, ${nBad} Bad Status, ${nAlready} Already Done, 0 Permission Denied\n`);
  if (mode === "release" || mode === "rm") ensureSchedd(db);
  return rc;
}

function usage(tool: string): string {
  return `Usage: ${tool} [general-opts] [reason-opts] [targets]\n` +
    ` where [general-opts] are zero or more of:\n    -help               Display this message and exit\n    -version            Display version information and exit\n` +
    `    -name schedd_name   Connect to the given schedd\n    -pool hostname      Use the given central manager to find daemons\n` +
    `    -addr <ip:port>     Connect directly to the given "sinful string"\n    -reason reason      Use the given RemoveReason\n` +
    ` and where [targets] can be zero or more of:\n    -all                All jobs\n    cluster             All jobs in the given cluster\n` +
    `    cluster.proc        The given job\n    user                All jobs owned by user\n    -constraint expr    All jobs matching the boolean expression\n`;
}

// ---------------------------------------------------------------- condor_transfer_data
export function condorTransferData(argv: string[]): number {
  const cfg = loadConfig();
  const ids: { c: number; p: number | null }[] = [];
  const users: string[] = [];
  const cons: string[] = [];
  let all = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("-")) {
      if (isOpt(a, "all", 2)) all = true;
      else if (isOpt(a, "constraint", 2)) cons.push(argv[++i] ?? "");
      else if (isOpt(a, "name", 1)) {
        const n = argv[++i] ?? "";
        if (!acceptableSchedd(n, cfg)) { err(`condor_transfer_data: Can't find address of schedd ${n}\n`); return 1; }
      } else if (isOpt(a, "pool", 1) || isOpt(a, "addr", 2)) i++;
      else if (isOpt(a, "version", 1)) { out(VERSION + "\n" + PLATFORM + "\n"); return 0; }
      else if (isOpt(a, "debug", 1)) { /* accepted */ }
      else { err(`Unrecognized option: ${a}\n`); return 1; }
      continue;
    }
    const m = /^(\d+)(?:\.(\d+))?$/.exec(a);
    if (m) ids.push({ c: Number(m[1]), p: m[2] !== undefined ? Number(m[2]) : null });
    else users.push(a);
  }
  if (!ids.length && !users.length && !cons.length && !all) { err("condor_transfer_data: You did not specify any jobs\n"); return 1; }
  let nodes: Node[];
  try { nodes = cons.map((c) => parse(c)); } catch { err(`\nERROR: Failed to spool job files.\n`); return 1; }
  const db = openDb();
  out("Fetching data files...\n");
  const jobs = allJobs(db).filter((ad) => {
    const c = ad.num("ClusterId"), p = ad.num("ProcId"), o = (ad.str("Owner") ?? "").toLowerCase();
    const sel = all || ids.some((i) => i.c === c && (i.p === null || i.p === p)) || users.some((u) => u.toLowerCase() === o) || (nodes.length > 0 && nodes.every((n) => isTrue(evaluate(n, ad))));
    return sel && ad.has("SUBMIT_Iwd") && ad.num("JobStatus") === 4;
  });
  for (const ad of jobs) {
    const spoolIwd = ad.str("Iwd")!, dest = ad.str("SUBMIT_Iwd")!;
    const remaps = parseRemaps(ad.str("TransferOutputRemaps"));
    const start = nowSec();
    const fetch = (name: string, fallbackDest?: string) => {
      const src = path.resolve(spoolIwd, name);
      if (!fs.existsSync(src)) return;
      const r = remaps.get(name);
      const dst = r ? path.resolve(dest, r) : path.resolve(dest, fallbackDest ?? path.basename(name));
      try { copyTo(src, dst); } catch { /* ignore */ }
    };
    const outN = ad.str("Out"), errN = ad.str("Err");
    if (outN && outN !== "/dev/null") fetch(outN, ad.str("SUBMIT_Out") ?? outN);
    if (errN && errN !== "/dev/null" && errN !== outN) fetch(errN, ad.str("SUBMIT_Err") ?? errN);
    for (const f of (ad.str("SpooledOutputFiles") ?? "").split(",").map((x) => x.trim()).filter(Boolean)) fetch(f);
    const fin = nowSec();
    let gone = false;
    tx(db, () => {
      const cur = getJob(db, ad.num("ClusterId")!, ad.num("ProcId")!);
      if (!cur) return;
      cur.set("StageOutStart", start);
      cur.set("StageOutFinish", fin);
      cur.set("LeaveJobInQueue", false);
      if (cfg.stageOutLingerMs <= 0) { toHistory(db, cur); gone = true; }
      else putJob(db, cur);
      bumpGen(db);
    });
    if (gone) { try { fs.rmSync(path.dirname(path.dirname(spoolIwd)), { recursive: true, force: true }); } catch { /* ignore */ } }
  }
  if (cfg.stageOutLingerMs > 0 && jobs.length) ensureSchedd(db);
  return 0;
}

// ---------------------------------------------------------------- condor_tail
export async function condorTail(argv: string[]): Promise<number> {
  // exact strcmp option matching (spec §0)
  let follow = false, maxbytes = 1024, noStdout = false, stderrToo = false;
  let jobArg: string | null = null;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-f" || a === "-follow") follow = true;
    else if (a === "-maxbytes") maxbytes = Number(argv[++i] ?? "1024");
    else if (a === "-no-stdout") noStdout = true;
    else if (a === "-stderr") stderrToo = true;
    else if (a === "-debug" || a === "-auto-retry") { /* accepted */ }
    else if (a === "-name" || a === "-pool") i++;
    else if (a === "-help") { out("Usage: condor_tail [-pool cm] [-name schedd] [-debug] [-maxbytes N] [-auto-retry] [-f|-follow] [-no-stdout] [-stderr] <job-id> [file ...]\n"); return 0; }
    else if (a === "-version") { out(VERSION + "\n" + PLATFORM + "\n"); return 0; }
    else if (a.startsWith("-")) { err(`Unknown argument: ${a}\n`); return 1; }
    else if (jobArg === null) jobArg = a;
    else files.push(a);
  }
  if (jobArg === null) { err("No job id given\n"); return 1; }
  const m = /^(\d+)(?:\.(\d+))?$/.exec(jobArg);
  if (!m) { err(`Invalid job id: ${jobArg}\n`); return 1; }
  const c = Number(m[1]), p = m[2] !== undefined ? Number(m[2]) : 0;
  const id = `${c}.${p}`;
  const db = openDb();
  const cfg = loadConfig();
  const pollMs = Number(process.env.MINICONDOR_TAIL_POLL_MS ?? 2000);
  // wait (forever) until the job is running (spec §5.2)
  let ad: Ad | null;
  let run;
  for (;;) {
    ad = getJob(db, c, p);
    if (!ad) { err(`No such job: ${id}\n`); return 1; }
    run = getRun(db, c, p);
    if (ad.num("JobStatus") === 2 && run && run.pid) break;
    await Bun.sleep(pollMs);
  }
  const iwd = ad.str("Iwd") ?? "/";
  const sandboxed = fs.existsSync(path.join(run.scratch, "_condor_stdout")) || fs.existsSync(path.join(run.scratch, "_condor_stderr"));
  const outName = ad.str("Out") ?? "/dev/null", errName = ad.str("Err") ?? "/dev/null";
  const stdPath = (name: string, sb: string, stream: boolean) => {
    if (name === "/dev/null") return null;
    if (!sandboxed || stream) return path.resolve(iwd, name);
    return outName === errName ? path.join(run.scratch, "_condor_stdout") : path.join(run.scratch, sb);
  };
  const outPath = stdPath(outName, "_condor_stdout", ad.bool("StreamOut") === true);
  const errPath = stdPath(errName, "_condor_stderr", ad.bool("StreamErr") === true);
  const targets: string[] = [];
  if (!noStdout) {
    const t = stderrToo ? errPath : outPath;
    if (t) targets.push(t);
  } else if (stderrToo && errPath) targets.push(errPath);
  const allowed = new Set<string>([outName, errName, ...(ad.str("TransferOutput") ?? "").split(",").map((x) => x.trim()).filter(Boolean)]);
  for (const f of files) {
    if (!allowed.has(f)) { err(`Failed to peek at file from starter: File ${f} requested but not authorized to be sent.\n`); return 1; }
    if (f === outName && outPath) targets.push(outPath);
    else if (f === errName && errPath) targets.push(errPath);
    else targets.push(path.resolve(sandboxed ? run.scratch : iwd, f));
  }
  void cfg;
  const offsets = new Map<string, number>();
  const readTail = (f: string, fromStart: boolean): string => {
    let st: fs.Stats;
    try { st = fs.statSync(f); } catch { return ""; }
    const prev = offsets.get(f);
    let start = prev ?? Math.max(0, st.size - maxbytes);
    if (prev !== undefined && st.size < prev) start = 0;
    if (!fromStart && prev === undefined) start = Math.max(0, st.size - maxbytes);
    const len = Math.min(st.size - start, maxbytes > 0 ? Math.max(maxbytes, prev !== undefined ? st.size - start : 0) : st.size - start);
    offsets.set(f, start + len);
    if (len <= 0) return "";
    const fd = fs.openSync(f, "r");
    try {
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, start);
      return buf.toString("latin1");
    } finally { fs.closeSync(fd); }
  };
  const emit = (s: string) => { if (s) fs.writeSync(1, Buffer.from(s, "latin1")); };
  for (const t of targets) emit(readTail(t, false));
  if (!follow) return 0;
  for (;;) {
    await Bun.sleep(pollMs);
    const cur = getJob(db, c, p);
    for (const t of targets) emit(readTail(t, true));
    if (!cur || cur.num("JobStatus") !== 2) return 0;
  }
}
