/**
 * ClassAds as the condor tools print them with `-json` (docs/htcondor.md#json-output): the
 * types, and the accessors that read an attribute only when it holds a value of that kind.
 */

export type ClassAdValue = string | number | boolean | null | ClassAdValue[] | { [k: string]: ClassAdValue };
export type JobAd = Record<string, ClassAdValue>;

/** A job's id, its ad's ClusterId and ProcId. */
export interface JobId {
  cluster: number;
  proc: number;
}

/** `cluster.proc`, as the tools print a job id. */
export const jobIdString = (id: JobId) => `${id.cluster}.${id.proc}`;

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

/** A ClassAd string literal: `"…"` with `\\` and `"` escaped (for -constraint expressions and, through the submit renderer, submit values). */
export function classAdString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}
