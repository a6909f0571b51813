/**
 * Parsers for what the condor tools print. Pure and strict: anything unexpected is an error
 * with the tool's own words, never a guess (spec: htcondor-cli §1.1, §2.2, §3, §4).
 */

export type ClassAdValue = string | number | boolean | null | ClassAdValue[] | { [k: string]: ClassAdValue };
export type JobAd = Record<string, ClassAdValue>;

export interface JobId {
  cluster: number;
  proc: number;
}

export const jobIdString = (id: JobId) => `${id.cluster}.${id.proc}`;

export function parseJobId(s: string): JobId | undefined {
  const m = /^(\d+)\.(\d+)$/.exec(s.trim());
  return m ? { cluster: Number(m[1]), proc: Number(m[2]) } : undefined;
}

/** `condor_submit -terse` prints `first - last` per cluster (spec: htcondor-cli §1.1). */
export function parseTerseSubmit(stdout: string): JobId {
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  const m = lines.length === 1 ? /^(\d+)\.(\d+) - (\d+)\.(\d+)$/.exec(lines[0]!.trim()) : null;
  if (!m) throw new Error(`unexpected condor_submit -terse output: ${JSON.stringify(stdout.slice(0, 200))}`);
  if (m[1] !== m[3] || m[2] !== m[4]) throw new Error(`condor_submit created more than one job: ${lines[0]}`);
  return { cluster: Number(m[1]), proc: Number(m[2]) };
}

/**
 * `-json` output of condor_q / condor_history / condor_status. condor_q prints nothing at all
 * when no job matches, condor_history prints `[\n]\n` (spec: htcondor-cli §2.2, §3).
 */
export function parseJsonAds(stdout: string): JobAd[] {
  if (stdout.trim() === "") return [];
  const parsed: unknown = JSON.parse(stdout);
  if (!Array.isArray(parsed)) throw new Error("expected a JSON array of ClassAds");
  return parsed.filter((x): x is JobAd => typeof x === "object" && x !== null && !Array.isArray(x));
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

export function adBool(ad: JobAd, key: string): boolean | undefined {
  const v = ad[key];
  return typeof v === "boolean" ? v : undefined;
}

export type RmOutcome = "removed" | "not_found" | "already_removing" | "denied" | "unknown";

/**
 * condor_rm prints one line per fully qualified id; its exit code says only whether at least
 * one id succeeded, so the lines are what counts (spec: htcondor-cli §4.1).
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

/** Builds a ClassAd string literal (for -constraint expressions). */
export function classAdString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}
