/**
 * Parsers for what the condor tools print. Pure and strict: anything unexpected is an error
 * with the tool's own words, never a guess (docs/htcondor.md#what-condor_submit-prints,
 * docs/htcondor.md#json-output, docs/htcondor.md#condor_history,
 * docs/htcondor.md#condor_rm-condor_hold-condor_release).
 */
import { adNumber, type JobAd, type JobId } from "../core/classad.ts";

export { type JobId, jobIdString } from "../core/classad.ts";

/**
 * `condor_submit -terse` prints `first - last` per cluster
 * (docs/htcondor.md#what-condor_submit-prints). One description with `queue N` is one cluster of
 * `count` procs: their ids, in order.
 */
export function parseTerseSubmit(stdout: string, count: number): JobId[] {
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  const m = lines.length === 1 ? /^(\d+)\.(\d+) - (\d+)\.(\d+)$/.exec(lines[0]!.trim()) : null;
  if (!m) throw new Error(`unexpected condor_submit -terse output: ${JSON.stringify(stdout.slice(0, 200))}`);
  const [cluster, first, lastCluster, last] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
  if (cluster !== lastCluster || last - first + 1 !== count) throw new Error(`condor_submit created ${lines[0]}, not one cluster of ${count} job(s)`);
  return Array.from({ length: count }, (_, i) => ({ cluster, proc: first + i }));
}

/**
 * `-json` output of condor_q / condor_history / condor_status. condor_q prints nothing at all
 * when no job matches, condor_history prints `[\n]\n` (docs/htcondor.md#json-output,
 * docs/htcondor.md#condor_history).
 */
export function parseJsonAds(stdout: string): JobAd[] {
  if (stdout.trim() === "") return [];
  const parsed: unknown = JSON.parse(stdout);
  if (!Array.isArray(parsed)) throw new Error("expected a JSON array of ClassAds");
  return parsed.filter((x): x is JobAd => typeof x === "object" && x !== null && !Array.isArray(x));
}

/**
 * `Jobs` (the jobs that matched the constraint) and `ServerTime` of the one summary ad that
 * `condor_q -json -totals` prints (docs/htcondor.md#counting-without-ads).
 */
export function parseTotals(stdout: string): { jobs: number; serverTime: number | undefined } {
  const summary = parseJsonAds(stdout).find((a) => a.MyType === "Summary");
  const jobs = summary ? adNumber(summary, "Jobs") : undefined;
  if (jobs === undefined) throw new Error("condor_q -totals printed no summary ad with Jobs");
  return { jobs, serverTime: adNumber(summary!, "ServerTime") };
}

/**
 * A `-json` answer as its bytes, and where each ad's text lies in them: ad `i` is
 * `bytes[bounds[2i] .. bounds[2i+1])`. Nothing is decoded until an ad is parsed, so that the
 * refresher can tell an ad that did not change from its bytes alone, without a string per ad.
 */
export interface JsonAdSlices {
  bytes: Uint8Array;
  bounds: number[];
}

export const adCount = (s: JsonAdSlices): number => s.bounds.length / 2;

/**
 * The ads of a `-json` answer, unparsed: the writer puts `,` between two ads on a line of its
 * own, after the first ad's closing brace and before the next one's opening brace
 * (docs/htcondor.md#json-output), and a JSON string cannot hold a raw newline, so "\n,\n" only
 * ever separates two ads. An answer in another shape is parsed whole and each ad written out again.
 */
export function sliceJsonAds(stdout: Uint8Array): JsonAdSlices {
  let start = 0;
  let end = stdout.byteLength;
  while (start < end && (stdout[start] === 0x20 || stdout[start] === 0x0a)) start++;
  while (end > start && (stdout[end - 1] === 0x20 || stdout[end - 1] === 0x0a)) end--;
  if (start === end) return { bytes: stdout, bounds: [] };
  const shaped = stdout[start] === 0x5b && stdout[start + 1] === 0x0a && stdout[end - 1] === 0x5d && stdout[end - 2] === 0x0a;
  if (!shaped || (end - start > 3 && stdout[start + 2] !== 0x7b)) {
    const texts = parseJsonAds(new TextDecoder().decode(stdout)).map((ad) => JSON.stringify(ad, null, 2));
    return texts.length === 0 ? { bytes: stdout, bounds: [] } : sliceJsonAds(new TextEncoder().encode(`[\n${texts.join("\n,\n")}\n]\n`));
  }
  if (end - start === 3) return { bytes: stdout, bounds: [] }; // "[\n]"
  const bounds: number[] = [];
  let from = start + 2;
  for (let i = stdout.indexOf(0x2c, from); i !== -1 && i < end - 2; i = stdout.indexOf(0x2c, i + 1)) {
    if (stdout[i - 1] !== 0x0a || stdout[i + 1] !== 0x0a) continue;
    bounds.push(from, i - 1);
    from = i + 2;
  }
  bounds.push(from, end - 2);
  return { bytes: stdout, bounds };
}

