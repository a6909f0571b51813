/**
 * /create (docs/performance.md#what-is-measured-and-the-targets): batches of creates with some
 * number of clients, each create matched to its own condor_submit by the pod folder the tool ran
 * in (a timing launcher, kit.ts timedSubmitBin): overhead = create latency − that condor_submit's
 * wall time. The /create table compares 1, 10 and 100 clients from the same store (a row's pods
 * are deleted before the next); the ramp's creates (the "fill" rows) are reported as well.
 */
import { errorSamples, fmtMs, type Json, pct, pool, readSubmitTimes, replyFailed, type Running, sorted, type SubmitTime, submitUid, table } from "./kit.ts";

const CREATE_CONCURRENCY = [1, 10, 100];
const CREATE_WARMUP = 5;
const DELETE_CLIENTS = 10;
/** The default; the bench writes no MaxConcurrentSubmits. */
export const MAX_CONCURRENT_SUBMITS = 8;

export interface CreateResult {
  flavour: Running["flavour"];
  /** "compare": a row of the /create table, from the same store as its siblings; "fill": the ramp. */
  kind: "compare" | "fill" | "warmup";
  concurrency: number;
  count: number;
  fromPods: number;
  toPods: number;
  /** Deleted pods of earlier rows still in the store as tombstones. */
  tombstones: number;
  errors: number;
  errorSamples: string[];
  wallMs: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Creates matched to their own condor_submit (by pod folder). */
  matched: number;
  /** Wall time of condor_submit, start-up included. */
  submitP50?: number;
  submitP99?: number;
  /** Create latency − the wall time of that create's condor_submit. */
  overheadP50?: number;
  overheadP99?: number;
  /** The same, minus what the bench's bash launcher adds outside the condor_submit clock. */
  overheadNetP50?: number;
  overheadNetP99?: number;
  /** The deletes that brought the store back to its size before the next row. */
  deletes?: { count: number; errors: number; p50: number; p99: number; wallMs: number };
}

/** Creates `reqs` with `concurrency` clients; the pods that were created are appended to `tracked`. */
export async function createBatch(
  sc: Running,
  home: string,
  reqs: Json[],
  concurrency: number,
  tracked: Json[],
  kind: CreateResult["kind"],
  padMs: number,
  tombstones = 0,
): Promise<CreateResult> {
  const fromPods = tracked.length;
  const before = readSubmitTimes(home).lines;
  const start = performance.now();
  const replies = await pool(reqs, concurrency, (r) => sc.client.create(r).catch(replyFailed));
  const wallMs = performance.now() - start;
  const ok = replies.filter((r) => r.status === 200);
  tracked.push(...reqs.filter((_, i) => replies[i]!.status === 200));
  // Each create is matched to the condor_submit that ran in its pod's folder.
  const submitOf = new Map<string, SubmitTime>();
  for (const t of readSubmitTimes(home, before).times) if (t.code === 0) submitOf.set(submitUid(t), t);
  const pairs = reqs.flatMap((req, i) => {
    const t = submitOf.get(req.pod.metadata.uid);
    return replies[i]!.status === 200 && t ? [{ latency: replies[i]!.ms, submit: t.ms }] : [];
  });
  const lat = sorted(ok.map((r) => r.ms));
  const over = sorted(pairs.map((p) => p.latency - p.submit));
  const subs = sorted(pairs.map((p) => p.submit));
  return {
    flavour: sc.flavour,
    kind,
    concurrency,
    count: reqs.length,
    fromPods,
    toPods: fromPods + ok.length,
    tombstones,
    errors: replies.length - ok.length,
    errorSamples: errorSamples(replies),
    wallMs,
    perSecond: (ok.length / wallMs) * 1000,
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    matched: pairs.length,
    submitP50: pct(subs, 50),
    submitP99: pct(subs, 99),
    overheadP50: pct(over, 50),
    overheadP99: pct(over, 99),
    overheadNetP50: pct(over, 50) === undefined ? undefined : pct(over, 50)! - padMs,
    overheadNetP99: pct(over, 99) === undefined ? undefined : pct(over, 99)! - padMs,
  };
}

/** Deletes the pods a row created (each delete runs condor_rm), so the next row starts from the same store. */
async function deleteAll(sc: Running, pods: Json[]): Promise<NonNullable<CreateResult["deletes"]>> {
  const start = performance.now();
  const replies = await pool(pods, DELETE_CLIENTS, (p) => sc.client.remove(p.pod).catch(replyFailed));
  const lat = sorted(replies.filter((r) => r.status === 200).map((r) => r.ms));
  return {
    count: pods.length,
    errors: replies.filter((r) => r.status !== 200).length,
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    wallMs: performance.now() - start,
  };
}

