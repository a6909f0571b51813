// condor_q, condor_history, condor_status. docs/htcondor.md#condor_q, docs/htcondor.md#condor_history,
// docs/htcondor.md#condor_status; docs/htcondor.md#transcripts
import { Ad, adToJson, adToJsonLine, adToLong, afValue, evaluate, isTrue, type Node, parse, ParseError, tryParse } from "./classad.ts";
import {
  acceptablePool,
  acceptableSchedd,
  allJobs,
  allRuns,
  type Config,
  err,
  homeDir,
  isOpt,
  jobsFrom,
  loadConfig,
  loadFaults,
  nowSec,
  openDb,
  out,
  ownerName,
  PLATFORM,
  rowAd,
  scheddAddr,
  scheddHome,
  selection,
  unresolvableHost,
  VERSION,
  wrappedText,
} from "./common.ts";
import * as fs from "node:fs";
import * as path from "node:path";
import { dynamicSlotAd, freeResources, machineAd } from "./machine.ts";
import { maybeEnsureSchedd } from "./schedd.ts";

/** condor_q's advice after "unknown host" (queue.cpp), printed unless -expert came first. */
const UNKNOWN_HOST_INFO =
  'Extra Info: The name given with the -name should be the name of a condor_schedd process. Normally it is either a hostname, or "name@hostname". In either case, the hostname should be the Internet host name, but it appears that it wasn\'t.';

type Fmt = { kind: "json" | "jsonl" | "long" | "af" | "format" | "xml" | "default"; afOpts: string; afAttrs: string[]; formats: [string, string][] };

type QArgs = {
  fmt: Fmt;
  attrs: string[] | null;
  constraints: string[];
  ids: { c: number; p: number | null }[];
  users: string[];
  limit: number | null;
  scanlimit: number | null;
  allusers: boolean;
  totals: boolean;
  forwards: boolean;
  name: string | null;
  pool: string | null;
  nobatch: boolean;
  statusFilter: number | null;
  since: string | null;
  version: boolean;
  schedd: boolean;
  compact: boolean;
  any: boolean;
};

class UsageError extends Error {
  constructor(message: string, public stdout = "") {
    super(message);
  }
}

// queue.cpp's usage() goes to stdout; only its head is reproduced
const Q_USAGE = "Usage: condor_q [general-opts] [restriction-list] [output-opts | analyze-opts]\n" +
  "\n    [general-opts] are\n\t-global\t\t\t Query all Schedulers in this pool\n\t-schedd-constraint\t Query all Schedulers matching this constraint\n" +
  "\t-submitter <submitter>\t Get queue of specific submitter\n\t-name <name>\t\t Name of Scheduler\n\t-pool <host>\t\t Use host as the central manager to query\n";
// status.cpp's usage() goes to stderr; only its head is reproduced
const STATUS_USAGE = "Usage: condor_status [help-opt] [query-opt] [custom-opts] [display-opts] [name ...]\n" +
  "    where [help-opt] is one of\n\t-help\t\t\tPrint this screen and exit\n\t-version\t\tPrint HTCondor version and exit\n" +
  "\t-diagnose\t\tPrint out query ad without performing query\n";

function unknownOption(tool: string, a: string): UsageError {
  // status.cpp firstPass: two spaces after "Error:"; queue.cpp: usage on stdout
  if (tool === "condor_status") return new UsageError(`Error:  Unknown option ${a}\n` + STATUS_USAGE.replace(/\n$/, ""));
  if (tool === "condor_q") return new UsageError(`Error: unrecognized argument ${a}`, Q_USAGE);
  return new UsageError(`Error: unrecognized argument ${a}`);
}

