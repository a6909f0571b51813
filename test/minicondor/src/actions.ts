// condor_rm / condor_hold / condor_release / condor_vacate_job, condor_transfer_data, condor_tail.
// docs/htcondor.md#condor_rm-condor_hold-condor_release, docs/htcondor.md#condor_tail,
// docs/htcondor.md#condor_transfer_data; docs/htcondor.md#key-observations/docs/htcondor.md#transcripts
// The option handling and messages follow src/condor_rm.V6/rm.cpp of htcondor/htcondor.
import * as fs from "node:fs";
import * as path from "node:path";
import { Ad, evaluate, isTrue, type Node, parse } from "./classad.ts";
import {
  acceptablePool,
  acceptableSchedd,
  allJobs,
  bumpGen,
  err,
  getJob,
  getRun,
  isOpt,
  jobStatus,
  loadConfig,
  nowSec,
  openDb,
  out,
  ownerName,
  PLATFORM,
  putJob,
  setStatus,
  toHistory,
  tx,
  VERSION,
} from "./common.ts";
import { ensureSchedd, finalizeRemoved, removeSpool, requestVacate } from "./schedd.ts";
import { ulog } from "./userlog.ts";
import { copyTo, parseRemaps } from "./files.ts";

type Mode = "rm" | "forcex" | "hold" | "release" | "vacate" | "vacate-fast";
const WORDS: Record<Mode, { past: string; verb: string }> = {
  rm: { past: "marked for removal", verb: "remove" },
  forcex: { past: "removed locally (remote state unknown)", verb: "remove" },
  hold: { past: "held", verb: "hold" },
  release: { past: "released", verb: "release" },
  vacate: { past: "vacated", verb: "vacate" },
  "vacate-fast": { past: "fast-vacated", verb: "fast-vacate" },
};

// schedd.cpp abort_job_myself: the reason a condor_vacate_job gives the shadow, unless the job has one already
const VACATE_REASON = "Job vacated by schedd";
const VACATE_CODE = 1022; // CONDOR_HOLD_CODE::ScheddVacate

type Result = "ok" | "already" | "badstatus";

