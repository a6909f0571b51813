// docs/threat-model.md#4-a-job-forges-another-pods-status: a job can chirp any attribute of its own ad (condor_chirp set_job_attr), so
// no attribute it can write decides which pod an ad belongs to. Each test attacks from another
// side: passing for another pod, hiding from the sidecar, being adopted by an interrupted create,
// and being adopted after the store was lost.
import { describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, sidecars } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `5555eeee-0000-4000-8000-${String(++n).padStart(12, "0")}`;

/** A pod whose job runs `background` in the wrapper, outside the container (interLink's wstunnel channel). */
function pod(name: string, opts: { background?: string; script?: string } = {}) {
  return makeCreateRequest({
    metadata: { name, uid: uid(), ...(opts.background ? { annotations: { "interlink.eu/wstunnel-client-commands": opts.background } } : {}) },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", opts.script ?? "sleep 120"], resources: {} }] },
  });
}

/** Shell code, run by the job, that keeps rewriting attributes of its own ad (after `delay` seconds). */
function forge(attrs: Record<string, string>, delay = 0): string {
  const sets = Object.entries(attrs).map(([k, v]) => `"$_CONDOR_BIN/../libexec/condor_chirp" set_job_attr ${k} '"${v}"'`);
  return `sleep ${delay}; while :; do ${sets.join("; ")}; sleep 0.3; done`;
}

const tool = (sc: Sidecar, name: string, args: string[]) =>
  Bun.spawnSync([join(CONDOR_BIN, name), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } }).stdout.toString();
/** Job ids in the queue whose ad says this pod UID now. */
const claiming = (sc: Sidecar, podUid: string) =>
  tool(sc, "condor_q", ["-allusers", "-constraint", `InterLinkPodUID == "${podUid}"`, "-af:j", "JobStatus"]).split("\n").filter(Boolean).map((l) =>
    l.split(" ")[0]!
  );
const inQueue = (sc: Sidecar, jid: string) => tool(sc, "condor_q", [jid, "-af:j", "JobStatus"]).trim() !== "";

const { start, started } = sidecars();

async function create(sc: Sidecar, r: Json): Promise<string> {
  const res = await sc.call("POST", "/create", r);
  expect(res.status).toBe(200);
  return JSON.parse(res.body).PodJID as string;
}