const CLUSTER_KEY = new TextEncoder().encode('"ClusterId": ');
const PROC_KEY = new TextEncoder().encode('"ProcId": ');

/**
 * The integer after `key` in bytes [from, to), or undefined. Inside a JSON string a quote is
 * escaped (`\"`), so `"ClusterId": ` can only be the attribute itself.
 */
function numberAfter(b: Uint8Array, key: Uint8Array, from: number, to: number): number | undefined {
  const last = to - key.length;
  next: for (let i = b.indexOf(key[0]!, from); i !== -1 && i <= last; i = b.indexOf(key[0]!, i + 1)) {
    for (let k = 1; k < key.length; k++) if (b[i + k] !== key[k]) continue next;
    let j = i + key.length;
    let n = 0;
    const first = j;
    while (j < to && b[j]! >= 0x30 && b[j]! <= 0x39) n = n * 10 + b[j++]! - 0x30;
    return j > first ? n : undefined;
  }
  return undefined;
}

/** Ad `i`'s ClusterId or ProcId, read off its bytes without parsing it. */
export function sliceJobNumber(s: JsonAdSlices, i: number, attribute: "ClusterId" | "ProcId"): number | undefined {
  return numberAfter(s.bytes, attribute === "ClusterId" ? CLUSTER_KEY : PROC_KEY, s.bounds[2 * i]!, s.bounds[2 * i + 1]!);
}

/** Whether ad `i` of `a` and ad `j` of `b` are the same bytes. */
export function sameAd(a: JsonAdSlices, i: number, b: JsonAdSlices, j: number): boolean {
  const as = a.bounds[2 * i]!;
  const bs = b.bounds[2 * j]!;
  const len = a.bounds[2 * i + 1]! - as;
  if (len !== b.bounds[2 * j + 1]! - bs) return false;
  const x = a.bytes;
  const y = b.bytes;
  for (let k = 0; k < len; k++) if (x[as + k] !== y[bs + k]) return false;
  return true;
}

const utf8 = new TextDecoder();

/** Ad `i`, parsed. */
export function parseAd(s: JsonAdSlices, i: number): JobAd {
  const parsed: unknown = JSON.parse(utf8.decode(s.bytes.subarray(s.bounds[2 * i]!, s.bounds[2 * i + 1]!)));
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("expected a ClassAd (a JSON object)");
  return parsed as JobAd;
}

/**
 * What condor_rm did to one job. `done`: the job is removed or being removed, or had already left
 * the queue, and the call does not say which (one condor_rm of several jobs' constraints that
 * removed some of them: it answers with counts, not per job).
 */
export type RmOutcome = "removed" | "not_found" | "already_removing" | "done" | "denied" | "unknown";

/** The counts `condor_rm -totals` prints for a constraint (docs/htcondor.md#a-constraint-not-a-job-id). */
export interface RmTotals {
  succeeded: number;
  failed: number;
  notFound: number;
  badStatus: number;
  alreadyDone: number;
  denied: number;
}

/** The `-totals` line, or undefined when the tool printed none (it could not ask the schedd). */
export function parseRmTotals(stdout: string): RmTotals | undefined {
  const m = /^(\d+) Succeeded, (\d+) Failed, (\d+) Not Found, (\d+) Bad Status, (\d+) Already Done, (\d+) Permission Denied$/m.exec(stdout);
  if (!m) return undefined;
  const [succeeded, failed, notFound, badStatus, alreadyDone, denied] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  return { succeeded, failed, notFound, badStatus, alreadyDone, denied };
}

/**
 * condor_rm prints one line per fully qualified id; its exit code says only whether at least
 * one id succeeded, so the lines are what counts (docs/htcondor.md#job-ids-one-line-per-id).
 */
export function parseRmLine(id: string, stdout: string, stderr: string): RmOutcome {
  const all = `${stdout}\n${stderr}`;
  const q = id.replace(".", "\\.");
  if (new RegExp(`^Job ${q} marked for removal`, "m").test(all)) return "removed";
  if (new RegExp(`^Job ${q} not found`, "m").test(all)) return "not_found";
  if (new RegExp(`^Job ${q} already marked for removal`, "m").test(all)) return "already_removing";
  if (new RegExp(`^Permission denied to remove job ${q}`, "m").test(all)) return "denied";
  return "unknown";
}