function parseArgs(tool: string, argv: string[]): QArgs {
  const q: QArgs = {
    fmt: { kind: "default", afOpts: "", afAttrs: [], formats: [] },
    attrs: null,
    constraints: [],
    ids: [],
    users: [],
    limit: null,
    scanlimit: null,
    allusers: false,
    totals: false,
    forwards: false,
    name: null,
    pool: null,
    nobatch: false,
    statusFilter: null,
    since: null,
    version: false,
    schedd: false,
    compact: false,
    any: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const need = () => {
      if (i + 1 >= argv.length) throw new UsageError(`Error: Argument ${a} requires another argument`);
      return argv[++i]!;
    };
    if (!a.startsWith("-") || a === "-") {
      if (a === "-") continue;
      const m = /^(\d+)(?:\.(\d+))?$/.exec(a);
      if (m) q.ids.push({ c: Number(m[1]), p: m[2] !== undefined ? Number(m[2]) : null });
      else if (tool === "condor_status") q.users.push(a); // machine name
      else q.users.push(a);
      continue;
    }
    const afm = /^--?(af|autoformat)(?::(.*))?$/i.exec(a);
    if (afm && (afm[1]!.toLowerCase() === "af" || true)) {
      q.fmt.kind = "af";
      q.fmt.afOpts = afm[2] ?? "";
      while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) q.fmt.afAttrs.push(argv[++i]!);
      if (i + 1 < argv.length && argv[i + 1] === "-") i++;
      continue;
    }
    if (a === "-jsonl" || a === "--jsonl") {
      q.fmt.kind = "jsonl";
      continue;
    }
    if (isOpt(a, "json", 2)) q.fmt.kind = "json";
    else if (isOpt(a, "xml", 1)) q.fmt.kind = "xml";
    else if (isOpt(a, "long", 1)) q.fmt.kind = "long";
    else if (isOpt(a, "format", 1)) {
      const f = need();
      const at = need();
      q.fmt.kind = "format";
      q.fmt.formats.push([f, at]);
    } else if (isOpt(a, "constraint", 3)) q.constraints.push(need());
    else if (isOpt(a, "attributes", 4)) q.attrs = need().split(/[,\s]+/).filter(Boolean);
    else if (tool === "condor_q" && isOpt(a, "limit", 3)) {
      // queue.cpp: a positive integer, checked at parse time
      if (i + 1 >= argv.length) throw new UsageError("Error: -limit requires the max number of results as an argument.");
      const v = argv[++i]!;
      if (!/^[+-]?\d+$/.test(v)) throw new UsageError(`Error: Unable to convert (${v}) to a number for -limit.`);
      if (Number(v) <= 0) throw new UsageError(`Error: ${Number(v)} is not a valid for -limit.`);
      q.limit = Number(v);
    } // -match, -scanlimit, -forwards, -backwards, -since, -completedsince are condor_history's: condor_q has no
    // such options (queue.cpp processCommandLineArguments) and condor_status neither
    else if (tool !== "condor_q" && (isOpt(a, "limit", tool === "condor_status" ? 2 : 3) || (tool === "condor_history" && isOpt(a, "match", 3)))) {
      q.limit = Number(need());
    } else if (tool === "condor_history" && isOpt(a, "scanlimit", 4)) q.scanlimit = Number(need());
    else if (isOpt(a, "allusers", 2)) q.allusers = true;
    else if (isOpt(a, "totals", 3)) q.totals = true;
    else if (tool === "condor_history" && isOpt(a, "forwards", 3)) q.forwards = true;
    else if (tool === "condor_history" && isOpt(a, "backwards", 4)) q.forwards = false;
    // condor_status has no -name: machines are positional arguments (status.cpp firstPass)
    else if (tool !== "condor_status" && isOpt(a, "name", 1)) q.name = need();
    else if (isOpt(a, "pool", 1)) q.pool = need();
    else if (isOpt(a, "addr", 2)) need();
    else if (isOpt(a, "nobatch", 3)) q.nobatch = true;
    else if (isOpt(a, "batch", 2)) q.nobatch = false;
    else if (tool === "condor_history" && isOpt(a, "since", 3)) q.since = need();
    else if (tool === "condor_history" && isOpt(a, "completedsince", 3)) need();
    else if (isOpt(a, "version", 3)) q.version = true;
    else if (
      isOpt(a, "wide", 1) || isOpt(a, "global", 1) || isOpt(a, "expert", 3) || isOpt(a, "local", 3) || isOpt(a, "debug", 3) ||
      isOpt(a, "startd", 3) || isOpt(a, "machine", 2) || isOpt(a, "better-analyze", 3) || isOpt(a, "dag", 3) || isOpt(a, "userlog", 5) || a.startsWith("-wide:")
    ) { /* accepted */ } else if (isOpt(a, "run", 1)) q.statusFilter = 2;
    else if (isOpt(a, "hold", 2) || isOpt(a, "held", 4)) q.statusFilter = 5;
    else if (isOpt(a, "idle", 2)) q.statusFilter = 1;
    else if (isOpt(a, "schedd", 3)) q.schedd = true;
    else if (isOpt(a, "compact", 3)) q.compact = true;
    else if (isOpt(a, "any", 2)) q.any = true;
    else if (isOpt(a, "submitter", 3) || isOpt(a, "file", 2) || isOpt(a, "jobads", 4) || isOpt(a, "userprio", 5)) need();
    else throw unknownOption(tool, a);
  }
  return q;
}

