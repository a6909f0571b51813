// condor_submit. docs/htcondor.md#condor_submit, docs/htcondor.md#key-observations/docs/htcondor.md#transcripts
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { dlopen, FFIType } from "bun:ffi";
import { Ad, canonical } from "./classad.ts";
import { envToV2Raw, parseEnvV1, parseEnvV2Raw, parseV2Raw, v2QuotedToRaw } from "./argsenv.ts";
import {
  acceptablePool,
  acceptableSchedd,
  bumpGen,
  type Config,
  envHoldOnStart,
  err,
  homeDir,
  isOpt,
  loadConfig,
  metaGet,
  metaSet,
  nowSec,
  openDb,
  out,
  ownerName,
  PLATFORM,
  putJob,
  scheddAddr,
  tx,
  VERSION,
} from "./common.ts";
import { ulog } from "./userlog.ts";
import { ensureSchedd } from "./schedd.ts";
import { copyInto } from "./files.ts";

class SubmitError extends Error {
  constructor(public text: string, public stdoutPrefix = "") {
    super(text);
  }
}

type Stmt = { kind: "set"; key: string; value: string; line: number; raw: string } | { kind: "queue"; args: string; line: number };
type Var = { key: string; value: string; used: boolean; line: number };

const KNOWN = new Set(
  `universe executable arguments args environment env getenv initialdir initial_dir output error input log log_xml
transfer_input_files transfer_output_files should_transfer_files when_to_transfer_output transfer_executable request_cpus request_memory
request_disk request_gpus batch_name want_io_proxy job_max_vacate_time requirements accounting_group accounting_group_user periodic_remove
periodic_hold periodic_release on_exit_hold on_exit_remove periodic_hold_reason periodic_hold_subcode on_exit_hold_reason on_exit_hold_subcode
periodic_release_reason periodic_remove_reason max_retries retry_until success_exit_code hold notification notify_user priority stream_output stream_error
container_image docker_image transfer_container container_target_dir leave_in_queue rank description kill_sig remove_kill_sig hold_kill_sig
nice_user coresize image_size transfer_output_remaps output_destination x509userproxy use_x509userproxy use_oauth_services scitokens_file use_scitokens
max_materialize max_idle concurrency_limits job_lease_duration skip_filechecks copy_to_spool run_as_owner load_profile allowed_job_duration
allowed_execute_duration encrypt_input_files encrypt_output_files dont_encrypt_input_files dont_encrypt_output_files
erase_output_and_error_on_restart preserve_relative_executable job_ad_information_attrs email_attributes deferral_time deferral_window
deferral_prep_time job_machine_attrs want_graceful_removal keep_claim_idle docker_network_type container_service_names docker_pull_policy
gpus_minimum_capability gpus_maximum_capability gpus_minimum_memory gpus_minimum_runtime require_gpus cuda_version next_job_start_delay
max_transfer_input_mb max_transfer_output_mb transfer_plugins want_remote_io buffer_size buffer_block_size stack_size jar_files java_vm_args
grid_resource job_batch_name want_checkpoint checkpoint_exit_code transfer_checkpoint_files manifest want_container dagman_log submit_event_notes
on_exit_remove_reason job_max_retries transfer_input transfer_output want_job_ad accounting_group_user container_is_common`.split(/\s+/).filter(Boolean),
);

// ---------------------------------------------------------------- parsing the description
/**
 * Logical lines as src/condor_utils/config.cpp getline_implementation reads a submit file (Parse_macros,
 * options COMMENT_DOESNT_CONTINUE | CONTINUE_MAY_BE_COMMENTED_OUT): every physical line is trimmed at both
 * ends; a trailing `\` is dropped and the next physical line is appended (so `rank = 1 \` then
 * `priority = 2` is one line, `rank = 1 priority = 2`: observed); a line that starts with `#` does not
 * continue; a `#` line inside a continuation keeps only its last character. `line` is the number of the
 * last physical line read, as the reader's counter is when the line is reported.
 */
function logicalLines(text: string): { text: string; line: number }[] {
  const phys = text.split(/\r?\n/);
  if (phys.length && phys[phys.length - 1] === "") phys.pop();
  const res: { text: string; line: number }[] = [];
  let i = 0;
  while (i < phys.length) {
    let buf = "";
    let first = true;
    let comment = false;
    for (;;) {
      let t = phys[i++]!.trim();
      if (t.startsWith("#")) {
        if (first) comment = true;
        else t = t.slice(-1);
      }
      first = false;
      if (t.endsWith("\\")) {
        buf += t.slice(0, -1);
        if (!comment && i < phys.length) continue;
      } else buf += t;
      break;
    }
    res.push({ text: buf, line: i });
  }
  return res;
}

function parseLines(text: string, fileLabel: string, isAppend = false): Stmt[] {
  const lines = logicalLines(text);
  const out: Stmt[] = [];
  for (let i = 0; i < lines.length; i++) {
    const { text: t, line: lineNo } = lines[i]!;
    if (!t || t.startsWith("#")) continue;
    if (/^queue(\s|$)/i.test(t)) {
      let args = t.slice(5).trim();
      if (args.includes("(") && !args.includes(")")) {
        while (i + 1 < lines.length) {
          const n = lines[++i]!.text;
          args += "\n" + n;
          if (n.includes(")")) break;
        }
      }
      out.push({ kind: "queue", args, line: lineNo });
      continue;
    }
    const m = /^([+A-Za-z_][A-Za-z0-9_.+-]*)\s*=\s*(.*)$/s.exec(t);
    if (!m) {
      if (isAppend) throw new SubmitError(`\nERROR: Failed to parse -a argument line (#${lineNo}).\n`);
      throw new SubmitError(`\nERROR: on Line ${lineNo} of ${fileLabel}: \n\nERROR: Failed to parse command file (line ${lineNo}).\n`);
    }
    out.push({ kind: "set", key: m[1]!, value: m[2]!.trim(), line: lineNo, raw: t });
  }
  return out;
}

