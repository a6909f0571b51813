// Pods that interLink forgot (docs/status.md#pods-interlink-forgot): a loop that calls /status as
// interLink's virtual kubelet does (one pod per call, every pod it tracks, a pause between rounds;
// docs/interlink.md#how-often-the-virtual-kubelet-asks) against a running sidecar on minicondor,
// then stops asking about some pods. Thresholds are small here so that the test runs in seconds.
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;

const CONFIG = (removeAfter: number) => `ForgottenPods:\n  AfterSeconds: 1\n  Rounds: 3\n  SilenceSeconds: 2\n  RemoveAfterSeconds: ${removeAfter}\n`;
/** The virtual kubelet pauses 5 s between rounds; scaled down as the thresholds are. */
const PAUSE_MS = 100;
/** Two slots: six of the eight jobs wait idle, which is all the test needs of them (queued, idle or running). */
const SLOTS = { MINICONDOR_CPUS: "2" };

const pods = Array.from({ length: 8 }, (_, i) =>
  makeCreateRequest({
    metadata: { name: `kept-${i}`, uid: `3535aaaa-0000-4000-8000-${String(i).padStart(12, "0")}` },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 600"], resources: {} }] },
  }).pod);
const uids = pods.map((p) => p.metadata.uid as string);
/** The pods interLink drops (its /delete failed, say) and never names again. */
const dropped = new Set(uids.slice(0, 3));
const kept = uids.filter((u) => !dropped.has(u));

let sc: Sidecar;
afterAll(async () => {
  await loop?.stop();
  await sc?.destroy();
}, TEARDOWN_TIMEOUT_MS);

/** The virtual kubelet's status loop: every pod `asked()` returns, one /status call each, then a pause. */
function statusLoop(asked: () => readonly string[]): { rounds: () => number; stop: () => Promise<void> } {
  let running = true;
  let rounds = 0;
  const done = (async () => {
    while (running) {
      for (const uid of asked()) {
        if (!running) break;
        const pod = pods.find((p) => p.metadata.uid === uid)!;
        const r = await sc.call("GET", "/status", [{ ...pod, status: { phase: "Running" } }]);
        expect(r.status).toBe(200);
      }
      rounds++;
      await Bun.sleep(PAUSE_MS);
    }
  })();
  return {
    rounds: () => rounds,
    stop: async () => {
      running = false;
      await done;
    },
  };
}
let loop: ReturnType<typeof statusLoop> | undefined;

async function forgotten(): Promise<{ count: number; pods: Json[] }> {
  const r = await sc.call("GET", "/status", []);
  expect(r.status).toBe(200);
  return JSON.parse(r.body).forgotten ?? { count: 0, pods: [] };
}

async function gauge(): Promise<number> {
  const text = (await sc.call("GET", "/metrics")).body;
  const line = text.split("\n").find((l) => l.startsWith("htcondor_sidecar_forgotten_pods "));
  return Number(line?.split(" ")[1]);
}