function buildFilter(q: QArgs, tool: string): { ok: (ad: Ad) => boolean; consTexts: string[]; nodes: Node[] } {
  const cons: Node[] = [];
  for (const c of q.constraints) {
    try {
      cons.push(parse(c));
    } catch (e) {
      if (e instanceof ParseError) {
        if (tool === "condor_q") throw new UsageError(`\n-- Parse error in constraint expression "${c}"`);
        throw new UsageError(`Error: Invalid constraint ${c}`);
      }
      throw e;
    }
  }
  const me = ownerName();
  const ownOnly = tool === "condor_q" && !q.allusers && !q.ids.length && !q.users.length;
  return {
    consTexts: q.constraints,
    nodes: cons,
    ok: (ad: Ad) => {
      if (q.ids.length || q.users.length) {
        const c = ad.num("ClusterId"), p = ad.num("ProcId");
        const owner = (ad.str("Owner") ?? "").toLowerCase();
        const hit = q.ids.some((i) => i.c === c && (i.p === null || i.p === p)) ||
          q.users.some((u) => u.toLowerCase() === owner || u.toLowerCase() === (ad.str("User") ?? "").toLowerCase());
        if (!hit) return false;
      }
      if (ownOnly && (ad.str("Owner") ?? "") !== me) return false;
      if (q.statusFilter !== null && ad.num("JobStatus") !== q.statusFilter) return false;
      for (const n of cons) if (!isTrue(evaluate(n, ad))) return false;
      return true;
    },
  };
}

// ---------------------------------------------------------------- -af / -format
function afRow(ad: Ad, attrs: string[], opts: string): string {
  const j = opts.includes("j"), l = opts.includes("l"), t = opts.includes("t"), comma = opts.includes(","), nl = opts.includes("n");
  const V = opts.includes("V"), raw = opts.includes("r");
  const fields: string[] = [];
  for (const a of attrs) {
    let v: string;
    if (raw) {
      const text = ad.get(a);
      v = text === undefined ? "undefined" : text;
    } else {
      const n = tryParse(a);
      v = n ? afValue(evaluate(n, ad), V) : "undefined";
    }
    fields.push(l ? `${a} = ${v}` : v);
  }
  if (j) fields.unshift(`${ad.num("ClusterId")}.${ad.num("ProcId")}`);
  let s = "";
  fields.forEach((f, i) => {
    if (nl) {
      s += f + "\n";
      return;
    }
    if (i > 0) s += t ? "\t" : " ";
    s += f;
    if (comma && i < fields.length - 1) s += ",";
  });
  if (!nl) s += "\n";
  if (opts.includes("g")) s += "\n";
  return s;
}
function afHeader(attrs: string[], opts: string): string {
  if (!opts.includes("h")) return "";
  const f = [...(opts.includes("j") ? ["ID"] : []), ...attrs];
  return f.join(opts.includes("t") ? "\t" : " ") + "\n";
}

function printfFormat(fmt: string, ad: Ad, attr: string): string {
  const f = fmt.replace(/\\n/g, "\n").replace(/\\t/g, "\t");
  const n = tryParse(attr);
  const v = n ? evaluate(n, ad) : { t: "u" as const };
  if (v.t === "u" && !ad.has(attr)) {
    if (!/%v/i.test(f)) return "";
  }
  return f.replace(/%(-?\d*)(?:\.(\d+))?([dsfvVgi])/, (_m, w: string, prec: string | undefined, c: string) => {
    let s: string;
    switch (c) {
      case "d":
      case "i":
        s = v.t === "i" || v.t === "r" ? String(Math.trunc(v.v)) : v.t === "b" ? (v.v ? "1" : "0") : "";
        break;
      case "f":
      case "g":
        s = v.t === "i" || v.t === "r" ? v.v.toFixed(prec ? Number(prec) : 6) : "";
        break;
      case "V":
        s = afValue(v, true);
        break;
      default:
        s = afValue(v, false);
    }
    const width = Number(w || 0);
    if (Math.abs(width) > s.length) s = width < 0 ? s.padEnd(-width) : s.padStart(width);
    return s;
  }).replace(/%%/g, "%");
}

