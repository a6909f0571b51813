/**
 * An in-memory test double of the `Condor` interface (src/condor/tools.ts), for the service's
 * own logic in-process: a queue and a history of job ads that the test edits, every call
 * recorded, and any call made to fail. It runs no job; the end-to-end tests run minicondor.
 */
import type { Condor, OwnedJob } from "../../src/condor/tools.ts";
import { type JobId, jobIdString, type RmOutcome, sliceJsonAds } from "../../src/condor/parse.ts";
import { type JobAd } from "../../src/core/classad.ts";
import { SidecarError } from "../../src/core/errors.ts";
import type { SpawnResult } from "../../src/runtime/types.ts";

export type Tool = "submit" | "query" | "totals" | "history" | "remove" | "transferData" | "tail" | "machines";

export interface FakeCondor extends Condor {
  /** Jobs in the queue, by `cluster.proc`. */
  queued: Map<string, JobAd>;
  /** Jobs that left the queue (the history), by `cluster.proc`. */
  left: Map<string, JobAd>;
  /** Every call: the tool and its main argument. */
  calls: { tool: Tool; arg?: unknown }[];
  /** Tools that fail (as an unreachable schedd does) until removed from the set. */
  failing: Set<Tool>;
  /** What condor_status answers. */
  machineAds: JobAd[];
  /** Called by transferData for each job (e.g. to put the output in place). */
  onTransfer?: (id: JobId) => void;
  /** Moves a job from the queue to the history with these final attributes. */
  end(jid: string, final: JobAd): void;
  count(tool: Tool): number;
}

/** The attributes a submitted job's ad starts with: what the sidecar's submit file sets. */
function adFromSubmit(text: string, id: JobId): JobAd {
  const ad: JobAd = { ClusterId: id.cluster, ProcId: id.proc, JobStatus: 1, QDate: 0, NumJobStarts: 0 };
  for (const line of text.split("\n")) {
    const m = /^MY\.(\w+) = "(.*)"$/.exec(line);
    if (m) ad[m[1]!] = m[2]!;
  }
  return ad;
}

