// Status from the job event log (docs/status.md#what-drives-status,
// docs/status.md#following-the-event-log). Every sidecar here runs with ReconcileMinutes: 60, so
// the full condor_q runs at start and after gaps only: a change that reaches /status within
// seconds came through the event log and a targeted condor_q of the job it named (or through the
// fallback the test is about).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, sidecars } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `2222eeee-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const CONFIG = "ReconcileMinutes: 60\nStatusCacheSeconds: 1\n";

const pod = (name: string, script = "sleep 60") =>
  makeCreateRequest({
    metadata: { name, uid: uid() },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
  });

function condor(sc: Sidecar, tool: string, ...args: string[]): string {
  const r = Bun.spawnSync([join(CONDOR_BIN, tool), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } });
  return r.stdout.toString() + r.stderr.toString();
}

/**
 * condor_q calls of the sidecar: full ones (every followed job), targeted ones (named ids), and
 * the watch's questions of what changed (docs/status.md#following-spooled-jobs).
 */
function queries(sc: Sidecar): { full: number; targeted: number; watch: number } {
  const lines = sc.calls("condor_q").map((c) => JSON.stringify(c.argv));
  return {
    full: lines.filter((l) => /"ClusterId >= \d+"/.test(l)).length,
    targeted: lines.filter((l) => l.includes('"(ClusterId ==')).length,
    watch: lines.filter((l) => l.includes("EnteredCurrentStatus >=")).length,
  };
}

async function create(sc: Sidecar, req: Json): Promise<string> {
  const r = await sc.call("POST", "/create", req);
  expect(r.status).toBe(200);
  return JSON.parse(r.body).PodJID as string;
}

const main = (st: Json | undefined) => st?.containers?.[0]?.state;
const running = (sc: Sidecar, req: Json) =>
  eventually(async () => (main(await sc.statusOf(req.pod))?.running ? await sc.statusOf(req.pod) : undefined), 30_000, "running");

function eventLogs(sc: Sidecar): string[] {
  const dir = join(sc.dataRoot, "events");
  return existsSync(dir) ? readdirSync(dir).map((f) => join(dir, f)) : [];
}

const { start } = sidecars((o) => ({ config: CONFIG, ...o }));