// ---------------------------------------------------------------- writers
function writeAds(ads: Ad[], q: QArgs, opts: { serverTime: boolean; emptyJsonBrackets: boolean }): string {
  const st = nowSec();
  const attrs = q.attrs;
  // queue.cpp asks the schedd to stamp every ad with ServerTime for -long, -json and -xml (or when
  // -attributes names it), and prints it when there is no -attributes or it names ServerTime; the
  // schedd's stamp replaces an attribute of that name in the job's own ad (classad_oldnew.cpp).
  const stamp = opts.serverTime && (!attrs || attrs.some((a) => a.toLowerCase() === "servertime"));
  switch (q.fmt.kind) {
    case "json": {
      if (!ads.length) return opts.emptyJsonBrackets ? "[\n]\n" : "";
      const parts = ads.map((ad) => {
        if (stamp) {
          ad = ad.clone();
          ad.set("ServerTime", st);
        }
        return adToJson(ad, attrs ? attrs.filter((a) => ad.has(a)) : undefined);
      });
      return "[\n" + parts.join("\n,\n") + "\n]\n";
    }
    case "jsonl":
      return ads.map((ad) => adToJsonLine(ad, attrs ? attrs.filter((a) => ad.has(a)) : undefined) + "\n").join("");
    case "long":
    case "xml":
      return ads.map((ad) => {
        if (stamp) {
          ad = ad.clone();
          ad.set("ServerTime", st);
        }
        return adToLong(ad, attrs ?? undefined) + "\n";
      }).join("");
    case "af":
      if (!ads.length) return "";
      return afHeader(q.fmt.afAttrs, q.fmt.afOpts) + ads.map((ad) => afRow(ad, q.fmt.afAttrs, q.fmt.afOpts)).join("");
    case "format":
      return ads.map((ad) => q.fmt.formats.map(([f, a]) => printfFormat(f, ad, a)).join("")).join("");
    default:
      return "";
  }
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s);
const p2 = (n: number) => String(n).padStart(2, "0");
function mdhm(t: number): string {
  const d = new Date(t * 1000);
  return `${d.getMonth() + 1}/${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}`;
}
function dur(s: number): string {
  s = Math.max(0, Math.floor(s));
  return `${Math.floor(s / 86400)}+${p2(Math.floor(s / 3600) % 24)}:${p2(Math.floor(s / 60) % 60)}:${p2(s % 60)}`;
}
const ST = ["?", "I", "R", "X", "C", "H", ">", "S"];

function summary(ads: Ad[]): { jobs: number; c: number; x: number; i: number; r: number; h: number; s: number } {
  const n = { jobs: ads.length, c: 0, x: 0, i: 0, r: 0, h: 0, s: 0 };
  for (const a of ads) {
    switch (a.num("JobStatus")) {
      case 1:
        n.i++;
        break;
      case 2:
        n.r++;
        break;
      case 3:
        n.x++;
        break;
      case 4:
        n.c++;
        break;
      case 5:
        n.h++;
        break;
      case 7:
        n.s++;
        break;
    }
  }
  return n;
}
function sumLine(label: string, ads: Ad[]): string {
  const n = summary(ads);
  return `Total for ${label}: ${n.jobs} jobs; ${n.c} completed, ${n.x} removed, ${n.i} idle, ${n.r} running, ${n.h} held, ${n.s} suspended\n`;
}