/**
 * Why a tool failed: its first meaningful line and, after it, the lines of HTCondor's error stack
 * that name an authentication failure (`AUTHENTICATE:1003:…`, `AUTHENTICATE:1004:… using IDTOKENS`,
 * docs/htcondor.md#what-each-tool-reads-for-each-method). The first line alone (`-- Failed to
 * fetch ads from: …`, `ERROR: Failed to connect to queue manager …`) does not say that the schedd
 * refused the credential. Anything shaped like a token in those lines is withheld, and each is bounded.
 */
export function toolErrorReason(stderr: string, stdout = ""): string {
  const first = firstErrorLine(stderr, stdout);
  const causes = [
    ...new Set(
      stderr.split("\n").map((l) => l.trim()).filter((l) => /^AUTHENTICATE:\d+:/.test(l) && l !== first).map((l) => withholdTokens(l).slice(0, 200)),
    ),
  ];
  return [first, ...causes].join("; ");
}

/** A JWT (three base64url parts) or a long base64 run anywhere in an error-stack line: never echoed. */
function withholdTokens(line: string): string {
  return line.replace(/[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, "[token withheld]").replace(/[A-Za-z0-9+/_-]{64,}={0,2}/g, "[withheld]");
}

/** The first meaningful line a failed tool printed (they start with empty lines and `ERROR:`). */
export function firstErrorLine(stderr: string, stdout = ""): string {
  const line = `${stderr}\n${stdout}`
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l !== "" && l !== "Submitting job(s)");
  return line ?? "no output";
}

/**
 * Why condor_submit failed, by what the real tool prints
 * (docs/htcondor.md#condor_submit-exit-codes-and-errors; docs/htcondor.md#key-observations and
 * docs/htcondor.md#submitting-many-pods-at-once):
 * - `schedd`: the schedd could not be found or reached, or did not take the job (commit, queue,
 *   spool). HTCondor's side: the create may work later.
 * - `files`: condor_submit could not read what the sidecar wrote (the submit file, the
 *   executable, the folder). The sidecar's side.
 * - `description`: condor_submit refused the submit description itself, line by line or value by
 *   value (a parse error, an expression that does not parse, a value of the wrong kind). Whoever
 *   wrote the refused line must change it.
 * - `unknown`: it printed no error that says which.
 */
export type SubmitFailure = "schedd" | "files" | "description" | "unknown";

const SUBMIT_SCHEDD = [
  /^ERROR: Can't find address of (local schedd|schedd )/m,
  /^ERROR: Failed to connect to (local )?queue manager/m,
  /^Could not connect to schedd/m,
  /^ERROR: Failed to commit job submission into the queue/m,
  /^ERROR: Failed to queue job/m,
  /^ERROR: Failed to spool job files/m,
  /^ERROR: Failed to submit jobset/m,
  /^ERROR: No credential stored for/m,
];
const SUBMIT_FILES = [
  /^ERROR: Failed to open command file/m,
  /^ERROR: Can't access executable file/m,
  /^ERROR: Executable file .* has zero length/m,
  /^ERROR: No such directory:/m,
  /^ERROR: Can't open ".*" +with flags/m,
];
/** The submit hash's `ERROR: <msg>`, the parser's `ERROR: on Line N of <file>:`, the config reader's `Submit file Error "<file>", Line N: …`. */
const SUBMIT_REFUSED = /^(ERROR|Submit file Error)\b/m;

export function classifySubmitFailure(stderr: string): SubmitFailure {
  if (SUBMIT_SCHEDD.some((re) => re.test(stderr))) return "schedd";
  if (SUBMIT_FILES.some((re) => re.test(stderr))) return "files";
  if (SUBMIT_REFUSED.test(stderr)) return "description";
  return "unknown";
}

/**
 * What condor_submit said about a refused description, as one line: its error lines and the
 * lines that continue them (a refused expression follows on a tab-indented line), without the
 * warnings, which only accompany the refusal.
 */
export function submitRefusal(stderr: string, maxLength = 400): string {
  const lines: string[] = [];
  let inWarning = false;
  for (const raw of stderr.split("\n")) {
    const line = raw.trim();
    if (line === "" || line === "Submitting job(s)") continue;
    if (/^WARNING\b/i.test(line)) inWarning = true;
    else if (!/^\s/.test(raw)) inWarning = false;
    if (!inWarning) lines.push(line);
  }
  const text = lines.join(" ");
  return text.length > maxLength ? `${text.slice(0, maxLength)}…` : text || "no output";
}