describe("the event log drives status", () => {
  let sc: Sidecar;
  beforeAll(async () => {
    sc = await start({ config: CONFIG + "Channels:\n  JobScript: true\n" });
  }, 60_000);

  test("a new job writes to the sidecar's shared event log, not its own job.log", async () => {
    const req = pod("shared-log");
    const jid = await create(sc, req);
    await running(sc, req);
    const logs = eventLogs(sc);
    expect(logs.length).toBe(1);
    const text = readFileSync(logs[0]!, "utf8");
    const [c] = jid.split(".");
    expect(text).toContain(`000 (${c!.padStart(3, "0")}.000.000)`);
    expect(text).toContain(`001 (${c!.padStart(3, "0")}.000.000)`);
    expect(existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid, "job.log"))).toBe(false);
    // Followed through the log: the job's events bring targeted condor_q calls; the full ones
    // are the start's. On a busy machine the first events can come before the start's view
    // exists, and a full condor_q answers them: the targeted calls come later, and are waited for.
    const q = await eventually(
      () => {
        const now = queries(sc);
        return now.targeted > 0 ? now : undefined;
      },
      30_000,
      "a targeted condor_q",
    );
    expect(q.full).toBeLessThanOrEqual(2);
  }, 60_000);

  test("a job held and then released (012, 013)", async () => {
    const req = pod("held");
    const jid = await create(sc, req);
    await running(sc, req);
    condor(sc, "condor_hold", jid);
    const held = await eventually(
      async () => {
        const st = await sc.statusOf(req.pod);
        return main(st)?.waiting?.reason === "JobHeld" ? st : undefined;
      },
      20_000,
      "JobHeld",
    );
    expect(main(held).waiting.message).toContain("HoldReasonCode");
    condor(sc, "condor_release", jid);
    await eventually(async () => (main(await sc.statusOf(req.pod))?.waiting?.reason === "JobHeld" ? undefined : true), 20_000, "the release");
    await running(sc, req);
  }, 90_000);

  test("a job evicted (condor_vacate_job, 004) and started again (001)", async () => {
    const req = pod("evicted");
    const jid = await create(sc, req);
    const first = main(await running(sc, req)).running.startedAt;
    expect(condor(sc, "condor_vacate_job", jid)).toContain("vacated");
    const again = await eventually(
      async () => {
        const st = await sc.statusOf(req.pod);
        return main(st)?.running && main(st).running.startedAt !== first ? st : undefined;
      },
      30_000,
      "the job running again after its eviction",
    );
    expect(main(again).running.startedAt > first).toBe(true);
  }, 90_000);

  test("a job removed outside the sidecar (009) is reported at once, without waiting for the reconciler", async () => {
    const req = pod("removed");
    const jid = await create(sc, req);
    await running(sc, req);
    const before = queries(sc).full;
    condor(sc, "condor_rm", jid);
    const st = await eventually(
      async () => {
        const s = await sc.statusOf(req.pod);
        return main(s)?.terminated ? s : undefined;
      },
      20_000,
      "the removal reported",
    );
    expect(main(st).terminated.reason).toBe("JobRemoved");
    expect(queries(sc).full).toBe(before);
  }, 60_000);

  test("a job that appends forged events for another pod's job id changes nothing of that pod", async () => {
    const victim = pod("victim");
    const vjid = await create(sc, victim);
    await running(sc, victim);
    const [vc, vp] = vjid.split(".").map(Number);
    const log = eventLogs(sc)[0]!;
    const id = `(${String(vc).padStart(3, "0")}.${String(vp).padStart(3, "0")}.000)`;
    const forged = [
      `005 ${id} 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n`,
      `009 ${id} 2026-11-22 07:32:57 Job was aborted.\n\tforged\n...\n`,
      `033 ${id} 2026-11-22 07:32:58 Setting job attribute InterLinkC0State to "terminated 0 Completed"\n...\n`,
    ].join("");
    // The attacker is an ordinary job of the same user (a single-user pool): it can write the
    // log. Its script runs outside any container (interLink's job script), as a job's own
    // process can on such a pool.
    const attacker = makeCreateRequest({
      metadata: { name: "attacker", uid: uid() },
      spec: { containers: [{ name: "main", image: "busybox", command: ["false"], resources: {} }] },
      jobScript: `#!/bin/bash\nprintf '%s' '${forged}' >> '${log}'\nsleep 60\n`,
    });
    const targetedBefore = queries(sc).targeted;
    await create(sc, attacker);
    await eventually(() => (readFileSync(log, "utf8").includes("forged") ? true : undefined), 20_000, "the forged events in the log");
    // The forged events were read and cost a targeted condor_q of the victim's id ...
    await eventually(() => (queries(sc).targeted > targetedBefore + 1 ? true : undefined), 20_000, "a targeted condor_q after the forgery");
    await Bun.sleep(1500);
    // ... which says the job runs: the victim's pod is still running.
    const st = await sc.statusOf(victim.pod);
    expect(main(st).running).toBeDefined();
    expect(main(st).terminated).toBeUndefined();
    expect(condor(sc, "condor_q", vjid, "-af", "JobStatus").trim()).toBe("2");
  }, 90_000);

  test("a log truncated under the sidecar: the gap is reconciled from the queue, and later events are followed", async () => {
    const req = pod("after-truncation");
    const jid = await create(sc, req);
    await running(sc, req);
    const fullBefore = queries(sc).full;
    for (const log of eventLogs(sc)) truncateSync(log, 0);
    condor(sc, "condor_rm", jid);
    const st = await eventually(
      async () => {
        const s = await sc.statusOf(req.pod);
        return main(s)?.terminated ? s : undefined;
      },
      30_000,
      "the removal after the truncation",
    );
    expect(main(st).terminated.reason).toBe("JobRemoved");
    await eventually(() => (queries(sc).full > fullBefore ? true : undefined), 20_000, "a full condor_q for the gap");
    expect(sc.log()).toContain("was truncated");
    // Events written after the truncation are followed again.
    const next = pod("after-truncation-2");
    await create(sc, next);
    await running(sc, next);
  }, 90_000);
});