function humanQueue(ads: Ad[], all: Ad[], q: QArgs, cfg: Config): string {
  const d = new Date();
  const stamp = `${p2(d.getMonth() + 1)}/${p2(d.getDate())}/${p2(d.getFullYear() % 100)} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  let s = `\n\n-- Schedd: ${cfg.scheddName} : ${scheddAddr(cfg).replace(/\?.*$/, "?...")} @ ${stamp}\n`;
  if (!q.totals) {
    if (q.nobatch || q.statusFilter !== null) {
      s += ` ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD\n`;
      const now = nowSec();
      for (const a of ads) {
        const id = `${a.num("ClusterId")}.${a.num("ProcId")}`;
        const run = (a.num("RemoteWallClockTime") ?? 0) + (a.num("JobStatus") === 2 ? now - (a.num("JobCurrentStartDate") ?? now) : 0);
        const cmd = (a.str("Cmd") ?? "").split("/").pop()! + (a.str("Args") ? " " + a.str("Args") : a.str("Arguments") ? " " + a.str("Arguments") : "");
        s += `${lpad(id, 7)}  ${pad(a.str("Owner") ?? "", 14)} ${lpad(mdhm(a.num("QDate") ?? 0), 11)} ${lpad(dur(run), 12)} ${
          ST[a.num("JobStatus") ?? 0] ?? "?"
        }  ${lpad(String(a.num("JobPrio") ?? 0), 3)} ${lpad(((a.num("ImageSize") ?? 0) / 1024).toFixed(1), 4)} ${cmd.slice(0, 40)}\n`;
      }
    } else {
      const groups = new Map<string, Ad[]>();
      for (const a of ads) {
        const key = `${a.str("Owner")}\u0000${a.str("JobBatchName") ?? "ID: " + a.num("ClusterId")}`;
        (groups.get(key) ?? groups.set(key, []).get(key)!).push(a);
      }
      const anyHeld = ads.some((a) => a.num("JobStatus") === 5);
      s += `OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE${anyHeld ? "   HOLD" : ""}  TOTAL JOB_IDS\n`;
      for (const [key, g] of groups) {
        const [owner, batch] = key.split("\u0000") as [string, string];
        const n = summary(g);
        const ids = g.map((a) => `${a.num("ClusterId")}.${a.num("ProcId")}`);
        const idText = ids.length === 1 ? ids[0]! : `${ids[0]} ... ${ids[ids.length - 1]}`;
        const f = (x: number) => lpad(x ? String(x) : "_", 6);
        s += `${owner} ${pad(batch, 12)} ${lpad(mdhm(Math.min(...g.map((a) => a.num("QDate") ?? 0))), 11)} ${f(n.c)} ${f(n.r)} ${f(n.i)}${
          anyHeld ? " " + f(n.h) : ""
        } ${lpad(String(g.length), 6)} ${idText}\n`;
      }
    }
  }
  s += "\n";
  const me = ownerName();
  s += sumLine("query", ads);
  s += sumLine(me, all.filter((a) => a.str("Owner") === me));
  s += sumLine("all users", all);
  return s;
}

function totalsAd(ads: Ad[], all: Ad[]): Ad {
  const t = new Ad();
  const n = summary(ads), m = summary(all.filter((a) => a.str("Owner") === ownerName())), u = summary(all);
  // sendDone (schedd.cpp): the summary ad always carries the schedd's clock.
  t.set("Owner", 0);
  t.set("ErrorCode", 0);
  t.set("ServerTime", nowSec());
  t.set("MyType", "Summary");
  const put = (prefix: string, x: typeof n) => {
    t.set(prefix + "Jobs", x.jobs);
    t.set(prefix + "Idle", x.i);
    t.set(prefix + "Running", x.r);
    t.set(prefix + "Held", x.h);
    t.set(prefix + "Completed", x.c);
    t.set(prefix + "Removed", x.x);
    t.set(prefix + "Suspended", x.s);
  };
  put("", n);
  put("My", m);
  put("Allusers", u);
  return t;
}

/**
 * One line per answer of condor_q and condor_history in `$MINICONDOR_HOME/answers.log`:
 * `ISO-time tool ads JSON-argv`, the job ads the schedd sent (the summary ad of -totals counts as
 * one). The benchmark and the tests count what each query of the sidecar cost with it; calls.log
 * keeps its format.
 */
function noteAnswer(tool: string, ads: number, argv: readonly string[]): void {
  try {
    fs.appendFileSync(path.join(homeDir(), "answers.log"), `${new Date().toISOString()} ${tool} ${ads} ${JSON.stringify(argv)}\n`);
  } catch { /* the log is for measuring only */ }
}

// ---------------------------------------------------------------- condor_q
export function condorQ(argv: string[]): number {
  const cfg = loadConfig();
  let q: QArgs;
  let filter: ReturnType<typeof buildFilter>;
  try {
    q = parseArgs("condor_q", argv);
    if (q.version) {
      out(VERSION + "\n" + PLATFORM + "\n");
      return 0;
    }
    filter = buildFilter(q, "condor_q");
  } catch (e) {
    if (e instanceof UsageError) {
      err(e.message + "\n");
      out(e.stdout);
      return 1;
    }
    throw e;
  }
  // queue.cpp: a -name that does not resolve ends condor_q before anything is asked
  if (q.name !== null && unresolvableHost(q.name)) {
    err(`Error: unknown host ${q.name}\n`);
    out("\n");
    err(wrappedText(UNKNOWN_HOST_INFO));
    return 1;
  }
  // -name asks the collector (-pool's, or this machine's) for the schedd ad
  // (docs/htcondor.md#remote-schedds-and-condor_q-errors)
  if (q.name !== null && q.pool !== null && !acceptablePool(q.pool, cfg)) {
    err(`Error: Couldn't contact the condor_collector on ${q.pool}.\n`);
    return 1;
  }
  if (q.name !== null && !acceptableSchedd(q.name, cfg)) {
    err(`Error: Collector has no record of schedd/submitter\n`);
    return 1;
  }
  const db = openDb();
  maybeEnsureSchedd(db);
  // The human table and -totals count every job; the other formats need only the rows a
  // constraint's ClusterId bound lets through (see leastCluster).
  const from = !q.totals && q.fmt.kind !== "default" ? leastCluster(filter.nodes) : 0;
  const all = from > 0 ? jobsFrom(db, from) : allJobs(db);
  let ads = all.filter(filter.ok);
  if (q.limit !== null && q.limit >= 0) ads = ads.slice(0, q.limit);
  if (q.totals) {
    // fetch_SummaryOnly (queue.cpp): the schedd sends the summary ad and no job ad.
    noteAnswer("condor_q", 1, argv);
    if (q.fmt.kind === "json") {
      out("[\n" + adToJson(totalsAd(ads, all)) + "\n]\n");
      return 0;
    }
    if (q.fmt.kind === "long") {
      out(adToLong(totalsAd(ads, all)) + "\n");
      return 0;
    }
    out(humanQueue(ads, all, q, cfg));
    return 0;
  }
  noteAnswer("condor_q", ads.length, argv);
  if (q.fmt.kind === "default") out(humanQueue(ads, all, q, cfg));
  else out(writeAds(ads, q, { serverTime: true, emptyJsonBrackets: false }));
  return 0;
}