type QueueSpec = { count: number; vars: string[]; items: string[] | null };
function parseQueueArgs(args: string, cwd: string): QueueSpec {
  const a = args.trim();
  if (!a) return { count: 1, vars: [], items: null };
  const m = /^(\d+)?\s*(?:([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s+(in|from|matching)\s+([\s\S]*))?$/i.exec(a);
  if (!m) throw new SubmitError(`\nERROR: Failed to parse queue statement: queue ${a}\n`);
  const count = m[1] ? parseInt(m[1], 10) : 1;
  if (!m[2]) return { count, vars: [], items: null };
  const vars = m[2].split(",").map((x) => x.trim());
  const kind = m[3]!.toLowerCase();
  let rest = m[4]!.trim();
  let items: string[];
  if (kind === "in") {
    rest = rest.replace(/^\(/, "").replace(/\)\s*$/, "");
    items = rest.split(/\r?\n/).flatMap((l) => (vars.length > 1 ? [l.trim()] : l.split(/[,\s]+/))).map((x) => x.trim()).filter(Boolean);
  } else if (kind === "from") {
    const f = path.resolve(cwd, rest);
    try {
      items = fs.readFileSync(f, "utf8").split(/\r?\n/).map((x) => x.trim()).filter((x) => x && !x.startsWith("#"));
    } catch {
      throw new SubmitError(`\nERROR: Failed to open ${rest}\n`);
    }
  } else {
    const pats = rest.split(/\s+/).filter(Boolean);
    items = [];
    for (const p of pats) {
      const g = new Bun.Glob(p);
      for (const f of g.scanSync({ cwd, onlyFiles: true })) items.push(f);
    }
    items.sort();
  }
  return { count, vars, items };
}

// ---------------------------------------------------------------- macro expansion
function findClose(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === "(") depth++;
    else if (s[i] === ")") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function expand(s: string, look: (name: string) => string | undefined, depth = 0): string {
  if (depth > 20 || !s.includes("$")) return s;
  let o = "";
  let i = 0;
  while (i < s.length) {
    if (s.startsWith("$$(", i)) {
      const j = findClose(s, i + 2);
      if (j < 0) {
        o += s.slice(i);
        break;
      }
      o += s.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    // $ENV(NAME[:default]) is the environment of condor_submit itself; unset and without a default it is the
    // word UNDEFINED (src/condor_utils/config.cpp, SPECIAL_MACRO_ID_ENV)
    if (s.startsWith("$ENV(", i)) {
      const j = findClose(s, i + 4);
      if (j >= 0) {
        const body = expand(s.slice(i + 5, j), look, depth + 1);
        const c = body.indexOf(":");
        const name = c >= 0 ? body.slice(0, c) : body;
        o += process.env[name] ?? (c >= 0 ? body.slice(c + 1) : "UNDEFINED");
        i = j + 1;
        continue;
      }
    }
    if (s.startsWith("$(", i)) {
      const j = findClose(s, i + 1);
      if (j >= 0) {
        // the inner macro first: $(V_dir_$(Step)) looks up V_dir_0, V_dir_1, ...
        // (docs/htcondor.md#submitting-many-pods-at-once)
        let name = expand(s.slice(i + 2, j), look, depth + 1);
        let def: string | undefined;
        const c = name.indexOf(":");
        if (c >= 0) {
          def = name.slice(c + 1);
          name = name.slice(0, c);
        }
        const v = look(name.trim());
        // the default also stands in for a value that is empty (config.cpp: `! tvalue || ! tvalue[0]`)
        o += expand(v || (def ?? ""), look, depth + 1);
        i = j + 1;
        continue;
      }
    }
    o += s[i++];
  }
  return o;
}

// ---------------------------------------------------------------- units
export function parseSize(v: string, baseBytes: number): number | null {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGTkmgt])?[bB]?\s*$/.exec(v);
  if (!m) return null;
  const x = parseFloat(m[1]!);
  const mult: Record<string, number> = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };
  const bytes = m[2] ? x * mult[m[2].toLowerCase()]! : x * baseBytes;
  return Math.ceil(bytes / baseBytes);
}

const truthy = (v: string | undefined) => v !== undefined && /^(true|yes|t|y|1)$/i.test(v.trim());

// ---------------------------------------------------------------- command line
type SubmitArgs = {
  terse: boolean;
  spool: boolean;
  verbose: boolean;
  dryRun: string | null;
  file: string | null;
  appends: string[];
  cmdMacros: [string, string][];
  queueArg: string | null;
  batchName: string | null;
  scheddName: string | null;
  pool: string | null;
};

const SUBMIT_USAGE = "Usage: condor_submit [options] [<attrib>=<value>] [- | <submit-file>]\n    [options] are\n" +
  "\t-file <submit-file>\tRead Submit commands from <submit-file>\n\t-terse  \t\tDisplay terse output, jobid ranges only\n" +
  "\t-verbose\t\tDisplay verbose output, jobid and full job ClassAd\n\t-debug  \t\tDisplay debugging output\n" +
  "\t-append <line>\t\tadd line to submit file before processing\n\t              \t\t(overrides submit file; multiple -a lines ok)\n" +
  "\t-queue <queue-opts>\tappend Queue statement to submit file before processing\n" +
  "\t-batch-name <name>\tappend a line to submit file that sets the batch name\n\t-disable\t\tdisable file permission checks\n" +
  "\t-name <name>\t\tsubmit to the specified schedd\n\t-remote <name>\t\tsubmit to the specified remote schedd\n\t              \t\t(implies -spool)\n" +
  '\t-addr <ip:port>\t\tsubmit to schedd at given "sinful string"\n\t-spool\t\t\tspool all files to the schedd\n' +
  "\t-pool <host>\t\tUse host as the central manager to query\n\t<attrib>=<value>\tSet <attrib>=<value> before reading the submit file.\n";

/** The command line as src/condor_submit.V6/submit.cpp reads it; a number is the exit code of a call that ends here. */
function parseSubmitArgs(argv: string[], quiet = false): SubmitArgs | number {
  const say = (s: string, to: "out" | "err" = "err") => {
    if (!quiet) (to === "out" ? out : err)(s);
  };
  const o: SubmitArgs = {
    terse: false,
    spool: false,
    verbose: false,
    dryRun: null,
    file: null,
    appends: [],
    cmdMacros: [],
    queueArg: null,
    batchName: null,
    scheddName: null,
    pool: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const need = (): string | null => {
      if (i + 1 >= argv.length) {
        say(`condor_submit: ${a} requires another argument\n`);
        return null;
      }
      return argv[++i]!;
    };
    if (a === "-") {
      o.file = "-";
      continue;
    }
    if (a.startsWith("-")) {
      let v: string | null = "";
      if (isOpt(a, "verbose", 1)) {
        o.verbose = true;
        o.terse = false;
      } else if (isOpt(a, "terse", 3)) {
        o.terse = true;
        o.verbose = false;
      } else if (isOpt(a, "spool", 1)) o.spool = true;
      else if (isOpt(a, "remote", 1)) {
        v = o.scheddName = need();
        o.spool = true;
      } else if (isOpt(a, "name", 1)) v = o.scheddName = need();
      else if (isOpt(a, "pool", 2)) v = o.pool = need();
      else if (isOpt(a, "address", 2)) v = need();
      else if (isOpt(a, "append", 1)) {
        v = need();
        if (v !== null) o.appends.push(v);
      } else if (isOpt(a, "batch-name", 1)) v = o.batchName = need();
      else if (isOpt(a, "file", 2)) v = o.file = need();
      else if (isOpt(a, "queue", 1)) {
        const parts: string[] = [];
        while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) parts.push(argv[++i]!);
        if (!parts.length) {
          say(`condor_submit: ${a} requires at least one argument\n`);
          return 1;
        }
        o.queueArg = parts.join(" ");
      } else if (isOpt(a, "dry-run", 3)) v = o.dryRun = need();
      else if (
        isOpt(a, "disable", 3) || isOpt(a, "debug", 2) || isOpt(a, "factory", 2) || isOpt(a, "single-cluster", 3) || isOpt(a, "unused", 1)
      ) { /* accepted */ } else if (isOpt(a, "maxjobs", 3)) v = need();
      else if (isOpt(a, "version", 3)) {
        say(VERSION + "\n" + PLATFORM + "\n", "out");
        return 0;
      } else if (isOpt(a, "help", 1)) {
        say(SUBMIT_USAGE, "out");
        return 0;
      } else {
        say(SUBMIT_USAGE);
        return 1;
      }
      if (v === null) return 1;
      continue;
    }
    // Any other argument with an '=' is an attrib=value pair, a path too: is_valid_param_name
    // allows letters, digits, '_', '.' and '/'.
    const eq = a.indexOf("=");
    if (eq >= 0) {
      const name = a.slice(0, eq).trim();
      if (!/^[A-Za-z0-9_./]+$/.test(name)) {
        say(`condor_submit: invalid attribute name '${name}' for attrib=value assigment\n`);
        return 1;
      }
      o.cmdMacros.push([name, a.slice(eq + 1).trim()]);
      continue;
    }
    o.file = a;
  }
  return o;
}