// The running job itself is stopped by the schedd, which sees the new status (starter soft kill, then hard kill).
function actOn(mode: Mode, ad: Ad, reason: string, subcode: number, logs: (() => void)[]): Result {
  const st = ad.num("JobStatus");
  const db = openDb();
  const c = ad.num("ClusterId")!, p = ad.num("ProcId")!;
  const run = getRun(db, c, p);
  const now = nowSec();
  if (mode === "vacate" || mode === "vacate-fast") {
    // only a running job can be vacated (schedd.cpp actOnJobs); the schedd stops it and the shadow writes 004
    if (st !== 2 || !run) return "badstatus";
    if (ad.str("VacateReason") === undefined) {
      ad.set("VacateReason", VACATE_REASON);
      ad.set("VacateReasonCode", VACATE_CODE);
      ad.set("VacateReasonSubCode", 0);
    }
    putJob(db, ad);
    requestVacate(db, c, p, mode === "vacate-fast");
    return "ok";
  }
  if (mode === "forcex") {
    if (st !== 3) return "badstatus";
    finalizeRemoved(ad);
    toHistory(db, ad);
    return "ok";
  }
  if (mode === "rm") {
    if (st === 3) return "already";
    ad.set("RemoveReason", reason);
    setStatus(ad, 3, now);
    if (run) putJob(db, ad);
    else {
      finalizeRemoved(ad);
      toHistory(db, ad);
      logs.push(() => {
        ulog(ad, 9, "Job was aborted.", `\t${reason}\n`);
        removeSpool(ad);
      });
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
    logs.push(() => ulog(ad, 12, "Job was held.", `\t${reason}\n\tCode 1 Subcode ${subcode}\n`));
    return "ok";
  }
  if (st !== 5) return "badstatus";
  for (const [a, b] of [["HoldReason", "LastHoldReason"], ["HoldReasonCode", "LastHoldReasonCode"], ["HoldReasonSubCode", "LastHoldReasonSubCode"]] as const) {
    const v = ad.get(a);
    if (v !== undefined) {
      ad.setText(b, v);
      ad.delete(a);
    }
  }
  const lr = ad.get("ReleaseReason");
  if (lr !== undefined) ad.setText("LastReleaseReason", lr);
  ad.set("ReleaseReason", reason);
  setStatus(ad, 1, now);
  putJob(db, ad);
  logs.push(() => ulog(ad, 13, "Job was released.", `\t${reason}\n`));
  return "ok";
}

// rm.cpp's CONSTRAINT_TYPE: the kind of the one constraint a call acts on decides its summary line
type CT = "none" | "all" | "cluster" | "user" | "simple" | "complex";

class Exit extends Error {
  constructor(public code: number) {
    super(`exit ${code}`);
  }
}

export function condorRm(tool: string, argv: string[]): number {
  try {
    return rmMain(tool, argv);
  } catch (e) {
    if (e instanceof Exit) return e.code;
    throw e;
  }
}

function rmMain(tool: string, argv: string[]): number {
  let mode: Mode = tool === "condor_hold" ? "hold" : tool === "condor_release" ? "release" : tool === "condor_vacate_job" ? "vacate" : "rm";
  const cfg = loadConfig();
  const fail = (text: string, code = 1): never => {
    err(text);
    throw new Exit(code);
  };
  const usageExit = (code = 1): never => {
    err(usage(tool, mode));
    throw new Exit(code);
  };
  let reason: string | null = null;
  let subcode = 0;
  let dashLong = false, totals = false, hadError = false;
  let name: string | null = null, pool: string | null = null, addr: string | null = null;
  const ids: [number, number][] = [];
  let constraint = "", ctype: CT = "none";
  let usercluster = "", uctype: CT = "none";
  // several -constraint are ANDed; cluster and user arguments are ORed, then ANDed to them (rm.cpp addConstraint)
  const addConstraint = (c: string, t: CT) => {
    if (ctype === "none" || ctype === "all") {
      constraint = c;
      ctype = t;
    } else if (ctype === "complex") constraint += ` && (${c})`;
    else {
      constraint = `(${constraint}) && (${c})`;
      ctype = "complex";
    }
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = (what: string, noDash: boolean) => {
      const v = argv[i + 1];
      if (v === undefined || (noDash && v.startsWith("-"))) fail(`${tool}: ${what} requires another argument\n`);
      i++;
      return v!;
    };
    if (a.startsWith("-")) {
      if (isOpt(a, "debug", 1) || /^--?d(e(b(ug?)?)?)?:/.test(a)) { /* accepted */ }
      else if (isOpt(a, "long", 1)) dashLong = true;
      else if (isOpt(a, "totals", 3)) totals = true;
      else if (isOpt(a, "constraint", 1)) addConstraint(next("-constraint", true), "simple");
      else if (isOpt(a, "all", 1)) {
        if (ctype !== "none" || uctype !== "none") fail(`${tool}: can't mix -all with other constraints\n`);
        addConstraint("ClusterId >= 0", "all");
      } else if (isOpt(a, "addr", 2)) {
        addr = next("-addr", true);
        if (!/^<[^>]*>$/.test(addr)) {
          fail(`${tool}: "${addr}" is not a valid address\nShould be of the form <ip.address.here:port>\nFor example: <123.456.789.123:6789>\n`);
        }
      } else if (isOpt(a, "reason", 1)) reason = next("-reason", false);
      else if (isOpt(a, "subcode", 1)) {
        const v = next("-subcode", false);
        if (!/^-?\d+$/.test(v)) fail(`Invalid -subcode ${v}!\n`);
        subcode = Number(v);
      } else if (isOpt(a, "forcex", mode === "rm" ? 1 : 2)) {
        if (mode === "rm") mode = "forcex";
        else {
          err("-forcex is only valid with condor_rm\n");
          usageExit();
        }
      } else if (isOpt(a, "fast", mode === "vacate" ? 1 : 2)) {
        if (mode === "vacate") mode = "vacate-fast";
        else {
          err("-fast is only valid with condor_vacate_job\n");
          usageExit();
        }
      } else if (isOpt(a, "name", 1)) name = next("-name", false);
      else if (isOpt(a, "pool", 1)) pool = next("-pool", false);
      else if (isOpt(a, "version", 1)) {
        out(VERSION + "\n" + PLATFORM + "\n");
        return 0;
      } else if (isOpt(a, "help", 1)) usageExit(0);
      else {
        err(`Unrecognized option: ${a}\n`);
        usageExit();
      }
      continue;
    }
    if ((ctype as CT) === "all") usageExit();
    if (/^[\d.+-]/.test(a) && !isNaN(Number(a))) {
      const m = /^(\d+)(?:\.(\d+))?$/.exec(a);
      if (!m || Number(m[1]) <= 0) {
        err(`Invalid cluster # from ${a}.\n`);
        hadError = true;
        continue;
      }
      if (m[2] !== undefined) ids.push([Number(m[1]), Number(m[2])]);
      else {
        usercluster = uctype === "none" ? `ClusterId == ${m[1]}` : `${usercluster} || ClusterId == ${m[1]}`;
        uctype = uctype === "none" ? "cluster" : "complex";
      }
    } else {
      usercluster = uctype === "none" ? `Owner == "${a}"` : `${usercluster} || Owner == "${a}"`;
      uctype = uctype === "none" ? "user" : "complex";
    }
  }
  if (ctype === "none" && uctype === "none" && !ids.length) {
    err("You did not specify any jobs\n");
    usageExit();
  }
  // locating the schedd (rm.cpp: -name without -pool asks the collector itself)
  if (addr === null && name !== null) {
    if (pool !== null && !acceptablePool(pool, cfg)) fail(`${tool}: Can't find address for schedd ${name}\n`);
    if (!acceptableSchedd(name, cfg)) {
      fail(
        pool === null
          ? `Error: cannot get address of schedd ${name.includes("@") ? name.slice(name.indexOf("@") + 1) : name}\n`
          : `${tool}: Can't find address for schedd ${name}\n`,
      );
    }
  } else if (addr === null && pool !== null && !acceptablePool(pool, cfg)) fail(`${tool}: Can't find address for schedd \n`);

  const why = `${reason ?? (mode === "forcex" ? "via condor_rm -forcex" : `via ${tool}`)} (by user ${ownerName()})`;
  const db = openDb();
  // The events of a change go to the log before its transaction commits: the schedd writes 012,
  // 013 and 009 as it changes the job (docs/htcondor.md#who-writes-an-event-and-when), before it
  // can match a released job again, and our schedd is another process that acts on the commit.
  const logs: (() => void)[] = [];
  const writeLogs = () => {
    for (const l of logs.splice(0)) l();
  };
  const totalsLine = (n: { ok: number; notFound: number; bad: number; already: number }) =>
    `${n.ok} Succeeded, 0 Failed, ${n.notFound} Not Found, ${n.bad} Bad Status, ${n.already} Already Done, 0 Permission Denied\n`;
  let acted = 0;

  // fully qualified IDs: one request, one line per ID (docs/htcondor.md#job-ids-one-line-per-id)
  if (ids.length) {
    if (ctype !== "none") err("Warning, -constraint is ignored for fully qualified job ids\n");
    const okLines: string[] = [], errLines: string[] = [];
    const n = { ok: 0, notFound: 0, bad: 0, already: 0 };
    tx(db, () => {
      for (const [c, p] of ids) {
        const id = `${c}.${p}`;
        const ad = getJob(db, c, p);
        if (!ad) {
          errLines.push(`Job ${id} not found`);
          n.notFound++;
          continue;
        }
        const r = actOn(mode, ad, why, subcode, logs);
        if (r === "ok") {
          okLines.push(`Job ${id} ${WORDS[mode].past}`);
          n.ok++;
        } else if (r === "already") {
          n.already++;
          errLines.push(mode === "rm" ? `Job ${id} already marked for removal` : `Job ${id} already held`);
        } else {
          n.bad++;
          errLines.push(
            mode === "release"
              ? `Job ${id} not held to be released`
              : mode === "vacate" || mode === "vacate-fast"
              ? `Job ${id} not running to be ${WORDS[mode].past}`
              : mode === "forcex"
              ? `Job ${id} not in \`X' state to be forcibly removed`
              : `Job ${id} not found`,
          );
        }
      }
      bumpGen(db);
      writeLogs();
    });
    acted += n.ok;
    if (totals) out(totalsLine(n));
    // the schedd answers "acted on at least one" for the whole list (docs/htcondor.md#job-ids-one-line-per-id)
    if (!n.ok) {
      hadError = true;
      err("\n");
    }
    if (okLines.length) out(okLines.join("\n") + "\n");
    if (errLines.length) err(errLines.join("\n") + "\n");
  }

  // clusters, users, -constraint, -all: one request for their combination, one summary line
  // (docs/htcondor.md#clusters-users-and-constraints-one-summary-line)
  // docs/htcondor.md#clusters-users-and-constraints-one-summary-line: a cluster mixed with -constraint gives
  // "((ClusterId == 123) && (<expr>))" (the cluster first; the rm.cpp read for this port puts the -constraint first,
  // the newer source that docs/htcondor.md follows puts the cluster first)
  if (uctype !== "none") {
    if (ctype === "none") {
      constraint = usercluster;
      ctype = uctype;
    } else {
      constraint = `(${usercluster}) && (${constraint})`;
      ctype = "complex";
    }
  }
  if (ctype !== "none") {
    let node: Node;
    try {
      node = parse(constraint);
    } catch {
      node = parse("false");
    }
    const cmsg = ctype === "user"
      ? ` of user ${constraint.slice(constraint.indexOf(" == ") + 4)}`
      : ctype === "cluster"
      ? ` in cluster ${constraint.slice(constraint.indexOf(" == ") + 4)}`
      : (ctype as CT) === "all"
      ? ""
      : ` matching constraint (${constraint})`;
    const n = { ok: 0, notFound: 0, bad: 0, already: 0 };
    let queued = 0;
    tx(db, () => {
      const jobs = allJobs(db);
      queued = jobs.length;
      for (const ad of jobs) {
        // the schedd puts `(ProcId is undefined || JobStatus != 3) && (<constraint>)` in front of a
        // removal's constraint (schedd.cpp actOnJobs): a job being removed is not matched at all
        if (mode === "rm" && ad.num("JobStatus") === 3) continue;
        if (!isTrue(evaluate(node, ad))) continue;
        const r = actOn(mode, ad, why, subcode, logs);
        if (r === "ok") n.ok++;
        else if (r === "already") n.already++;
        else n.bad++;
      }
      bumpGen(db);
      writeLogs();
    });
    acted += n.ok;
    if (totals) out(totalsLine(n));
    if (n.ok) out(`All jobs${cmsg} have been ${WORDS[mode].past}\n`);
    else if (!queued) err(`${tool}:0:There are no jobs in the queue\n`); // and exit 0 (docs/htcondor.md#clusters-users-and-constraints-one-summary-line)
    else {
      hadError = true;
      err(`\nCouldn't find/${WORDS[mode].verb} all jobs${cmsg}\n`);
    }
  }
  void dashLong;
  if (acted) ensureSchedd(db);
  return hadError ? 1 : 0;
}

function usage(tool: string, mode: Mode): string {
  const word = mode === "hold" ? "hold" : mode === "release" ? "release" : mode === "vacate" ? "vacate" : mode === "vacate-fast" ? "fast-vacate" : "remove";
  const reasonLine = mode === "rm" || mode === "forcex"
    ? "  -reason reason      Use the given RemoveReason\n"
    : mode === "release"
    ? "  -reason reason      Use the given ReleaseReason\n"
    : mode === "hold"
    ? "  -reason reason      Use the given HoldReason\n  -subcode number     Set HoldReasonSubCode\n"
    : "";
  return `Usage: ${tool} [options] [constraints]\n where [options] is zero or more of:\n` +
    "  -help               Display this message and exit\n  -version            Display version information and exit\n" +
    "  -long               Display full result classad\n  -totals             Display success/failure totals\n" +
    "  -debug              Display debugging information while running\n  -name schedd_name   Connect to the given schedd\n" +
    '  -pool hostname      Use the given central manager to find daemons\n  -addr <ip:port>     Connect directly to the given "sinful string"\n' +
    reasonLine +
    (mode === "rm" || mode === "forcex"
      ? "  -forcex             Force the immediate local removal of jobs in the X state\n                      (only affects jobs already being removed)\n"
      : mode === "vacate" || mode === "vacate-fast"
      ? "  -fast               Use a fast vacate (hardkill)\n"
      : "") +
    ` and where [constraints] is one of:\n  cluster.proc        ${word} the given job\n  cluster             ${word} the given cluster of jobs\n` +
    `  user                ${word} all jobs owned by user\n  -constraint expr    ${word} all jobs matching the boolean expression\n` +
    `  -all                ${word} all jobs (cannot be used with other constraints)\n`;
}

// ---------------------------------------------------------------- condor_transfer_data
// Options as src/condor_tools/transfer_data.cpp of htcondor/htcondor reads them: by their second letter.
export function condorTransferData(argv: string[]): number {
  const cfg = loadConfig();
  const ids: { c: number; p: number | null }[] = [];
  const users: string[] = [];
  const cons: string[] = [];
  let all = false, nArgs = 0;
  let name: string | null = null, pool: string | null = null, addr: string | null = null;
  const me = "condor_transfer_data";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = (what: string): string | null => {
      const v = argv[i + 1];
      if (v === undefined) {
        err(`${me}: ${what} requires another argument\n`);
        return null;
      }
      i++;
      return v;
    };
    if (a.startsWith("-")) {
      if (a.length === 1) {
        err(transferUsage());
        return 1;
      }
      switch (a[1]) {
        case "d":
          if (!(isOpt(a, "debug", 1) || /^-d(e(b(ug?)?)?)?:/.test(a))) {
            err(`${me}: unknown argument ${a}\n`);
            return 1;
          }
          break;
        case "c": {
          const v = next("-constraint");
          if (v === null) return 1;
          cons.push(v);
          nArgs++;
          break;
        }
        case "a":
          if (a[2] === "d") {
            const v = next("-addr");
            if (v === null) return 1;
            if (!/^<[^>]*>$/.test(v)) {
              err(`${me}: "${v}" is not a valid address\nShould be of the form <ip.address.here:port>\nFor example: <123.456.789.123:6789>\n`);
              return 1;
            }
            addr = v;
          } else all = true;
          break;
        case "n": {
          const v = next("-name");
          if (v === null) return 1;
          name = v;
          break;
        }
        case "p": {
          const v = next("-pool");
          if (v === null) return 1;
          pool = v;
          break;
        }
        case "s": {
          if (next("-stm") === null) return 1;
          break;
        }
        case "v":
          out(VERSION + "\n" + PLATFORM + "\n");
          return 0;
        case "h":
          err(transferUsage());
          return 0;
        default:
          err(`Unrecognized option: ${a}\n` + transferUsage());
          return 1;
      }
      continue;
    }
    if (all) {
      err(transferUsage());
      return 1;
    }
    nArgs++;
    const m = /^(\d+)(?:\.(\d+))?$/.exec(a);
    if (m) ids.push({ c: Number(m[1]), p: m[2] !== undefined ? Number(m[2]) : null });
    else if (/^[A-Za-z]/.test(a)) users.push(a);
    else err(`Warning: unrecognized "${a}" skipped\n`);
  }
  if (!all && !nArgs) {
    err("You did not specify any jobs\n" + transferUsage());
    return 1;
  }
  // DCSchedd(name, pool).locate(): a named schedd is looked up in the collector (daemon.cpp's message)
  if (addr === null && (name !== null || pool !== null)) {
    if ((name !== null && !acceptableSchedd(name, cfg)) || (pool !== null && !acceptablePool(pool, cfg))) {
      err(`${me}: Can't find address for schedd ${name ?? ""}\n`);
      return 1;
    }
  }
  let nodes: Node[];
  try {
    nodes = cons.map((c) => parse(c));
  } catch {
    out("Fetching data files...\n");
    err(`\n\nERROR: Failed to spool job files.\n`);
    return 1;
  }
  const db = openDb();
  out("Fetching data files...\n");
  const jobs = allJobs(db).filter((ad) => {
    const c = ad.num("ClusterId"), p = ad.num("ProcId"), o = ad.str("Owner") ?? "";
    const sel = all || ids.some((i) => i.c === c && (i.p === null || i.p === p)) || users.some((u) => u === o) || nodes.some((n) => isTrue(evaluate(n, ad)));
    return sel && ad.has("SUBMIT_Iwd") && ad.num("JobStatus") === 4 && !ad.has("StageOutFinish");
  });
  for (const ad of jobs) {
    const spoolIwd = ad.str("Iwd")!, dest = ad.str("SUBMIT_Iwd")!;
    const remaps = parseRemaps(ad.str("TransferOutputRemaps"));
    const start = nowSec();
    // the remaps (incl. _condor_stdout=<path> of -spool) apply now, not when the job ended
    // (docs/htcondor.md#condor_transfer_data)
    const fetch = (name: string) => {
      const src = path.resolve(spoolIwd, name);
      if (!fs.existsSync(src)) return;
      const r = remaps.get(name);
      try {
        copyTo(src, r ? path.resolve(dest, r) : path.resolve(dest, name));
      } catch { /* ignore */ }
    };
    const outN = ad.str("Out"), errN = ad.str("Err");
    if (outN && outN !== "/dev/null") fetch(outN);
    if (errN && errN !== "/dev/null" && errN !== outN) fetch(errN);
    for (const f of (ad.str("SpooledOutputFiles") ?? "").split(",").map((x) => x.trim()).filter(Boolean)) fetch(f);
    const fin = nowSec();
    let gone = false;
    tx(db, () => {
      const cur = getJob(db, ad.num("ClusterId")!, ad.num("ProcId")!);
      if (!cur) return;
      cur.set("StageOutStart", start);
      cur.set("StageOutFinish", fin);
      cur.set("LeaveJobInQueue", false);
      if (cfg.stageOutLingerMs <= 0) {
        toHistory(db, cur);
        gone = true;
      } else putJob(db, cur);
      bumpGen(db);
    });
    if (gone) removeSpool(ad);
  }
  if (cfg.stageOutLingerMs > 0 && jobs.length) ensureSchedd(db);
  return 0;
}