describe("a job that rewrites its identity (docs/threat-model.md#4-a-job-forges-another-pods-status)", () => {
  test("a job that claims another pod's UID changes nothing of that pod, and is failed and removed", async () => {
    const sc = await start();
    const victim = pod("victim");
    const victimJid = await create(sc, victim);
    const forged = "1 terminated Completed 0 1 2 0 0 - - - - -";
    const attacker = pod("attacker", { background: forge({ InterLinkPodUID: victim.pod.metadata.uid, InterLinkCtr0State: forged }) });
    const attackerJid = await create(sc, attacker);
    await eventually(() => (claiming(sc, victim.pod.metadata.uid).includes(attackerJid) ? true : undefined), 60_000, "the attacker's chirp");

    // The victim reads its own job: running, never the forged "Completed".
    const v = await eventually(
      async () => {
        const st = await sc.statusOf(victim.pod);
        return st?.containers[0].state.running ? st : undefined;
      },
      60_000,
      "the victim running",
    );
    expect(v.JID).toBe(victimJid);
    for (let i = 0; i < 5; i++) {
      const st = await sc.statusOf(victim.pod);
      expect(st.containers[0].state.terminated).toBeUndefined();
      await Bun.sleep(300);
    }
    // The attacker is failed, its job removed: what it reports no longer counts.
    const a = await eventually(
      async () => {
        const st = await sc.statusOf(attacker.pod);
        return st?.containers[0].state.terminated ? st : undefined;
      },
      30_000,
      "the attacker failed",
    );
    expect(a.containers[0].state.terminated).toMatchObject({ reason: "JobTampered", exitCode: 1 });
    expect(a.containers[0].state.terminated.message).toContain("InterLinkPodUID");
    await eventually(() => (inQueue(sc, attackerJid) ? undefined : true), 30_000, "the attacker's job removed");
    expect(inQueue(sc, victimJid)).toBe(true);
    expect(sc.log()).toContain("a job rewrote its identity attributes");
  }, 120_000);

  test("a job that rewrites its InterLinkSidecarId to hide is still followed by its id, failed and removed", async () => {
    const sc = await start();
    const hider = pod("hider", { background: forge({ InterLinkSidecarId: "someone-else" }) });
    const jid = await create(sc, hider);
    const st = await eventually(
      async () => {
        const s = await sc.statusOf(hider.pod);
        return s?.containers[0].state.terminated ? s : undefined;
      },
      40_000,
      "the hider failed (well before the 60 s after which a missing job reads lost)",
    );
    expect(st.containers[0].state.terminated).toMatchObject({ reason: "JobTampered" });
    expect(st.containers[0].state.terminated.message).toContain("InterLinkSidecarId");
    await eventually(() => (inQueue(sc, jid) ? undefined : true), 30_000, "the hider's job removed");
    // A delete still removes the recorded id, even with a final status: by a constraint that names
    // it and proves it the pod's, never by the bare id (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours).
    const before = sc.calls("condor_rm").length;
    expect((await sc.call("POST", "/delete", hider.pod)).status).toBe(200);
    const [c, p] = jid.split(".");
    expect(sc.calls("condor_rm").slice(before).map((call) => call.argv.join(" ")).join("\n")).toContain(`ClusterId == ${c} && ProcId == ${p} && `);
  }, 90_000);

  test("an interrupted create never adopts a job that only claims its UID", async () => {
    const sc = await start({ config: "SubmitTimeoutSeconds: 2\n" });
    const victim = pod("late");
    // The attacker has run (and chirped) before the victim's create began.
    const attacker = pod("squatter", { background: forge({ InterLinkPodUID: victim.pod.metadata.uid }) });
    const attackerJid = await create(sc, attacker);
    await eventually(() => (claiming(sc, victim.pod.metadata.uid).includes(attackerJid) ? true : undefined), 60_000, "the squatter's chirp");
    await Bun.sleep(1100); // a QDate the second after the squatter's chirp, at the earliest
    // condor_submit hangs and is killed at its timeout without queueing anything: the sidecar asks
    // the schedd for the pod's UID and must not take the squatter's job for the pod's.
    writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ tools: { condor_submit: "hang" } }));
    const res = await sc.call("POST", "/create", victim);
    writeFileSync(join(sc.home, "faults.json"), "{}");
    expect(res.status).not.toBe(200);
    expect(res.body).not.toContain(attackerJid);
    // Asked again, it submits the pod's own job.
    const jid = await create(sc, victim);
    expect(jid).not.toBe(attackerJid);
  }, 120_000);

  test("after the store is lost, two jobs that claim one pod are adopted by neither", async () => {
    const dir = (await start()).dir;
    const first = started.pop()!;
    const a = pod("claimed");
    const aJid = await create(first, a);
    // The claimer starts forging once this sidecar is gone (its refresher would fail and remove it).
    const b = pod("claimer", { background: forge({ InterLinkPodUID: a.pod.metadata.uid }, 3) });
    const bJid = await create(first, b);
    await first.kill9();
    await eventually(() => (claiming(first, a.pod.metadata.uid).length === 2 ? true : undefined), 60_000, "both jobs claiming the pod");
    rmSync(join(first.dataRoot, "state.db"), { force: true });
    rmSync(join(first.dataRoot, "state.db-wal"), { force: true });
    rmSync(join(first.dataRoot, "state.db-shm"), { force: true });
    const sc = await start({ dir });
    await eventually(() => (sc.log().includes("several jobs claim one pod") ? true : undefined), 30_000, "the conflict reported");
    expect(sc.log()).toContain(aJid);
    expect(sc.log()).toContain(bJid);
    // Neither job stands for the pod: it is not known, and both jobs are left for an operator.
    expect(await sc.statusOf(a.pod)).toBeUndefined();
    expect(inQueue(sc, aJid) && inQueue(sc, bJid)).toBe(true);
  }, 120_000);
});