/**
 * What stdout holds once condor_submit has opened the submit file and before it talks to the schedd:
 * "Submitting job(s)" without a newline, unless -terse or the file is stdin
 * (docs/htcondor.md#what-condor_submit-prints, docs/htcondor.md#condor_submit-exit-codes-and-errors).
 */
export function submitBanner(argv: string[]): string {
  const o = parseSubmitArgs(argv, true);
  if (typeof o === "number" || o.terse || o.file === "-") return "";
  return o.dryRun !== null ? "Dry-Run job(s)" : "Submitting job(s)";
}

// ---------------------------------------------------------------- the schedd's one session at a time
const LOCK_EX = 2;

/** libc's flock, through Bun's FFI; null where no libc is found (then only sqlite's write lock orders the commits). */
const flock = (() => {
  for (const lib of ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
    try {
      return dlopen(lib, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } }).symbols.flock;
    } catch { /* the next name */ }
  }
  return null;
})();

/**
 * A schedd serves one submit at a time (docs/htcondor.md#one-submit-at-a-time): condor_submit opens its
 * queue-management session when it reaches the first queue statement and builds every job inside it;
 * the schedd's one thread reads that session's requests until the commit and the disconnect, while
 * the next condor_submit waits. Here the session is `<home>/submit.lock` (flock), held from before the
 * first job is built until the commit: a waiting condor_submit sleeps in the kernel and wakes as the
 * holder ends or dies, as a queued connection is served when the schedd is free, and never gives up
 * (sqlite's busy wait would poll, and fail after 10 s). `holdMs`: fault `slowcommit`, a schedd that
 * takes that much longer over each session. Returns the end of the session.
 */
async function openSession(holdMs: number): Promise<() => void> {
  const home = homeDir();
  fs.mkdirSync(home, { recursive: true });
  const fd = fs.openSync(path.join(home, "submit.lock"), "a");
  // Killed while it waits (its caller's timeout), the process dies at once: no signal handler runs here.
  if (flock && flock(fd, LOCK_EX) !== 0) throw new Error(`flock of ${path.join(home, "submit.lock")} failed`);
  if (holdMs > 0) await Bun.sleep(holdMs);
  return () => fs.closeSync(fd);
}

// ---------------------------------------------------------------- main
export interface SubmitFaults {
  /**
   * Runs once the jobs are in the queue (and spooled, and a schedd runs them), before anything is
   * printed: fault `slowafter:<ms>`, a condor_submit its caller kills after the schedd committed the job.
   */
  afterCommit?: () => Promise<void>;
  /** Fault `slowcommit:<ms>`: the session holds the queue this much longer before its commit. */
  holdMs?: number;
}