// ---------------------------------------------------------------- condor_history
const HISTORY_HEADER = ` ID     OWNER          SUBMITTED   RUN_TIME     ST COMPLETED   CMD\n`;

export function condorHistory(argv: string[]): number {
  let q: QArgs;
  let filter: ReturnType<typeof buildFilter>;
  const cfg = loadConfig();
  try {
    q = parseArgs("condor_history", argv);
    if (q.version) {
      out(VERSION + "\n" + PLATFORM + "\n");
      return 0;
    }
    if (q.forwards && q.since !== null) throw new UsageError("Error: Argument -forwards cannot be combined with -since.");
    filter = buildFilter(q, "condor_history");
  } catch (e) {
    if (e instanceof UsageError) {
      err(e.message + "\n");
      return 1;
    }
    throw e;
  }
  // history.cpp: g_name and g_pool are std::strings, so an absent -pool prints as nothing. A schedd its
  // master stopped: the same line, then the (empty) table's header, and exit 0
  // (docs/htcondor.md#several-schedds-in-one-pool): nothing was reached, yet nothing says it failed.
  if (q.name !== null && selection.stopped) {
    err(`Unable to locate remote schedd (name=${q.name}, pool=${q.pool ?? ""}).\n`);
    if (q.fmt.kind === "default") out(HISTORY_HEADER);
    return 0;
  }
  if ((q.name !== null || q.pool !== null) && ((q.name !== null && !acceptableSchedd(q.name, cfg)) || (q.pool !== null && !acceptablePool(q.pool, cfg)))) {
    err(`Unable to locate remote schedd (name=${q.name ?? ""}, pool=${q.pool ?? ""}).\n`);
    return 1;
  }
  const db = openDb();
  const rows = db.query(`SELECT ad FROM history ORDER BY seq ${q.forwards ? "ASC" : "DESC"}`).all() as { ad: string }[];
  const ads: Ad[] = [];
  let scanned = 0;
  let sinceNode: Node | null = null;
  let sinceId: { c: number; p: number } | null = null;
  if (q.since !== null) {
    const m = /^(\d+)\.(\d+)$/.exec(q.since);
    if (m) sinceId = { c: Number(m[1]), p: Number(m[2]) };
    else sinceNode = tryParse(q.since);
  }
  const exactIds = q.ids.length > 0 && q.ids.every((i) => i.p !== null) && !q.users.length;
  const remaining = new Set(q.ids.map((i) => `${i.c}.${i.p}`));
  for (const r of rows) {
    if (q.scanlimit !== null && scanned >= q.scanlimit) break;
    scanned++;
    const ad = rowAd(r);
    if (sinceId && ad.num("ClusterId") === sinceId.c && ad.num("ProcId") === sinceId.p) break;
    if (sinceNode && isTrue(evaluate(sinceNode, ad))) break;
    if (!filter.ok(ad)) continue;
    ads.push(ad);
    if (q.limit !== null && q.limit >= 0 && ads.length >= q.limit) break;
    if (exactIds) {
      remaining.delete(`${ad.num("ClusterId")}.${ad.num("ProcId")}`);
      if (!remaining.size) break;
    }
  }
  noteAnswer("condor_history", ads.length, argv);
  if (q.fmt.kind === "default") {
    if (!ads.length) return 0;
    let s = HISTORY_HEADER;
    for (const a of ads) {
      const id = `${a.num("ClusterId")}.${a.num("ProcId")}`;
      const st = a.num("JobStatus") ?? 0;
      const done = a.num("CompletionDate") || a.num("EnteredCurrentStatus") || 0;
      s += ` ${pad(id, 6)} ${pad(a.str("Owner") ?? "", 14)} ${lpad(mdhm(a.num("QDate") ?? 0), 11)} ${lpad(dur(a.num("RemoteWallClockTime") ?? 0), 11)} ${
        ST[st] ?? "?"
      }  ${lpad(mdhm(done), 11)} ${a.str("Cmd") ?? ""}\n`;
    }
    out(s);
    return 0;
  }
  out(writeAds(ads, q, { serverTime: false, emptyJsonBrackets: true }));
  return 0;
}

