// Spooled jobs (docs/status.md#following-spooled-jobs) (every remote schedd) write no event log the sidecar can read,
// so the sidecar asks the schedd what changed since its last answer instead of reading every
// followed job's ad (docs/status.md#following-spooled-jobs, docs/htcondor.md#what-changed-since).
// Every sidecar here runs with ReconcileMinutes: 60: the full condor_q of every followed job runs
// at start only, so a change seen within seconds came through the watch. What each query cost is
// read from minicondor's answers.log (the ads each answer sent).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, sidecars } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `2727aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const CONFIG = "ReconcileMinutes: 60\n";
const SPOOL = ["--spool", "always"];

/**
 * A pod whose container waits until `/tmp/go` exists in its sandbox ({@link openGate}), then
 * exits 3; `background` runs beside it in the wrapper (where condor_chirp is).
 */
function pod(name: string, background?: string) {
  return makeCreateRequest({
    metadata: { name, uid: uid(), ...(background ? { annotations: { "interlink.eu/wstunnel-client-commands": background } } : {}) },
    spec: {
      containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.2; done; exit 3"], resources: {} }],
    },
  });
}

/** Lets the containers of this minicondor's running jobs end: their /tmp is the sandbox's own. */
function openGate(sc: Sidecar): void {
  const root = join(sc.home, "execute");
  for (const d of readdirSync(root)) {
    if (existsSync(join(root, d, "scratch", "tmp"))) writeFileSync(join(root, d, "scratch", "tmp", "go"), "");
  }
}

function tool(sc: Sidecar, name: string, ...args: string[]): string {
  const r = Bun.spawnSync([join(CONDOR_BIN, name), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } });
  return r.stdout.toString() + r.stderr.toString();
}

interface Answer {
  tool: string;
  ads: number;
  argv: string[];
}
/** What each condor_q and condor_history answered (minicondor's answers.log: `time tool ads argv`). */
function answers(sc: Sidecar): Answer[] {
  const path = join(sc.home, "answers.log");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => {
    const [, t, ads, argv] = /^\S+ (\S+) (\d+) (.*)$/.exec(l)!;
    return { tool: t!, ads: Number(ads), argv: JSON.parse(argv!) as string[] };
  });
}
const constraintOf = (a: Answer) => a.argv[a.argv.indexOf("-constraint") + 1] ?? "";
/** The full condor_q of every followed job (the reconciler's). */
const isFull = (a: Answer) => a.tool === "condor_q" && /^ClusterId >= \d+$/.test(constraintOf(a));
/** The watch's question of what changed. */
const isWatch = (a: Answer) => a.tool === "condor_q" && constraintOf(a).includes("EnteredCurrentStatus >=");

const main = (st: Json | undefined) => st?.containers?.[0]?.state;
async function reads(sc: Sidecar, req: Json, what: string, ok: (state: Json) => boolean, timeoutMs = 30_000): Promise<Json> {
  return await eventually(
    async () => {
      const st = await sc.statusOf(req.pod);
      return main(st) && ok(main(st)) ? st : undefined;
    },
    timeoutMs,
    what,
  );
}
async function create(sc: Sidecar, req: Json): Promise<string> {
  const r = await sc.call("POST", "/create", req);
  expect(r.status).toBe(200);
  return JSON.parse(r.body).PodJID as string;
}

/** Until the last two questions of what changed came back empty (the window moved past every change so far). */
async function quiet(sc: Sidecar): Promise<void> {
  await eventually(
    () => {
      const a = answers(sc).filter(isWatch);
      return a.length >= 2 && a.slice(-2).every((x) => x.ads === 0) ? true : undefined;
    },
    30_000,
    "the watch to go quiet",
  );
}

const { start } = sidecars((o) => ({ config: CONFIG, args: SPOOL, ...o }));