export async function condorSubmit(argv: string[], faults: SubmitFaults = {}): Promise<number> {
  const { afterCommit } = faults;
  const cwd = process.cwd();
  const cfg = loadConfig();
  const parsed = parseSubmitArgs(argv);
  if (typeof parsed === "number") return parsed;
  const { terse, spool, dryRun, file, appends, cmdMacros, batchName, scheddName, pool } = parsed;
  let { verbose, queueArg } = parsed;

  if (scheddName !== null && (!acceptableSchedd(scheddName, cfg) || (pool !== null && !acceptablePool(pool, cfg)))) {
    err(`\nERROR: Can't find address of schedd ${scheddName}\n`);
    return 1;
  }

  // read the description
  let text: string;
  let fileLabel = file ?? "<stdin>";
  const fromStdin = file === "-" || (file === null && queueArg === null);
  if (file === "-" && !terse) verbose = true;
  if (fromStdin) {
    try {
      text = fs.readFileSync(0, "utf8");
    } catch {
      text = "";
    }
    fileLabel = "<stdin>";
  } else if (file === null) text = "";
  else {
    try {
      text = fs.readFileSync(path.resolve(cwd, file), "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const msg = code === "EACCES" ? "Permission denied" : code === "EISDIR" ? "Is a directory" : "No such file or directory";
      err(`\nERROR: Failed to open command file (${file}) (${msg})\n`);
      return 1;
    }
  }

  try {
    let stmts = parseLines(text, fileLabel);
    const appStmts: Stmt[] = [];
    for (const [n, l] of appends.entries()) {
      const s = parseLines(l, "-a", true).map((x) => ({ ...x, line: n + 1 }));
      for (const x of s) {
        if (x.kind === "queue") {
          if (queueArg !== null) throw new SubmitError(`\nERROR: -queue argument conflicts with queue statement in submit file\n`);
          queueArg = x.args;
        } else appStmts.push(x);
      }
    }
    if (batchName !== null) {
      appStmts.push({ kind: "set", key: "MY.JobBatchName", value: batchName.startsWith('"') ? batchName : `"${batchName}"`, line: 0, raw: "" });
    }
    const hasQueue = stmts.some((s) => s.kind === "queue");
    if (queueArg !== null) {
      if (hasQueue) {
        const q = stmts.find((s) => s.kind === "queue")!;
        throw new SubmitError(
          `\nERROR: on Line ${q.line} of ${fileLabel}: -queue argument conflicts with queue statement in submit file\n\nERROR: Failed to parse command file (line ${q.line}).\n`,
        );
      }
      stmts.push({ kind: "queue", args: queueArg, line: 0 });
    } else if (!hasQueue) stmts.push({ kind: "queue", args: "", line: 0 });
    // -a lines go just before the first queue statement
    const qi = stmts.findIndex((s) => s.kind === "queue");
    stmts = [...stmts.slice(0, qi), ...appStmts, ...stmts.slice(qi)];

    const endSession = dryRun === null ? await openSession(faults.holdMs ?? 0) : null;
    const db = dryRun === null ? openDb() : null;
    const owner = ownerName();
    // src/condor_schedd.V6/qmgmt.cpp SetAttribute(Owner): 'Setting job owner to "root" is not permitted'. condor_submit
    // sends attributes without waiting for acks (SUBMIT_NOACK_ON_SETATTRIBUTE), so the refusal only surfaces at the
    // commit, after a dot per proc (src/condor_submit.V6/submit.cpp)
    const rootRefused = owner === "root" && process.env.MINICONDOR_ALLOW_ROOT !== "1";
    const qdate = nowSec();
    const warnings: string[] = [];
    // one cluster per queue statement (observed: several `queue` statements made one cluster each)
    type Cluster = { cluster: number; ads: Ad[] };
    const clusters: Cluster[] = [];
    let queueStmts = 0;
    const build = (firstCluster: number) => {
      clusters.length = 0;
      warnings.length = 0;
      queueStmts = 0;
      let nextCluster = firstCluster;
      const built = () => clusters.flatMap((c) => c.ads.map((a) => ({ c: c.cluster, a })));
      const vars = new Map<string, Var>();
      for (const [k, v] of cmdMacros) vars.set(k.toLowerCase(), { key: k, value: v, used: true, line: 0 });
      for (const s of stmts) {
        if (s.kind === "set") {
          vars.set(s.key.toLowerCase(), { key: s.key, value: s.value, used: false, line: s.line });
          continue;
        }
        queueStmts++;
        const q = parseQueueArgs(s.args, cwd);
        const items = q.items ?? [null];
        let itemIndex = 0;
        let cl: Cluster | null = null;
        for (const item of items) {
          for (let step = 0; step < q.count; step++) {
            const itemVars = new Map<string, string>();
            if (item !== null) {
              if (q.vars.length <= 1) itemVars.set((q.vars[0] ?? "item").toLowerCase(), item);
              else {
                const parts = item.split(/[,\s]+/);
                q.vars.forEach((v, k) => itemVars.set(v.toLowerCase(), parts[k] ?? ""));
              }
            }
            if (!cl) {
              cl = { cluster: nextCluster++, ads: [] };
              clusters.push(cl);
            }
            const proc = cl.ads.length;
            let own: Ad;
            try {
              own = buildAd(vars, itemVars, { cluster: cl.cluster, proc, step, itemIndex, qdate, owner, cwd, cfg, spool, fileLabel: file ?? "", warnings });
            } catch (e) {
              // every job built before the bad one was already sent: a dot each, or its ad with -verbose (submit.cpp queue_item)
              if (e instanceof SubmitError) {
                const done = built();
                e.stdoutPrefix = verbose ? done.map(({ c, a }) => `\n** Proc ${c}.${a.num("ProcId")}:\n` + longForm(a)).join("") : ".".repeat(done.length);
              }
              throw e;
            }
            cl.ads.push(proc === 0 ? own : inheritClusterAd(cl.ads[0]!, own));
          }
          itemIndex++;
        }
      }
      // submit_utils.cpp warn_unused: every line nothing looked up, but +Attr and dotted names (MY.x, FACTORY.x, ...)
      for (const v of vars.values()) {
        if (v.used) continue;
        const k = v.key.toLowerCase();
        if (
          k.startsWith("+") || k.includes(".") || KNOWN.has(k) || k.startsWith("request_") || k.startsWith("vm_") || k.startsWith("cron_") ||
          k.startsWith("globus_") || k.startsWith("docker_") || k.startsWith("container_")
        ) continue;
        warnings.push(`WARNING: the line '${v.key} = ${v.value}' was unused by condor_submit. Is it a typo?\n`);
      }
      for (const c of clusters) for (const a of c.ads) a.set("TotalSubmitProcs", c.ads.length);
    };
    const allAds = () => clusters.flatMap((c) => c.ads);
    if (db) {
      try {
        tx(db, () => {
          build(metaGet(db, "next_cluster") || 1);
          const ads = allAds();
          if (ads.length === 0) return;
          if (rootRefused) {
            throw new SubmitError(
              `\nERROR: Failed to commit job submission into the queue.\nERROR: Setting job owner to "root" is not permitted\n`,
              verbose ? ads.map((a) => `\n** Proc ${a.num("ClusterId")}.${a.num("ProcId")}:\n` + longForm(a)).join("") : ".".repeat(ads.length),
            );
          }
          metaSet(db, "next_cluster", clusters[clusters.length - 1]!.cluster + 1);
          for (const a of ads) putJob(db, a);
          // a hold-on-start fault given to this call belongs to these jobs, whichever schedd runs them
          const hold = envHoldOnStart();
          if (hold) {
            for (const a of ads) {
              db.query("INSERT OR REPLACE INTO job_faults (cluster, proc, hold) VALUES (?, ?, ?)").run(
                a.num("ClusterId")!,
                a.num("ProcId")!,
                JSON.stringify(hold),
              );
            }
          }
          // the submit event goes to the user log before the schedd can see (and start) the job
          for (const a of ads) ulog(a, 0, `Job submitted from host: ${scheddAddr(cfg)}`, "", qdate);
          bumpGen(db);
        });
      } finally {
        endSession?.();
      }
    } else build(1);

    const ads = allAds();
    // src/condor_submit.V6/submit.cpp: printed once the queue statements are processed, before the commit
    if (queueStmts > 1) {
      err(
        "\nWarning: Use of multiple queue statements in a single submit file is deprecated." +
          "\n         This functionality will be removed in the 25.x feature series. To see" +
          "\n         how multiple queue statements can be converted into one visit:" +
          "\nhttps://htcondor.readthedocs.io/en/latest/auto-redirect.html?category=example&tag=convert-multi-queue-statements\n",
      );
    }
    if (ads.length === 0) {
      if (!terse) err("\nWARNING: file contains no queue statement or zero jobs were queued\n");
      return 0;
    }
    if (dryRun !== null) {
      for (const w of warnings) err(w);
      const text2 = ads.map((a) => {
        const o = a.toObject();
        return Object.keys(o).sort().map((k) => `${k}=${o[k]}`).join("\n") + "\n";
      }).join("\n");
      if (dryRun === "-") out(text2);
      else fs.writeFileSync(dryRun, text2);
      if (!terse) out(`Dry-Run job(s)${".".repeat(ads.length)}\n${ads.length} job(s) dry-run to cluster 1.\n`);
      return 0;
    }
    // spool the input sandbox (job is held with code 16 until the schedd sees the marker)
    if (spool) { for (const a of ads) spoolInput(a); }
    ensureSchedd(db!);
    if (afterCommit) await afterCommit();
    if (terse) {
      for (const c of clusters) out(`${c.cluster}.0 - ${c.cluster}.${c.ads.length - 1}\n`);
    } else if (verbose) {
      for (const a of ads) out(`\n** Proc ${a.num("ClusterId")}.${a.num("ProcId")}:\n` + longForm(a));
    } else {
      out(`Submitting job(s)${".".repeat(ads.length)}\n` + clusters.map((c) => `${c.ads.length} job(s) submitted to cluster ${c.cluster}.\n`).join(""));
      err(`To monitor your job(s), run: condor_watch_q -clusters ${clusters.map((c) => c.cluster).join(" ")}\n`);
    }
    // the unused-line warnings come last (submit.cpp main, after the commit)
    for (const w of warnings) err(w);
    return 0;
  } catch (e) {
    if (e instanceof SubmitError) {
      // the banner is out before the file is parsed, so parse errors follow it too (src/condor_submit.V6/submit.cpp main)
      if (!terse && file !== "-") out((dryRun !== null ? "Dry-Run job(s)" : "Submitting job(s)") + e.stdoutPrefix);
      else if (verbose) out(e.stdoutPrefix.startsWith("\n**") ? e.stdoutPrefix : "");
      err(e.text);
      return 1;
    }
    throw e;
  }
}

/**
 * Job 0's ad forms the cluster ad; a later job carries only what it sets itself and reads the rest through the
 * cluster ad (submit.cpp sends the cluster ad, then each proc's own attributes). So a command a later job leaves
 * empty, which then sets nothing, shows job 0's value (the leak table in
 * docs/htcondor.md#submitting-many-pods-at-once).
 */
function inheritClusterAd(clusterAd: Ad, own: Ad): Ad {
  const ad = clusterAd.clone();
  for (const [k, v] of Object.entries(own.toObject())) ad.setText(k, v);
  return ad;
}

function longForm(a: Ad): string {
  const o = a.toObject();
  return Object.keys(o).sort((x, y) => x.toLowerCase().localeCompare(y.toLowerCase())).map((k) => `${k} = ${o[k]}\n`).join("");
}

type Ctx = {
  cluster: number;
  proc: number;
  step: number;
  itemIndex: number;
  qdate: number;
  owner: string;
  cwd: string;
  cfg: Config;
  spool: boolean;
  fileLabel: string;
  warnings: string[];
};

function buildAd(vars: Map<string, Var>, itemVars: Map<string, string>, c: Ctx): Ad {
  const specials = (name: string): string | undefined => {
    const n = name.toLowerCase();
    switch (n) {
      case "cluster":
      case "clusterid":
        return String(c.cluster);
      case "process":
      case "procid":
        return String(c.proc);
      case "step":
        return String(c.step);
      case "itemindex":
      case "row":
        return String(c.itemIndex);
      case "jobid":
        return `${c.cluster}.${c.proc}`;
      case "dollar":
        return "$";
      case "owner":
        return c.owner;
    }
    if (itemVars.has(n)) return itemVars.get(n);
    if (n.startsWith("my.")) {
      const v = vars.get("+" + n.slice(3)) ?? vars.get(n);
      if (v) {
        v.used = true;
        return v.value;
      }
      return undefined;
    }
    const v = vars.get(n);
    if (v) {
      v.used = true;
      return v.value;
    }
    return undefined;
  };
  // submit_utils.cpp submit_param: a value that expands to nothing is no value at all, so the command gets
  // its default (observed: `V_cpus_2 =` gave RequestCpus 1) and, in a later job, job 0's value shows through
  const get = (k: string): string | undefined => {
    const v = vars.get(k.toLowerCase());
    if (!v) return undefined;
    v.used = true;
    const x = expand(v.value, specials).trim();
    return x === "" ? undefined : x;
  };
  const ad = new Ad();
  const cfg = c.cfg;
  const universeRaw = (get("universe") ?? "vanilla").toLowerCase();
  const universes: Record<string, number> = {
    vanilla: 5,
    docker: 5,
    container: 5,
    scheduler: 7,
    local: 12,
    grid: 9,
    java: 10,
    parallel: 11,
    vm: 13,
    standard: 1,
  };
  if (!(universeRaw in universes)) throw new SubmitError(`ERROR: I don't know about the '${universeRaw}' universe.\n`);

  // container
  const containerImage = get("container_image");
  const dockerImage = get("docker_image");
  if (containerImage && dockerImage) throw new SubmitError(`ERROR: docker_image and container_image cannot both be specified\n`);
  if (dockerImage && universeRaw !== "docker" && universeRaw !== "vanilla") { /* allowed */ }
  const image = containerImage ?? (dockerImage ? (dockerImage.startsWith("docker:") ? dockerImage : "docker://" + dockerImage) : undefined);
  const isContainer = image !== undefined || universeRaw === "container" || universeRaw === "docker";
  if (isContainer && !image) throw new SubmitError(`ERROR: container jobs require a container_image or docker_image\n`);
  if (image && /^(instance|library|shub):\/\//.test(image)) throw new SubmitError(`ERROR: '${image}' is not a valid container image\n`);

  // executable
  const exeRaw = get("executable");
  const transferExe = !(get("transfer_executable") !== undefined && !truthy(get("transfer_executable")));
  let cmd = "";
  if (!exeRaw) {
    if (!isContainer) throw new SubmitError(`\nERROR: No 'executable' parameter was provided\n`);
  } else {
    cmd = path.resolve(c.cwd, exeRaw);
    if (transferExe) {
      let st: fs.Stats | null = null;
      try {
        st = fs.statSync(cmd);
      } catch {
        st = null;
      }
      if (!st) throw new SubmitError(`\nERROR: Can't access executable file ${cmd}: No such file or directory\n`);
      if (st.isFile() && st.size === 0) throw new SubmitError(`\nERROR: Executable file ${cmd} has zero length\n`);
    }
  }

  const iwdRaw = get("initialdir") ?? get("initial_dir");
  const iwd = iwdRaw ? path.resolve(c.cwd, iwdRaw) : c.cwd;
  // submit_utils.cpp SetIWD: access(F_OK|X_OK); one bad job fails the whole submit (observed)
  let iwdOk = true;
  try {
    fs.accessSync(iwd, fs.constants.X_OK);
  } catch {
    iwdOk = false;
  }
  if (iwdRaw && !iwdOk) throw new SubmitError(`ERROR: No such directory: ${iwd}\n`);

  // --- base ad (test/minicondor/fixtures/hello.txt q-json-idle)
  const owner = c.owner;
  ad.set("MyType", "Job");
  ad.set("TargetType", "Machine");
  ad.set("ClusterId", c.cluster);
  ad.set("ProcId", c.proc);
  ad.set("Owner", owner);
  ad.set("User", `${owner}@${cfg.host}`);
  ad.set("QDate", c.qdate);
  ad.set("EnteredCurrentStatus", c.qdate);
  ad.set("JobStatus", 1);
  ad.set("GlobalJobId", `${cfg.scheddName}#${c.cluster}.${c.proc}#${c.qdate}`);
  ad.set("JobUniverse", universes[universeRaw]!);
  if (cmd) ad.set("Cmd", cmd);
  ad.set("Iwd", iwd);
  ad.set("CondorVersion", VERSION);
  ad.set("CondorPlatform", PLATFORM);
  ad.set("SubmitVersion", VERSION);
  for (
    const k of [
      "CommittedSlotTime",
      "CommittedSuspensionTime",
      "CommittedTime",
      "CumulativeSlotTime",
      "CumulativeSuspensionTime",
      "CurrentHosts",
      "ExitStatus",
      "JobNotification",
      "JobPrio",
      "LastSuspensionTime",
      "NumCkpts",
      "NumCkpts_RAW",
      "NumJobCompletions",
      "NumJobStarts",
      "NumRestarts",
      "NumSystemHolds",
      "TotalSuspensions",
      "JobSubmitMethod",
    ]
  ) ad.set(k, 0);
  for (const k of ["CumulativeRemoteSysCpu", "CumulativeRemoteUserCpu", "RemoteSysCpu", "RemoteUserCpu", "RemoteWallClockTime", "Rank"]) ad.setText(k, "0.0");
  ad.set("ExitBySignal", false);
  ad.set("JobLeaseDuration", 2400);
  ad.set("MaxHosts", 1);
  ad.set("MinHosts", 1);
  ad.set("LeaveJobInQueue", false);
  ad.set("StreamErr", truthy(get("stream_error")));
  ad.set("StreamOut", truthy(get("stream_output")));
  ad.set("TransferIn", false);
  if (c.fileLabel) ad.set("JobSubmitFile", c.fileLabel === "-" ? "<stdin>" : c.fileLabel);
  let exeKb = 1;
  if (cmd) {
    try {
      exeKb = Math.max(1, Math.ceil(fs.statSync(cmd).size / 1024));
    } catch { /* ignore */ }
  }
  ad.set("ExecutableSize", exeKb);
  ad.set("ExecutableSize_RAW", exeKb);
  ad.set("ImageSize", exeKb);
  ad.set("ImageSize_RAW", exeKb);
  ad.set("DiskUsage", exeKb);
  ad.set("DiskUsage_RAW", exeKb);
  // only when asked for: the schedd's default (MACHINE_MAX_VACATE_TIME) is not an attribute of the job
  const jmvt = get("job_max_vacate_time");
  if (jmvt !== undefined && jmvt !== "") {
    if (/^\d+$/.test(jmvt)) ad.set("JobMaxVacateTime", Number(jmvt));
    else {
      const ex = canonical(jmvt);
      if (ex === null) throw new SubmitError(`ERROR: Parse error in expression: \n\tJobMaxVacateTime = ${jmvt}\n\t\n`);
      ad.setText("JobMaxVacateTime", ex);
    }
  }
  // kill_sig, remove_kill_sig, hold_kill_sig: the signal the starter's soft kill sends (SIGTERM when unset)
  for (const [k, attr] of [["kill_sig", "KillSig"], ["remove_kill_sig", "RemoveKillSig"], ["hold_kill_sig", "HoldKillSig"]] as const) {
    const v = get(k);
    if (v === undefined || v === "") continue;
    const names = os.constants.signals as Record<string, number>;
    const up = v.toUpperCase();
    const named = /^\d+$/.test(v) ? Object.keys(names).find((n) => names[n] === Number(v)) : up.startsWith("SIG") ? up : "SIG" + up;
    ad.set(attr, named ?? v);
  }

  // arguments (docs/htcondor.md#submit-file-rules)
  const argsRaw = get("arguments") ?? get("args");
  if (argsRaw !== undefined) {
    try {
      const v2 = v2QuotedToRaw(argsRaw);
      if (v2 !== null) {
        parseV2Raw(v2); // validates the quoting
        ad.set("Arguments", v2);
      } else ad.set("Args", argsRaw);
    } catch (e) {
      throw new SubmitError(`ERROR: ${(e as Error).message}\nThe full arguments you specified were: ${argsRaw}\n`);
    }
  }
  // environment
  let env: [string, string][] = [];
  const envRaw = get("environment") ?? get("env");
  try {
    if (envRaw !== undefined && envRaw !== "") {
      const v2 = v2QuotedToRaw(envRaw);
      env = v2 !== null ? parseEnvV2Raw(v2) : parseEnvV1(envRaw);
    }
  } catch (e) {
    throw new SubmitError(`ERROR: ${(e as Error).message.replace(/^ERROR: /, "")}\nThe environment you specified was: '${envRaw}'\n`);
  }
  const getenv = get("getenv");
  if (getenv && !/^(false|no|f|n|0)$/i.test(getenv)) {
    const pats = truthy(getenv) ? ["*"] : getenv.split(/[,\s]+/).filter(Boolean);
    const have = new Set(env.map(([k]) => k));
    for (const [k, v] of Object.entries(process.env)) {
      if (v === undefined || have.has(k)) continue;
      if (pats.some((p) => new RegExp("^" + p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*") + "$", "i").test(k))) env.push([k, v]);
    }
  }
  ad.set("Environment", envToV2Raw(env));

  // files
  const outF = get("output") || "/dev/null";
  const errF = get("error") || "/dev/null";
  ad.set("Out", outF);
  ad.set("Err", errF);
  ad.set("In", get("input") || "/dev/null");
  const log = get("log");
  if (log) ad.set("UserLog", path.resolve(iwd, log));
  const normList = (v: string) => v.replace(/^"(.*)"$/, "$1").split(",").map((x) => x.trim()).filter(Boolean).join(",");
  const tif = get("transfer_input_files") ?? get("transfer_input");
  if (tif !== undefined) ad.set("TransferInput", normList(tif));
  const tof = get("transfer_output_files") ?? get("transfer_output");
  if (tof !== undefined) ad.set("TransferOutput", normList(tof));
  const remaps = get("transfer_output_remaps");
  if (remaps !== undefined) ad.set("TransferOutputRemaps", remaps.replace(/^"(.*)"$/, "$1"));
  const stf = (get("should_transfer_files") ?? "IF_NEEDED").toUpperCase();
  if (!["YES", "NO", "IF_NEEDED"].includes(stf)) throw new SubmitError(`ERROR: should_transfer_files contains an invalid value (${stf})\n`);
  const wtto = (get("when_to_transfer_output") ?? "ON_EXIT").toUpperCase();
  if (stf === "NO" && (tif || tof)) throw new SubmitError(`ERROR: You specified should_transfer_files = NO and also listed files to transfer.\n`);
  if (stf === "IF_NEEDED" && wtto === "ON_EXIT_OR_EVICT") {
    throw new SubmitError(`ERROR: \"when_to_transfer_output = ON_EXIT_OR_EVICT\" is not allowed with \"should_transfer_files = IF_NEEDED\"\n`);
  }
  ad.set("ShouldTransferFiles", stf);
  ad.set("WhenToTransferOutput", wtto);
  if (!transferExe) ad.set("TransferExecutable", false);
  // the requirements of NO and IF_NEEDED refer to MY.FileSystemDomain; a YES job has none
  // (test/minicondor/fixtures/hello.txt)
  if (stf !== "YES") ad.set("FileSystemDomain", cfg.host);
  let inputBytes = 0;
  for (const f of (tif ? normList(tif).split(",") : [])) {
    try {
      inputBytes += fs.statSync(path.resolve(iwd, f)).size;
    } catch { /* checked at run time */ }
  }
  ad.set("TransferInputSizeMB", Math.ceil(inputBytes / (1024 * 1024)) || (cmd ? 1 : 0));

  // resources
  const cpus = get("request_cpus");
  ad.set("RequestCpus", cpus !== undefined ? Number(cpus) || 1 : 1);
  const mem = get("request_memory");
  if (mem !== undefined) {
    const n = parseSize(mem, 1024 * 1024);
    if (n !== null) ad.set("RequestMemory", n);
    else {
      const ex = canonical(mem);
      if (ex === null) throw new SubmitError(`ERROR: request_memory = ${mem} is not a valid expression\n`);
      ad.setText("RequestMemory", ex);
    }
  } else ad.set("RequestMemory", 128);
  const disk = get("request_disk");
  if (disk !== undefined) {
    const n = parseSize(disk, 1024);
    if (n !== null) ad.set("RequestDisk", n);
    else {
      const ex = canonical(disk);
      if (ex === null) throw new SubmitError(`ERROR: request_disk = ${disk} is not a valid expression\n`);
      ad.setText("RequestDisk", ex);
    }
  } else ad.setText("RequestDisk", "MAX({ 1024,(TransferInputSizeMB + 1) * 1.250000000000000E+00 }) * 1024");
  const gpus = get("request_gpus");
  if (gpus !== undefined) ad.set("RequestGPUs", Number(gpus) || 0);
  for (const v of vars.values()) {
    const k = v.key.toLowerCase();
    if (k.startsWith("request_") && !["request_cpus", "request_memory", "request_disk", "request_gpus"].includes(k)) {
      const name = "Request" + v.key.slice(8);
      const val = get(v.key);
      if (val === undefined) continue;
      const ex = /^\d+$/.test(val) ? val : canonical(val);
      if (ex !== null) ad.setText(name, ex);
    }
  }

  // misc keywords
  const bn = get("batch_name");
  if (bn !== undefined) ad.set("JobBatchName", bn.replace(/^"(.*)"$/, "$1"));
  const wio = get("want_io_proxy");
  if (wio !== undefined) ad.set("WantIOProxy", truthy(wio));
  // submit_utils.cpp SetAccountingGroup: a user without a group is a user alias (AccountingGroup = user)
  const ag = get("accounting_group");
  const agUser = get("accounting_group_user");
  if (ag || agUser) {
    const agu = agUser ?? owner;
    ad.set("AcctGroupUser", agu);
    if (ag) {
      ad.set("AcctGroup", ag);
      ad.set("AccountingGroup", `${ag}.${agu}`);
    } else ad.set("AccountingGroup", agu);
  }
  const exprKeys: [string, string][] = [
    ["periodic_remove", "PeriodicRemove"],
    ["periodic_hold", "PeriodicHold"],
    ["periodic_release", "PeriodicRelease"],
    ["on_exit_hold", "OnExitHold"],
    ["on_exit_remove", "OnExitRemove"],
    ["periodic_hold_reason", "PeriodicHoldReason"],
    ["periodic_hold_subcode", "PeriodicHoldSubCode"],
    ["on_exit_hold_reason", "OnExitHoldReason"],
    ["on_exit_hold_subcode", "OnExitHoldSubCode"],
    ["periodic_release_reason", "PeriodicReleaseReason"],
    ["periodic_remove_reason", "PeriodicRemoveReason"],
    ["leave_in_queue", "LeaveJobInQueue"],
    ["rank", "Rank"],
    ["concurrency_limits", "ConcurrencyLimits"],
    ["allowed_job_duration", "AllowedJobDuration"],
    ["allowed_execute_duration", "AllowedExecuteDuration"],
    ["success_exit_code", "SuccessExitCode"],
    ["retry_until", "RetryUntil"],
  ];
  for (const [k, attr] of exprKeys) {
    const v = get(k);
    if (v === undefined || v === "") continue;
    if (k === "concurrency_limits") {
      ad.set(attr, v);
      continue;
    }
    const ex = canonical(v);
    if (ex === null) throw new SubmitError(`ERROR: Parse error in expression: \n\t${attr} = ${v}\n\t\n`);
    ad.setText(attr, ex);
  }
  const mr = get("max_retries");
  if (mr !== undefined) ad.set("JobMaxRetries", Number(mr) || 0);
  else if (get("success_exit_code") !== undefined || get("retry_until") !== undefined) ad.set("JobMaxRetries", 2);
  const notif = (get("notification") ?? "never").toLowerCase();
  ad.set("JobNotification", { never: 0, always: 1, complete: 2, error: 3 }[notif] ?? 0);
  const prio = get("priority");
  if (prio !== undefined) ad.set("JobPrio", Number(prio) || 0);
  const desc = get("description");
  if (desc !== undefined) ad.set("JobDescription", desc);
  const nu = get("notify_user");
  if (nu) ad.set("NotifyUser", nu);

  // container attrs (docs/htcondor.md#container-jobs-in-htcondor)
  if (image) {
    ad.set("WantContainer", true);
    ad.set("ContainerImage", image);
    if (image.startsWith("docker:")) {
      ad.set("WantDockerImage", true);
      ad.set("ContainerImageSource", "docker");
    } else if (image.startsWith("oras:")) {
      ad.set("WantSandboxImage", true);
      ad.set("ContainerImageSource", "oras");
    } else if (image.endsWith(".sif")) ad.set("WantSIF", true);
    else ad.set("WantSandboxImage", true);
    const isUrl = /^[a-z]+:\/\//.test(image);
    if (!isUrl) {
      const full = path.resolve(iwd, image);
      const noXfer = get("transfer_container") !== undefined && !truthy(get("transfer_container"));
      if (full.startsWith("/cvmfs/") || noXfer) ad.set("ContainerImageSource", "local");
      else {
        ad.set("ContainerImage", path.basename(full));
        ad.set("ContainerImageFullPath", full);
        const ti = ad.str("TransferInput");
        ad.set("TransferInput", ti ? `${ti},${full}` : full);
      }
    }
    const ctd = get("container_target_dir");
    if (ctd) ad.set("ContainerTargetDir", ctd);
  }

  // requirements (docs/htcondor.md#submit-file-rules: user requirements ANDed with the defaults)
  const xferClause = stf === "YES"
    ? "(TARGET.HasFileTransfer)"
    : stf === "NO"
    ? "(TARGET.FileSystemDomain == MY.FileSystemDomain)"
    : "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))";
  let def: string;
  if (image) {
    const kind = ad.bool("WantDockerImage") ? "TARGET.HasDockerURL" : ad.bool("WantSIF") ? "TARGET.HasSIF" : "TARGET.HasSandboxImage";
    def =
      `(TARGET.Arch == "X86_64") && TARGET.HasContainer && ${kind} && (versionGE(split(TARGET.CondorVersion)[1],"25.12.0") || (TARGET.Disk >= RequestDisk)) && (TARGET.Memory >= RequestMemory) && ${xferClause}`;
  } else {
    def =
      `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (versionGE(split(TARGET.CondorVersion)[1],"25.12.0") || (TARGET.Disk >= RequestDisk)) && (TARGET.Memory >= RequestMemory) && ${xferClause}`;
  }
  if (gpus !== undefined && Number(gpus) > 0) def += " && (TARGET.GPUs >= RequestGPUs)";
  const req = get("requirements");
  if (req !== undefined && req !== "") {
    const ex = canonical(req);
    if (ex === null) throw new SubmitError(`ERROR: Parse error in expression: \n\tRequirements = (${req}) && ${def}\n\t\n`);
    ad.setText("Requirements", `(${ex}) && ${def}`);
  } else ad.setText("Requirements", def);

  // +Attr / MY.Attr (docs/htcondor.md#submit-file-rules)
  for (const v of vars.values()) {
    const k = v.key;
    let attr: string | null = null;
    if (k.startsWith("+")) attr = k.slice(1);
    else if (/^my\./i.test(k)) attr = k.slice(3);
    if (!attr) continue;
    // submit_utils.cpp SetForcedAttributes: an empty MY.X sets X = undefined (observed: not inherited from job 0)
    const val = get(k) ?? "undefined";
    const ex = canonical(val);
    if (ex === null) throw new SubmitError(`ERROR: Parse error in expression: \n\t${attr} = ${val}\n\t\n`);
    ad.setText(attr, ex);
  }

  // hold / spool
  const hold = truthy(get("hold"));
  if (hold && c.spool) throw new SubmitError(`ERROR: Cannot set hold to 'true' when using -remote or -spool\n`);
  if (hold) {
    ad.set("JobStatus", 5);
    ad.set("HoldReason", "submitted on hold at user's request");
    ad.set("HoldReasonCode", 15);
    ad.set("HoldReasonSubCode", 0);
  }
  if (c.spool) {
    const sdir = path.join(homeDir(), "spool", String(c.cluster), String(c.proc), `cluster${c.cluster}.proc${c.proc}.subproc0`);
    ad.set("JobStatus", 5);
    ad.set("HoldReason", "Spooling input data files");
    ad.set("HoldReasonCode", 16);
    ad.set("HoldReasonSubCode", 0);
    ad.setText("LeaveJobInQueue", "JobStatus == 4 && (time() - (CompletionDate ?: time())) < 864000 && (StageOutFinish ?: 0) < EnteredCurrentStatus");
    ad.set("SUBMIT_Iwd", iwd);
    ad.set("Iwd", sdir);
    const remap: string[] = [];
    if (outF !== "/dev/null" && outF.includes("/")) {
      ad.set("Out", "_condor_stdout");
      remap.push(`_condor_stdout=${path.resolve(iwd, outF)}`);
    }
    if (errF !== "/dev/null" && errF.includes("/")) {
      ad.set("Err", "_condor_stderr");
      remap.push(`_condor_stderr=${path.resolve(iwd, errF)}`);
    }
    if (remap.length) {
      const old = ad.str("TransferOutputRemaps");
      ad.set("TransferOutputRemaps", [old, ...remap].filter(Boolean).join(";"));
    }
  }
  return ad;
}

/** -spool: copy the input sandbox into the spool directory (docs/htcondor.md#condor_submit-options, test/minicondor/fixtures/spool.txt). */
function spoolInput(ad: Ad): void {
  const sdir = ad.str("Iwd")!;
  const orig = ad.str("SUBMIT_Iwd")!;
  fs.mkdirSync(sdir, { recursive: true });
  const cmd = ad.str("Cmd");
  if (cmd && ad.bool("TransferExecutable") !== false) {
    const dst = path.join(sdir, "condor_exec.exe");
    try {
      fs.copyFileSync(cmd, dst);
      fs.chmodSync(dst, 0o755);
      ad.set("SUBMIT_Cmd", cmd);
      ad.set("Cmd", dst);
    } catch { /* run from the original */ }
  }
  const ti = ad.str("TransferInput");
  if (ti) {
    const names: string[] = [];
    for (const f of ti.split(",")) {
      if (/^[a-z]+:\/\//i.test(f)) {
        names.push(f);
        continue;
      }
      const src = path.resolve(orig, f);
      try {
        copyInto(src, sdir, f.endsWith("/"));
        names.push(f.endsWith("/") ? path.basename(src) + "/" : path.basename(src));
      } catch {
        names.push(f);
      }
    }
    ad.set("SUBMIT_TransferInput", ti);
    ad.set("TransferInput", names.join(","));
  }
  const inF = ad.str("In");
  if (inF && inF !== "/dev/null") {
    try {
      fs.copyFileSync(path.resolve(orig, inF), path.join(sdir, path.basename(inF)));
      ad.set("In", path.basename(inF));
    } catch { /* ignore */ }
  }
  const db = openDb();
  tx(db, () => {
    const cur = db.query("SELECT ad FROM jobs WHERE cluster = ? AND proc = ?").get(ad.num("ClusterId")!, ad.num("ProcId")!) as { ad: string } | null;
    if (!cur) return;
    const now = Ad.fromObject(JSON.parse(cur.ad));
    for (const k of ["Cmd", "SUBMIT_Cmd", "TransferInput", "SUBMIT_TransferInput", "In"]) {
      const t = ad.get(k);
      if (t !== undefined) now.setText(k, t);
    }
    putJob(db, now);
  });
  fs.writeFileSync(path.join(path.dirname(sdir), ".spooled"), String(Date.now()));
}