export function fakeCondor(opts: { readSubmitFile: (path: string) => string; now: () => number }): FakeCondor {
  let nextCluster = 1;
  const f: FakeCondor = {
    queued: new Map(),
    left: new Map(),
    calls: [],
    failing: new Set(),
    machineAds: [{ Name: "slot1@fake", Cpus: 4, Memory: 8192, GPUs: 0, State: "Unclaimed", Activity: "Idle" }],
    end(jid, final) {
      const ad = f.queued.get(jid);
      if (!ad) throw new Error(`fake condor: ${jid} is not in the queue`);
      f.queued.delete(jid);
      f.left.set(jid, { ...ad, ...final });
    },
    count: (tool) => f.calls.filter((c) => c.tool === tool).length,

    async submit(file, { count }) {
      call("submit", file);
      // One pod per description: the in-process tests create pods one after the other.
      if (count !== 1) throw new Error("fake condor: one job per submit");
      const id = { cluster: nextCluster++, proc: 0 };
      const ad = adFromSubmit(opts.readSubmitFile(file), id);
      ad.QDate = Math.floor(opts.now() / 1000);
      // As the schedd writes it when it queues the job (docs/htcondor.md#which-job-an-id-names).
      ad.GlobalJobId = `fake#${jobIdString(id)}#${ad.QDate}`;
      f.queued.set(jobIdString(id), ad);
      return [id];
    },
    async query({ constraint, attributes }) {
      call("query", constraint);
      // The refresher's query (ClusterId >= N); the searches by UID find nothing here.
      const m = /^ClusterId >= (\d+)$/.exec(constraint);
      // A targeted one: (ClusterId == C && (ProcId == P || …)) || …
      if (!m && constraint.startsWith("(ClusterId == ")) {
        const want = new Set<string>();
        for (const g of constraint.matchAll(/ClusterId == (\d+) && \(([^)]*)\)/g)) {
          for (const p of g[2]!.matchAll(/ProcId == (\d+)/g)) want.add(`${g[1]}.${p[1]}`);
        }
        return [...f.queued.entries()].filter(([k]) => want.has(k)).map(([, ad]) => project(ad, attributes));
      }
      // The watch's question of what changed (core/watch.ts changedSince): every job from that
      // cluster on, as if each had changed (more than a schedd sends, never less), stamped with
      // the schedd's clock; a job's EnteredCurrentStatus, when the test set none, is the window's start.
      const w = /^ClusterId >= (\d+) && \(\(EnteredCurrentStatus >= (\d+) /.exec(constraint);
      if (w) {
        const serverTime = Math.floor(opts.now() / 1000);
        return [...f.queued.values()].filter((ad) => (ad.ClusterId as number) >= Number(w[1])).map((ad) =>
          project({ EnteredCurrentStatus: Number(w[2]), ...ad, ServerTime: serverTime }, attributes)
        );
      }
      if (!m) return [];
      return [...f.queued.values()].filter((ad) => (ad.ClusterId as number) >= Number(m[1])).map((ad) =>
        project({ ...ad, ServerTime: Math.floor(opts.now() / 1000) }, attributes)
      );
    },
    async totals(constraint) {
      call("totals", constraint);
      // The watch's count (core/watch.ts liveCount): this sidecar's live jobs from that cluster on.
      const m = /InterLinkSidecarId == "([^"]*)" && ClusterId >= (\d+) && JobStatus != 3 && JobStatus != 4$/.exec(constraint);
      if (!m) throw new Error(`fake condor: a count it does not know: ${constraint}`);
      const jobs =
        [...f.queued.values()].filter((ad) =>
          ad.InterLinkSidecarId === m[1] && (ad.ClusterId as number) >= Number(m[2]) && ad.JobStatus !== 3 && ad.JobStatus !== 4
        ).length;
      return { jobs, serverTime: Math.floor(opts.now() / 1000) };
    },
    async querySlices(q) {
      // The refresher's query, as condor_q -json writes it.
      const texts = (await f.query(q)).map((ad) => JSON.stringify(ad, null, 2));
      return sliceJsonAds(new TextEncoder().encode(texts.length === 0 ? "" : `[\n${texts.join("\n,\n")}\n]\n`));
    },
    async history({ ids = [], attributes, limit }) {
      call("history", ids.map(jobIdString));
      const want = new Set(ids.map(jobIdString));
      return [...f.left.entries()].filter(([k]) => want.has(k)).slice(0, limit).map(([, ad]) => project(ad, attributes));
    },
    async remove(jobs) {
      call("remove", jobs.map((j) => jobIdString(j.id)));
      const out = new Map<string, RmOutcome>();
      for (const j of jobs) {
        const jid = jobIdString(j.id);
        // As the schedd does: the constraint decides, a job it does not select is not found.
        if (!f.queued.has(jid) || !selects(j, f.queued.get(jid)!)) {
          out.set(jid, "not_found");
          continue;
        }
        f.end(jid, { JobStatus: 3, RemoveReason: "removed" });
        out.set(jid, "removed");
      }
      return out;
    },
    async transferData(jobs) {
      call("transferData", jobs.map((j) => jobIdString(j.id)));
      for (const j of jobs) f.onTransfer?.(j.id);
    },
    async tail(): Promise<SpawnResult> {
      call("tail");
      return { code: 1, signal: null, stdout: "", stderr: "not running", timedOut: false, durationMs: 0 };
    },
    async machines() {
      call("machines");
      return f.machineAds;
    },
  };
  function call(tool: Tool, arg?: unknown): void {
    f.calls.push({ tool, arg });
    if (f.failing.has(tool)) throw new SidecarError("unavailable", `fake ${tool}: the schedd does not answer`);
  }
  return f;
}

function project(ad: JobAd, attributes: readonly string[]): JobAd {
  return Object.fromEntries(Object.entries(ad).filter(([k]) => attributes.includes(k)));
}

/**
 * Whether a job's constraint selects its ad, for the forms the sidecar writes
 * (core/job-identity.ts): terms `Attr == value` joined by `&&`, one of them perhaps an `(a || b)`.
 */
function selects(j: OwnedJob, ad: JobAd): boolean {
  const term = (t: string): boolean => {
    const s = t.trim();
    if (s.startsWith("(") && s.endsWith(")")) return s.slice(1, -1).split(" || ").some(term);
    const m = /^(\w+) == ("(?:[^"\\]|\\.)*"|-?\d+)$/.exec(s);
    if (!m) throw new Error(`fake condor: cannot read the constraint term ${JSON.stringify(s)}`);
    return ad[m[1]!] === JSON.parse(m[2]!);
  };
  const parts: string[] = [];
  let depth = 0, start = 0;
  const c = j.constraint;
  for (let i = 0; i < c.length; i++) {
    if (c[i] === "(") depth++;
    else if (c[i] === ")") depth--;
    else if (depth === 0 && c.startsWith(" && ", i)) {
      parts.push(c.slice(start, i));
      start = i + 4;
    }
  }
  parts.push(c.slice(start));
  return parts.every(term);
}
