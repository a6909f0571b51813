/**
 * Parsers for what the condor tools print. Pure and strict: anything unexpected is an error
 * with the tool's own words, never a guess (docs/htcondor.md#what-condor_submit-prints,
 * docs/htcondor.md#json-output, docs/htcondor.md#condor_history,
 * docs/htcondor.md#condor_rm-condor_hold-condor_release).
 */

export type ClassAdValue = string | number | boolean | null | ClassAdValue[] | { [k: string]: ClassAdValue };
export type JobAd = Record<string, ClassAdValue>;

export interface JobId {
  cluster: number;
  proc: number;
}

export const jobIdString = (id: JobId) => `${id.cluster}.${id.proc}`;

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
 * The ads of a `-json` answer, each as its own text, unparsed: the writer puts `,` between two
 * ads on a line of its own, after the first ad's closing brace and before the next one's opening
 * brace (docs/htcondor.md#json-output), and a JSON string cannot hold a raw newline, so "\n,\n"
 * only ever separates two ads. Works on the bytes, so that a large answer never becomes one big
 * string; an answer in another shape is split by parsing it whole.
 */
export function splitJsonAds(stdout: Uint8Array): string[] {
  const dec = new TextDecoder();
  let start = 0;
  let end = stdout.byteLength;
  while (start < end && (stdout[start] === 0x20 || stdout[start] === 0x0a)) start++;
  while (end > start && (stdout[end - 1] === 0x20 || stdout[end - 1] === 0x0a)) end--;
  if (start === end) return [];
  const shaped = stdout[start] === 0x5b && stdout[start + 1] === 0x0a && stdout[end - 1] === 0x5d && stdout[end - 2] === 0x0a;
  if (!shaped || (end - start > 3 && stdout[start + 2] !== 0x7b)) return parseJsonAds(dec.decode(stdout)).map((ad) => JSON.stringify(ad));
  if (end - start === 3) return []; // "[\n]"
  const out: string[] = [];
  let from = start + 2;
  for (let i = stdout.indexOf(0x2c, from); i !== -1 && i < end - 2; i = stdout.indexOf(0x2c, i + 1)) {
    if (stdout[i - 1] !== 0x0a || stdout[i + 1] !== 0x0a) continue;
    out.push(dec.decode(stdout.subarray(from, i - 1)));
    from = i + 2;
  }
  out.push(dec.decode(stdout.subarray(from, end - 2)));
  return out;
}

/** One ad's text (from {@link splitJsonAds}). */
export function parseJsonAd(text: string): JobAd {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("expected a ClassAd (a JSON object)");
  return parsed as JobAd;
}

/** A ClassAd expression rendered by the JSON writer as `/Expr(…)/` is not a value. */
export function adNumber(ad: JobAd, key: string): number | undefined {
  const v = ad[key];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function adString(ad: JobAd, key: string): string | undefined {
  const v = ad[key];
  if (typeof v !== "string" || /^\/Expr\(.*\)\/$/s.test(v)) return undefined;
  return v;
}

export type RmOutcome = "removed" | "not_found" | "already_removing" | "denied" | "unknown";

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