function transferUsage(): string {
  return "Usage: condor_transfer_data [options] [constraints]\n where [options] is zero or more of:\n" +
    "  -help               Display this message and exit\n  -version            Display version information and exit\n" +
    "  -name schedd_name   Connect to the given schedd\n  -pool hostname      Use the given central manager to find daemons\n" +
    '  -addr <ip:port>     Connect directly to the given "sinful string"\n  -stm <method>\t\thow to move a sandbox out of Condor\n' +
    "               \t\tAvailable methods:\n\n               \t\t\tstm_use_schedd_only\n               \t\t\tstm_use_transferd\n\n" +
    " and where [constraints] is one or more of:\n  cluster.proc        transfer data for the given job\n" +
    "  cluster             transfer data for the given cluster of jobs\n  user                transfer data for all jobs owned by user\n" +
    "  -constraint expr    transfer data for all jobs matching the boolean expression\n" +
    "  -all                transfer data for all jobs (cannot be used with other constraints)\n";
}

// ---------------------------------------------------------------- condor_tail
// Options as src/condor_tools/tail.cpp of htcondor/htcondor reads them: exact strcmp, and anything else
// (even starting with "-") is the job id, then file names.
export async function condorTail(argv: string[]): Promise<number> {
  let follow = false, maxbytes = 1024, noStdout = false, stderrToo = false;
  let jobArg: string | null = null;
  let name: string | null = null, pool: string | null = null;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-help") {
      err(tailUsage());
      return 0;
    } else if (a === "-pool" || a === "-name") {
      const v = argv[++i];
      if (v === undefined) {
        err(`${a} requires an argument.\n\n` + tailUsage());
        return 1;
      }
      if (a === "-pool") pool = v;
      else name = v;
    } else if (a === "-maxbytes") {
      const v = argv[++i];
      if (v === undefined || v.startsWith("-")) {
        err("-maxbytes requires an argument.\n\n" + tailUsage());
        return 1;
      }
      if (!/^\s*[+-]?\d+\s*$/.test(v)) {
        err(`Error: maxbytes (${v}) is not valid\n\n` + tailUsage());
        return 1;
      }
      maxbytes = Number(v);
    } else if (a === "-version") {
      out(VERSION + "\n" + PLATFORM + "\n");
      return 0;
    } else if (a === "-debug" || a === "-auto-retry") { /* accepted; -auto-retry is parsed but never read (docs/htcondor.md#condor_tail) */ }
    else if (a === "-no-stdout") noStdout = true;
    else if (a === "-stderr") {
      stderrToo = true;
      noStdout = true;
    } else if (a === "-f" || a === "-follow") follow = true;
    else if (jobArg === null) jobArg = a;
    else files.push(a);
  }
  if (noStdout && !stderrToo && !files.length) {
    err("No file transfer specified.\n\n" + tailUsage());
    return 1;
  }
  if (jobArg === null) {
    err("Job ID not specified.\n" + tailUsage());
    return 1;
  }
  if (!/^(\d+)(?:\.(\d+))?$/.test(jobArg)) {
    err(`Invalid Job ID: ${jobArg}\n` + tailUsage());
    return 1;
  }
  const cfg0 = loadConfig();
  if ((name !== null && !acceptableSchedd(name, cfg0)) || (pool !== null && !acceptablePool(pool, cfg0))) {
    err(
      name === null
        ? "Can't find address of local schedd\n"
        : pool === null
        ? `No such schedd named ${name} in local pool\n`
        : `No such schedd named ${name} in pool ${pool}\n`,
    );
    return 1;
  }
  const m = /^(\d+)(?:\.(\d+))?$/.exec(jobArg)!;
  const c = Number(m[1]), p = m[2] !== undefined ? Number(m[2]) : 0;
  const id = `${c}.${p}`;
  const db = openDb();
  const cfg = loadConfig();
  const pollMs = Number(process.env.MINICONDOR_TAIL_POLL_MS ?? 2000);
  // wait (forever) until the job is running (docs/htcondor.md#condor_tail)
  let ad: Ad | null;
  let run;
  for (;;) {
    ad = getJob(db, c, p);
    if (!ad) {
      err(`No such job: ${id}\n`);
      return 1;
    }
    run = getRun(db, c, p);
    if (jobStatus(db, c, p) === 2 && run && run.pid) break;
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
    if (!allowed.has(f)) {
      err(`Failed to peek at file from starter: File ${f} requested but not authorized to be sent.\n`);
      return 1;
    }
    if (f === outName && outPath) targets.push(outPath);
    else if (f === errName && errPath) targets.push(errPath);
    else targets.push(path.resolve(sandboxed ? run.scratch : iwd, f));
  }
  void cfg;
  const offsets = new Map<string, number>();
  const readTail = (f: string, fromStart: boolean): string => {
    let st: fs.Stats;
    try {
      st = fs.statSync(f);
    } catch {
      return "";
    }
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
    } finally {
      fs.closeSync(fd);
    }
  };
  const emit = (s: string) => {
    if (s) fs.writeSync(1, Buffer.from(s, "latin1"));
  };
  // One peek answers for every file at once (src/condor_tools/tail.cpp). The starter removes the
  // sandbox when it exits: a sandbox gone by now means the job ended after it was looked up, and the
  // peek would have found no starter. Before any success that is an error (docs/htcondor.md#condor_tail:
  // other failures print a message and exit 1); later in a follow, tail.cpp exits quietly (below).
  const first = targets.map((t) => readTail(t, false));
  if (!fs.existsSync(run.scratch)) {
    err("Failed to peek at file from starter: Failed to connect to starter\n");
    return 1;
  }
  for (const s of first) emit(s);
  if (!follow) return 0;
  for (;;) {
    await Bun.sleep(pollMs);
    const cur = getJob(db, c, p);
    for (const t of targets) emit(readTail(t, true));
    if (!cur || jobStatus(db, c, p) !== 2) return 0;
  }
}

function tailUsage(): string {
  return "Usage: condor_tail [options] <job-id> [filename1[, filename2[, ...]]]\nTail a file in a running job's sandbox.\nThe options are:\n" +
    "    -help             Display options\n    -version          Display HTCondor version\n    -pool <hostname>  Use this central manager\n" +
    "    -name <name>      Query this schedd\n    -debug            Show extra debugging info\n" +
    "    -maxbytes         The maximum number of bytes to transfer.  Defaults to 1024\n    -auto-retry       Auto retry if job is not running yet.\n" +
    "    -f,-follow        Follow the contents of a file.\nBy default, only stdout is returned.\n" +
    "The filename may be any file in the job's transfer_output_files.\nYou may also include the following options.\n" +
    "    -no-stdout        Do not tail the job's stdout\n    -stderr           Tail at the job's stderr\n\n";
}