test("a restart in the middle of a burst of events loses no change and submits nothing twice", async () => {
  let sc = await start({ config: CONFIG + "MaxConcurrentSubmits: 4\n" });
  const reqs = Array.from({ length: 12 }, (_, i) => pod(`burst-${i}`));
  const jids = new Map<string, string>();
  for (const r of reqs) jids.set(r.pod.metadata.uid, await create(sc, r));
  for (const r of reqs) await running(sc, r);
  // A burst of changes, the sidecar killed while its events are written.
  const removed = reqs.slice(0, 6);
  const rm = removed.map((r) =>
    Bun.spawn([join(CONDOR_BIN, "condor_rm"), jids.get(r.pod.metadata.uid)!], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } })
  );
  await sc.kill9();
  await Promise.all(rm.map((p) => p.exited));
  sc = await start({ dir: sc.dir, config: CONFIG + "MaxConcurrentSubmits: 4\n" });
  for (const r of removed) {
    await eventually(
      async () => (main(await sc.statusOf(r.pod))?.terminated?.reason === "JobRemoved" ? true : undefined),
      30_000,
      `${r.pod.metadata.name} removed`,
    );
  }
  for (const r of reqs.slice(6)) expect(main(await sc.statusOf(r.pod))?.running).toBeDefined();
  // A create sent again after the restart answers the same job.
  for (const r of reqs) {
    const again = await sc.call("POST", "/create", r);
    expect(JSON.parse(again.body).PodJID).toBe(jids.get(r.pod.metadata.uid)!);
  }
  const q = condor(sc, "condor_q", "-allusers", "-af", "InterLinkPodUID") + condor(sc, "condor_history", "-af", "InterLinkPodUID");
  for (const r of reqs) expect(q.split("\n").filter((l) => l.trim() === r.pod.metadata.uid).length).toBe(1);
  // The saved offset caught up: it sits at the end of the log, just past a "..." line.
  const log = eventLogs(sc)[0]!;
  const db = new (await import("bun:sqlite")).Database(join(sc.dataRoot, "state.db"), { readonly: true });
  await eventually(
    () => {
      const row = db.query("SELECT read_offset FROM event_logs").get() as { read_offset: number };
      return row.read_offset === readFileSync(log).length ? true : undefined;
    },
    20_000,
    "the saved offset at the end of the log",
  );
  db.close();
  expect(readFileSync(log, "utf8").endsWith("...\n")).toBe(true);
}, 180_000);

test("a log in a format the sidecar does not read (XML) falls back to watching the queue", async () => {
  const sc = await start();
  writeFileSync(join(sc.home, "config.json"), JSON.stringify({ userlogFormatOptions: "XML" }));
  const req = pod("xml", "sleep 2; exit 3");
  await create(sc, req);
  expect(readFileSync(eventLogs(sc)[0]!, "utf8")).toContain("<c>");
  const st = await eventually(
    async () => {
      const s = await sc.statusOf(req.pod);
      return main(s)?.terminated ? s : undefined;
    },
    30_000,
    "the job's end, found by the watch",
  );
  expect(main(st).terminated.exitCode).toBe(3);
  expect(sc.log()).toContain("format the sidecar does not read (xml)");
  // Watched for changes every second (docs/status.md#following-spooled-jobs); the full condor_q
  // runs at start and for gaps only, not every period.
  expect(queries(sc).watch).toBeGreaterThan(0);
  expect(queries(sc).full).toBeLessThanOrEqual(3);
}, 90_000);

test("a spooled job keeps its own job.log and is watched for changes", async () => {
  const sc = await start({ args: ["--spool", "always"] });
  const req = pod("spooled", "sleep 1; exit 0");
  await create(sc, req);
  expect(eventLogs(sc)).toEqual([]);
  await eventually(async () => (main(await sc.statusOf(req.pod))?.terminated ? true : undefined), 60_000, "the spooled job's end");
  // The full condor_q stays at start (ReconcileMinutes is 60); test/e2e/spool-watch.test.ts has the rest.
  expect(queries(sc).watch).toBeGreaterThan(0);
  expect(queries(sc).full).toBeLessThanOrEqual(2);
}, 120_000);

test(
  "a job's end logged before the schedd marks it done (the shadow writes 005, then the reaper sets JobStatus): reported without waiting for the reconciler",
  async () => {
    // docs/htcondor.md#who-writes-an-event-and-when: minicondor's reaper waits 3 s after the 005 here.
    const sc = await start({ env: { MINICONDOR_REAPER_DELAY_MS: "3000" } });
    const req = pod("reaped-late", "sleep 1; exit 4");
    await create(sc, req);
    const st = await eventually(
      async () => {
        const s = await sc.statusOf(req.pod);
        return main(s)?.terminated ? s : undefined;
      },
      30_000,
      "the job's end",
    );
    expect(main(st).terminated.exitCode).toBe(4);
  },
  60_000,
);