/** JobStatus by pod UID, from the emulator's queue. */
function queued(): Map<string, number> {
  const env = { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" };
  const r = Bun.spawnSync([join(CONDOR_BIN, "condor_q"), "-allusers", "-af", "InterLinkPodUID", "JobStatus"], { env });
  return new Map(r.stdout.toString().trim().split("\n").filter(Boolean).map((l) => l.split(" ") as [string, string]).map(([u, s]) => [u, Number(s)]));
}

/** Waits until the loop has run `n` more rounds and at least `ms` more of wall time. */
async function rounds(n: number, ms: number): Promise<void> {
  const from = loop!.rounds();
  const t0 = Date.now();
  await eventually(() => (loop!.rounds() - from >= n && Date.now() - t0 >= ms ? true : undefined), 120_000, `${n} rounds`);
}

test(
  "pods no longer asked about are reported forgotten, others not; silence forgets nothing; after a restart the clock starts again, and the jobs are removed when due",
  async () => {
    sc = await startSidecar({ config: CONFIG(0), env: SLOTS });
    const created = await Promise.all(pods.map((pod) => sc.call("POST", "/create", makeCreateRequest({ metadata: pod.metadata, spec: pod.spec }))));
    expect(created.map((r) => r.status)).toEqual(pods.map(() => 200));
    // the jobs are in the queue, idle or running: interLink's pods are live
    await eventually(() => (uids.every((u) => [1, 2].includes(queued().get(u) ?? 0)) ? true : undefined), 60_000, "every job queued");

    // 1. every pod asked about, round after round: none is forgotten (many times the thresholds)
    loop = statusLoop(() => uids);
    await rounds(12, 4_000);
    expect(await forgotten()).toEqual({ count: 0, pods: [] });
    expect(await gauge()).toBe(0);

    // 2. three pods dropped: reported, with pod and job, in the ping, the gauge and the log
    await loop.stop();
    loop = statusLoop(() => kept);
    const seen = await eventually(
      async () => {
        const f = await forgotten();
        return f.count === dropped.size ? f : undefined;
      },
      60_000,
      "the dropped pods reported forgotten",
    );
    expect(new Set(seen.pods.map((p: Json) => p.uid))).toEqual(dropped);
    for (const p of seen.pods) {
      expect(p.pod).toMatch(/^default\/kept-[0-2]$/);
      expect(p.job).toMatch(/^\d+\.\d+$/);
    }
    expect(await gauge()).toBe(dropped.size);
    await eventually(
      () => (sc.log().split("\n").filter((l) => l.includes("forgotten") && l.includes('"pod":"default/kept-')).length >= 3 ? true : undefined),
      30_000,
      "a log line per forgotten pod",
    );
    // reported only: their jobs run on
    expect([...dropped].every((u) => [1, 2].includes(queued().get(u) ?? 0))).toBe(true);

    // 3. interLink silent as a whole (no call about any pod; pings go on): no other pod is forgotten,
    // for many times the thresholds of wall time
    await loop.stop();
    const quietFrom = Date.now();
    await eventually(
      async () => {
        const f = await forgotten();
        expect(new Set(f.pods.map((p: Json) => p.uid))).toEqual(dropped);
        return Date.now() - quietFrom > 8_000 ? true : undefined;
      },
      60_000,
      "a silence of 8 s",
    );

    // 4. a forgotten pod asked about again is remembered
    loop = statusLoop(() => uids);
    await eventually(async () => ((await forgotten()).count === 0 ? true : undefined), 60_000, "the pods remembered");
    await eventually(() => (sc.log().includes("asks about a forgotten pod again: remembered") ? true : undefined), 30_000, "a log line saying so");
    await loop.stop();

    // 5. a restart: the clock starts again (nothing is forgotten at once), then the dropped pods are
    // forgotten again and, with RemoveAfterSeconds, their jobs removed; the others run on
    expect(await sc.stop()).toBe(0);
    sc = await startSidecar({ dir: sc.dir, config: CONFIG(2), env: SLOTS });
    await sc.call("GET", "/status", pods); // the view of the queue is ready
    expect(await forgotten()).toEqual({ count: 0, pods: [] });
    loop = statusLoop(() => kept);
    await eventually(() => ([...dropped].every((u) => ![1, 2].includes(queued().get(u) ?? 0)) ? true : undefined), 60_000, "the dropped pods' jobs removed");
    expect(kept.every((u) => [1, 2].includes(queued().get(u) ?? 0))).toBe(true);
    const removedLines = () => sc.log().split("\n").filter((l) => l.includes("removed the job of a pod interLink forgot"));
    await eventually(() => (removedLines().length === dropped.size ? true : undefined), 30_000, "a log line per removed job");
    expect(removedLines().every((l) => [...dropped].some((u) => l.includes(u)))).toBe(true);
    await loop.stop();
  },
  300_000,
);