// ---------------------------------------------------------------- condor_status
function scheddAd(cfg: Config, db: ReturnType<typeof openDb>): Ad {
  const s = new Ad();
  const jobs = allJobs(db);
  const n = summary(jobs);
  s.set("MyType", "Scheduler");
  s.set("Name", cfg.scheddName);
  s.set("Machine", cfg.host);
  s.set("MyAddress", scheddAddr(cfg));
  s.set("CondorVersion", VERSION);
  s.set("TotalRunningJobs", n.r);
  s.set("TotalIdleJobs", n.i);
  s.set("TotalHeldJobs", n.h);
  s.set("TotalJobAds", jobs.length);
  return s;
}

export function condorStatus(argv: string[]): number {
  const cfg = loadConfig();
  let q: QArgs;
  try {
    q = parseArgs("condor_status", argv);
    if (q.version) {
      out(VERSION + "\n" + PLATFORM + "\n");
      return 0;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err(e.message + "\n");
      return 1;
    }
    throw e;
  }
  // the only collector is this machine's: any other pool cannot be contacted (docs/htcondor.md#condor_status)
  if (q.pool !== null && !acceptablePool(q.pool, cfg)) {
    err(`Error: communication error\nError: Couldn't contact the condor_collector on ${q.pool}.\n`);
    return 1;
  }
  const db = openDb();
  const runs = allRuns(db);
  const owners = new Map<string, string>();
  for (
    const j of db.query("SELECT cluster, proc, owner FROM running r JOIN jobs j USING (cluster, proc)").all() as {
      cluster: number;
      proc: number;
      owner: string;
    }[]
  ) owners.set(`${j.cluster}.${j.proc}`, j.owner);
  let ads: Ad[];
  if (q.schedd) {
    // every schedd of the pool whose master has not stopped it: a stopped one has no ad in the collector
    const homes = [homeDir(), ...cfg.schedds.map((l) => scheddHome(homeDir(), l))].filter((h) => !loadFaults(h, false).stopped);
    ads = homes.map((h) => scheddAd(loadConfig(h), h === homeDir() ? db : openDb(h)));
  } else {
    ads = [machineAd(cfg, freeResources(cfg, runs), runs), ...runs.map((r) => dynamicSlotAd(cfg, r, owners.get(`${r.cluster}.${r.proc}`) ?? ownerName()))];
  }
  try {
    const cons = q.constraints.map((c) => parse(c));
    ads = ads.filter((a) => cons.every((n) => isTrue(evaluate(n, a))));
  } catch {
    err(`Error: Invalid constraint ${q.constraints.join(" ")}\n`);
    return 1;
  }
  if (q.users.length) {
    ads = ads.filter((a) =>
      q.users.some((u) =>
        (a.str("Name") ?? "").toLowerCase() === u.toLowerCase() || (a.str("Machine") ?? "").toLowerCase() === u.toLowerCase() ||
        (a.str("Name") ?? "").toLowerCase().endsWith("@" + u.toLowerCase())
      )
    );
  }
  if (q.limit !== null) ads = ads.slice(0, q.limit);
  if (q.fmt.kind !== "default") {
    out(writeAds(ads, q, { serverTime: false, emptyJsonBrackets: false }));
    return 0;
  }
  if (!ads.length) return 0;
  let s = "";
  if (!q.totals && !q.schedd) {
    s += `${pad("Name", 34)} ${pad("OpSys", 10)} ${pad("Arch", 8)} ${pad("State", 9)} ${pad("Activity", 8)} ${lpad("LoadAv", 6)} ${pad("Mem", 6)} ${
      lpad("ActvtyTime", 11)
    }\n\n`;
    const now = nowSec();
    for (const a of ads) {
      const la = a.num("LoadAvg") ?? 0;
      s += `${pad(a.str("Name") ?? "", 34)} ${pad(a.str("OpSys") ?? "", 10)} ${pad(a.str("Arch") ?? "", 8)} ${pad(a.str("State") ?? "", 9)} ${
        pad(a.str("Activity") ?? "", 8)
      } ${lpad(la.toFixed(3), 6)} ${lpad(String(a.num("Memory") ?? 0), 6)} ${lpad(dur(now - (a.num("EnteredCurrentActivity") ?? now)), 11)}\n`;
    }
  }
  if (q.schedd) {
    s += `${pad("Name", 34)} ${pad("Machine", 10)} RunningJobs   IdleJobs   HeldJobs\n\n`;
    for (const a of ads) {
      s += `${pad(a.str("Name") ?? "", 34)} ${pad(a.str("Machine") ?? "", 10)} ${lpad(String(a.num("TotalRunningJobs")), 11)} ${
        lpad(String(a.num("TotalIdleJobs")), 10)
      } ${lpad(String(a.num("TotalHeldJobs")), 10)}\n`;
    }
    return out(s), 0;
  }
  // totals (docs/htcondor.md#condor_status)
  const keyOf = (a: Ad) => `${a.str("Arch")}/${a.str("OpSys")}`;
  const keys = [...new Set(ads.map(keyOf))].sort();
  const w = Math.max(14, ...keys.map((k) => k.length));
  const row = (label: string, xs: Ad[]) => {
    const cnt = (st: string) => xs.filter((a) => a.str("State") === st).length;
    const bkidle = xs.filter((a) => a.str("State") === "Backfill" && a.str("Activity") === "Idle").length;
    return lpad(label, w) +
      `${lpad(String(xs.length), 6)} ${lpad(String(cnt("Owner")), 5)} ${lpad(String(cnt("Claimed")), 7)} ${lpad(String(cnt("Unclaimed")), 9)} ${
        lpad(String(cnt("Matched")), 7)
      } ${lpad(String(cnt("Preempting")), 10)} ${lpad(String(cnt("Drained")), 6)} ${lpad(String(cnt("Backfill")), 8)} ${lpad(String(bkidle), 6)}\n`;
  };
  s += "\n" + lpad("", w) +
    `${lpad("Total", 6)} ${lpad("Owner", 5)} ${lpad("Claimed", 7)} ${lpad("Unclaimed", 9)} ${lpad("Matched", 7)} ${lpad("Preempting", 10)} ${
      lpad("Drain", 6)
    } ${lpad("Backfill", 8)} ${lpad("BkIdle", 6)}\n\n`;
  for (const k of keys) s += row(k, ads.filter((a) => keyOf(a) === k));
  s += "\n" + row("Total", ads);
  out(s);
  return 0;
}