describe("a spooled job is watched, not read again and again", () => {
  test("held, released and finished: each change reaches /status without a full condor_q, and a quiet queue sends no ad", async () => {
    const sc = await start();
    const req = pod("watched");
    const jid = await create(sc, req);
    await reads(sc, req, "running", (s) => !!s.running, 60_000);
    const fullAtStart = answers(sc).filter(isFull).length;
    expect(fullAtStart).toBeLessThanOrEqual(2);

    tool(sc, "condor_hold", jid);
    const held = await reads(sc, req, "JobHeld", (s) => s.waiting?.reason === "JobHeld");
    expect(main(held).waiting.message).toContain("HoldReasonCode");

    // Nothing changes while the job is held: once the window has moved past the hold (and the
    // states the wrapper chirped as it stopped), the watch's questions come back empty.
    await quiet(sc);
    const from = answers(sc).length;
    await eventually(() => (answers(sc).slice(from).filter(isWatch).length >= 3 ? true : undefined), 20_000, "three questions of what changed");
    expect(answers(sc).slice(from).filter(isWatch).reduce((sum, a) => sum + a.ads, 0)).toBe(0);

    tool(sc, "condor_release", jid);
    await reads(sc, req, "running again after the release", (s) => !!s.running, 60_000);
    openGate(sc);
    const end = await reads(sc, req, "the job's end", (s) => !!s.terminated, 60_000);
    expect(main(end).terminated.exitCode).toBe(3);

    // No full condor_q since start, and no job polled by id: the watch saw every change.
    const all = answers(sc);
    expect(all.filter(isFull).length).toBe(fullAtStart);
    expect(all.filter(isWatch).length).toBeGreaterThan(3);
    const byId = all.filter((a) => a.tool === "condor_q" && constraintOf(a).startsWith("(ClusterId =="));
    expect(byId.length).toBeLessThanOrEqual(2); // the create's own question about its new job, and a spare
  }, 240_000);

  test("a forged InterLinkStateTime costs one ad at most and changes nothing", async () => {
    const sc = await start();
    const chirp = `"$_CONDOR_BIN/../libexec/condor_chirp" set_job_attr InterLinkStateTime`;
    /** The job's next forgery, once the test opens its gate; it marks it done with a file. */
    const step = (name: string, value: string) =>
      `while [ ! -e ${join(sc.dir, name)} ]; do sleep 0.2; done; ${chirp} ${value}; : > ${join(sc.dir, `${name}.done`)}`;
    // A time far in the future, then an expression that is always "now": read as times, one would
    // be new for ever and the other at every question.
    const req = pod("forger", `${step("future", "4102444800")}; ${step("expression", "'time()'")}`);
    const jid = await create(sc, req);
    const before = await reads(sc, req, "running", (s) => !!s.running, 60_000);
    const costOf = async (name: string) => {
      // Quiet first: what came before has been read, and the window has moved past it.
      await quiet(sc);
      const from = answers(sc).length;
      writeFileSync(join(sc.dir, name), "");
      await eventually(() => (existsSync(join(sc.dir, `${name}.done`)) ? true : undefined), 30_000, `the forgery (${name})`);
      const after = answers(sc).length;
      await eventually(() => (answers(sc).slice(after).filter(isWatch).length >= 5 ? true : undefined), 30_000, "five more questions");
      return answers(sc).slice(from).filter(isWatch).reduce((sum, a) => sum + a.ads, 0);
    };
    expect(await costOf("future")).toBe(0);
    expect(await costOf("expression")).toBeLessThanOrEqual(1);
    expect(sc.log()).toContain("a job wrote a value into its status or state time that is no time");
    // The pod reads as it did: the time says which ads to read, never what a job is.
    const st = await sc.statusOf(req.pod);
    expect(st.JID).toBe(jid);
    expect(main(st)).toEqual(main(before));
    expect(answers(sc).filter(isFull).length).toBeLessThanOrEqual(2);
  }, 240_000);

  test("a job removed while held leaves the queue at once: the count notices, the history says which", async () => {
    const sc = await start();
    const req = pod("removed");
    const jid = await create(sc, req);
    await reads(sc, req, "running", (s) => !!s.running, 60_000);
    tool(sc, "condor_hold", jid);
    await reads(sc, req, "JobHeld", (s) => s.waiting?.reason === "JobHeld");
    // Once its wrapper has stopped (and chirped its last states), a held job that is removed goes
    // to the history at once: no question of what changed can see it in the queue
    // (docs/status.md#following-spooled-jobs).
    await quiet(sc);
    expect(tool(sc, "condor_rm", jid)).toContain("marked for removal");
    expect(tool(sc, "condor_q", jid, "-af", "JobStatus").trim()).toBe("");
    const st = await reads(sc, req, "JobRemoved", (s) => s.terminated?.reason === "JobRemoved");
    // 137, or 143 when the wrapper's line for the hold's SIGTERM reached the ad (docs/status.md#what-each-pod-reports).
    const t = main(st).terminated;
    expect(t.exitCode).toBe(t.signal === undefined ? 137 : 128 + t.signal);
    const all = answers(sc);
    expect(all.filter(isFull).length).toBeLessThanOrEqual(2);
    expect(all.some((a) => a.tool === "condor_q" && a.argv.includes("-totals"))).toBe(true);
    expect(all.some((a) => a.tool === "condor_history" && constraintOf(a).includes("EnteredCurrentStatus >="))).toBe(true);
  }, 240_000);

  test("a sidecar started again goes on watching: what changed while it was down, and after", async () => {
    const first = await start();
    const req = pod("restarted");
    const jid = await create(first, req);
    await reads(first, req, "running", (s) => !!s.running, 60_000);
    await first.kill9();
    tool(first, "condor_hold", jid);

    const again = await start({ dir: first.dir });
    // The full condor_q at start reads the hold; the watch starts from its answer.
    await reads(again, req, "JobHeld after the restart", (s) => s.waiting?.reason === "JobHeld");
    const fullAfterStart = answers(again).filter(isFull).length;
    tool(again, "condor_release", jid);
    await reads(again, req, "running again", (s) => !!s.running, 60_000);
    openGate(again);
    const end = await reads(again, req, "the job's end", (s) => !!s.terminated, 60_000);
    expect(main(end).terminated.exitCode).toBe(3);
    expect(answers(again).filter(isFull).length).toBe(fullAfterStart);
  }, 240_000);
});