/**
 * The /create table's rows for one runtime: warm-up creates (deleted, reported only in the JSON),
 * then `perRow` creates with each client count, each row deleted before the next so that every
 * row starts from the same tracked pods.
 */
export async function compareCreates(
  sc: Running,
  home: string,
  tracked: Json[],
  newPods: (n: number) => Json[],
  o: { perRow: number; padMs: number; say: (msg: string) => void },
  deleted: { pods: number },
): Promise<CreateResult[]> {
  const rows: CreateResult[] = [];
  for (
    const [kind, concurrency, count] of [
      ["warmup", 1, CREATE_WARMUP] as const,
      ...CREATE_CONCURRENCY.map((c) => ["compare", c, o.perRow] as const),
    ]
  ) {
    o.say(`${sc.flavour}: ${count} creates with ${concurrency} client(s) on ${tracked.length} tracked pods${kind === "warmup" ? " (warm-up)" : ""}`);
    const created: Json[] = [...tracked];
    const res = await createBatch(sc, home, newPods(count), concurrency, created, kind, o.padMs, deleted.pods);
    const mine = created.slice(tracked.length);
    res.deletes = await deleteAll(sc, mine);
    deleted.pods += mine.length;
    rows.push(res);
    o.say(
      `  ${res.perSecond.toFixed(1)} creates/s, p50 ${fmtMs(res.p50)}, overhead p50 ${fmtMs(res.overheadP50)} p99 ${
        fmtMs(res.overheadP99)
      }, ${res.errors} errors; ` +
        `${res.deletes.count} deletes, ${res.deletes.errors} errors`,
    );
  }
  return rows;
}

/** The /create table (same store, 1/10/100 clients), the ramp's creates, the deletes between rows and the errors. */
export function createLines(creates: readonly CreateResult[], o: { perRow: number; fillClients: number; submitLauncherMs: number }): string[] {
  const out: string[] = [];
  const compare = creates.filter((c) => c.kind === "compare");
  const createRow = (c: CreateResult) => [
    c.flavour,
    String(c.concurrency),
    String(c.count),
    c.perSecond.toFixed(1),
    fmtMs(c.p50),
    fmtMs(c.p99),
    fmtMs(c.submitP50),
    fmtMs(c.overheadP50),
    fmtMs(c.overheadP99),
    `${fmtMs(c.overheadNetP50)} / ${fmtMs(c.overheadNetP99)}`,
    String(c.errors),
  ];
  const createHead = [
    "runtime",
    "clients",
    "creates",
    "creates/s",
    "p50",
    "p99",
    "condor_submit p50",
    "overhead p50",
    "overhead p99",
    "net p50 / p99",
    "errors",
  ];
  const storePods = compare[0]?.fromPods;
  out.push(
    `/create: ${o.perRow} creates per row, every row from the same store (${
      storePods ?? "–"
    } pods tracked; a row's pods are deleted before the next and stay as tombstones), after ${CREATE_WARMUP} warm-up creates per runtime`,
  );
  out.push(table(createHead, compare.map(createRow)));
  out.push(
    `target: overhead < 10 ms beyond condor_submit (overhead = create latency − the wall time of that create's own condor_submit, matched by the pod folder it ran in; net = minus the ${
      fmtMs(o.submitLauncherMs)
    } the bench's bash launcher adds outside that clock). With more clients than MaxConcurrentSubmits (${MAX_CONCURRENT_SUBMITS}), overhead includes the wait for a submit slot.`,
  );
  const unmatched = creates.filter((c) => c.kind !== "warmup" && c.matched < c.count - c.errors);
  if (unmatched.length) {
    out.push(
      `(${
        unmatched.map((c) => `${c.flavour}/${c.concurrency}: ${c.matched} of ${c.count - c.errors}`).join(", ")
      } creates matched to their condor_submit; overhead is over those)`,
    );
  }
  out.push("");
  const fill = creates.filter((c) => c.kind === "fill");
  out.push(`/create while filling the store (the ramp, ${o.fillClients} clients, binary)`);
  out.push(table(["pods", ...createHead.slice(1)], fill.map((c) => [`${c.fromPods}→${c.toPods}`, ...createRow(c).slice(1)])));
  const deletes = compare.flatMap((c) => (c.deletes ? [{ flavour: c.flavour, ...c.deletes }] : []));
  if (deletes.length) {
    out.push(
      `deletes between rows (${DELETE_CLIENTS} clients): ${
        deletes.map((d) => `${d.flavour} ${d.count} p50 ${fmtMs(d.p50)} p99 ${fmtMs(d.p99)}${d.errors ? ` ${d.errors} errors` : ""}`).join("; ")
      }`,
    );
  }
  for (const c of creates) if (c.errors) out.push(`create errors (${c.flavour}, ${c.kind}, ${c.concurrency} clients): ${c.errorSamples.join(" | ")}`);
  return out;
}