/**
 * The least ClusterId that the constraints together allow, read from their top-level `&&` terms:
 * `ClusterId >= n`, `ClusterId > n` or `ClusterId == n` with an integer n, and `false` (nothing).
 * Every job ad has its ClusterId and `false && x` is false, so a row below the bound cannot match
 * and condor_q need not read it: the sidecar's questions start with such a bound, and reading
 * every ad of 50,000 made each of them take seconds. 0 when there is no bound.
 */
export function leastCluster(nodes: Node[]): number {
  const terms = (n: Node): Node[] => n.k === "paren" ? terms(n.a) : n.k === "bin" && n.op === "&&" ? [...terms(n.a), ...terms(n.b)] : [n];
  let least = 0;
  for (const t of nodes.flatMap(terms)) {
    if (t.k === "lit" && t.v.t === "b" && !t.v.v) return Infinity;
    if (t.k !== "bin" || t.a.k !== "attr" || t.a.scope === "target" || t.a.name.toLowerCase() !== "clusterid") continue;
    if (t.b.k !== "lit" || t.b.v.t !== "i") continue;
    const n = t.b.v.v;
    if (t.op === ">=" || t.op === "==" || t.op === "=?=") least = Math.max(least, n);
    else if (t.op === ">") least = Math.max(least, n + 1);
  }
  return least;
}
