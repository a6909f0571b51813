// A job id is not an identity (docs/threat-model.md#a-job-id-is-not-an-identity): a schedd whose
// queue starts over hands the recorded ids to other jobs. The sidecar never takes such a job for
// its pod's: the pod reads as gone (docs/status.md#a-job-id-that-names-another-job), and no
// condor_rm touches the stranger (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours).
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, sidecars } from "../helpers/sidecar.ts";
import { resetQueue } from "../minicondor/src/testkit.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
/** A pod whose job runs `background` in the wrapper, outside the container (interLink's wstunnel channel). */
const pod = (name: string, background?: string) =>
  makeCreateRequest({
    metadata: {
      name,
      uid: `7777aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}`,
      ...(background ? { annotations: { "interlink.eu/wstunnel-client-commands": background } } : {}),
    },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 300"], resources: {} }] },
  });

/** Shell code, run by the job, that rewrites attributes of its own ad once `go` exists, and keeps doing so. */
function forgeWhen(go: string, attrs: Record<string, string>): string {
  const sets = Object.entries(attrs).map(([k, v]) => `"$_CONDOR_BIN/../libexec/condor_chirp" set_job_attr ${k} '"${v}"'`);
  return `while [ ! -e ${go} ]; do sleep 0.2; done; while :; do ${sets.join("; ")}; sleep 0.3; done`;
}

const { start } = sidecars();

const run = (sc: Sidecar, tool: string, args: string[]) =>
  Bun.spawnSync([join(CONDOR_BIN, tool), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } });
const out = (sc: Sidecar, tool: string, args: string[]) => run(sc, tool, args).stdout.toString();
const statuses = async (sc: Sidecar, pods: Json[]): Promise<Json[]> => JSON.parse((await sc.call("GET", "/status", pods)).body) as Json[];
/** condor_rm's argv in each call, as JSON (as calls.log writes it). */
const rmCalls = (sc: Sidecar) => sc.calls("condor_rm").map((c) => JSON.stringify(c.argv));

describe("a schedd whose queue started over while the sidecar was down", () => {
  test("the pods read as gone with JobReplaced, never JobTampered; the other jobs that got their ids stay, through status and delete", async () => {
    let sc = await start();
    const pods = [pod("a"), pod("b"), pod("c")];
    const jids: string[] = [];
    for (const p of pods) {
      const res = await sc.call("POST", "/create", p);
      expect(res.status).toBe(200);
      jids.push(JSON.parse(res.body).PodJID);
    }
    expect(jids).toEqual(["1.0", "2.0", "3.0"]);
    await eventually(
      async () => ((await statuses(sc, pods.map((p) => p.pod))).every((s) => s.containers[0].state.running) ? true : undefined),
      60_000,
      "the three pods running",
    );
    const ours = out(sc, "condor_q", ["-af", "GlobalJobId", "QDate"]).trim().split("\n");
    expect(ours).toHaveLength(3);
    expect(await sc.stop()).toBe(0);

    // Reinstalled: a new spool, ids from 1 again; three jobs of someone else get 1.0 to 3.0,
    // queued after the sidecar's (a reinstall takes longer than a second).
    const lastQDate = Math.max(...ours.map((l) => Number(l.split(" ")[1])));
    await eventually(() => (Math.floor(Date.now() / 1000) > lastQDate ? true : undefined), 10_000, "a later second");
    resetQueue(sc.home);
    writeFileSync(join(sc.dir, "other.sub"), "executable = /bin/sleep\narguments = 300\nqueue\n");
    for (const jid of jids) expect(out(sc, "condor_submit", ["-terse", join(sc.dir, "other.sub")])).toBe(`${jid} - ${jid}\n`);
    const others = () => out(sc, "condor_q", ["-af", "ClusterId", "JobStatus", "GlobalJobId"]).trim().split("\n").filter(Boolean);
    const before = others();
    expect(before).toHaveLength(3);
    for (const l of before) expect(ours).not.toContain(l.split(" ")[2]);
    const rmBefore = rmCalls(sc).length;

    sc = await start({ dir: sc.dir });
    const st = await eventually(
      async () => {
        const s = await statuses(sc, pods.map((p) => p.pod));
        return s.length === 3 && s.every((x) => x.containers[0].state.terminated) ? s : undefined;
      },
      60_000,
      "the three pods final",
    );
    for (const [i, s] of st.entries()) {
      expect(s.JID).toBe(jids[i]);
      expect(s.containers[0].state.terminated).toMatchObject({ reason: "JobReplaced", exitCode: 1 });
      expect(s.containers[0].state.terminated.message).toContain("the sidecar removed nothing");
    }
    // The other jobs are where they were, untouched (idle or running, as their own start goes, never
    // removed: JobStatus 3); no condor_rm ran.
    const untouched = () => {
      expect(others().map((l) => l.split(" ")[0] + " " + l.split(" ")[2])).toEqual(before.map((l) => l.split(" ")[0] + " " + l.split(" ")[2]));
      for (const l of others()) expect(l.split(" ")[1]).not.toBe("3");
    };
    untouched();
    expect(rmCalls(sc).length).toBe(rmBefore);
    expect(sc.log()).not.toContain("a job rewrote its identity attributes");

    // A delete of each pod removes its own job only: here there is none left.
    for (const p of pods) {
      const res = await sc.call("POST", "/delete", p.pod);
      expect(res.status).toBe(200);
      expect(res.body).not.toContain("removed)");
    }
    untouched();
    for (const l of rmCalls(sc).slice(rmBefore)) expect(l).toContain("-constraint");
  }, 240_000);
});

describe("a job that rewrites its identity is still caught (docs/threat-model.md#a-job-id-is-not-an-identity)", () => {
  test(
    "one that chirps another pod's UID, and one that chirps another GlobalJobId: both JobTampered and removed by a constraint; the victim runs on",
    async () => {
      const sc = await start();
      const go = join(sc.dir, "go");
      const victim = pod("victim");
      const thief = pod("thief", forgeWhen(go, { InterLinkPodUID: victim.pod.metadata.uid }));
      const mask = pod("mask", forgeWhen(go, { GlobalJobId: "elsewhere#1.0#1" }));
      const jid: Record<string, string> = {};
      for (const p of [victim, thief, mask]) {
        const res = await sc.call("POST", "/create", p);
        expect(res.status).toBe(200);
        jid[p.pod.metadata.name] = JSON.parse(res.body).PodJID;
      }
      // The jobs rewrite their ads only once the sidecar has recorded who they are.
      const recorded = () => {
        const db = new Database(join(sc.dataRoot, "state.db"), { readonly: true });
        try {
          return (db.query("SELECT COUNT(*) AS n FROM pods WHERE global_job_id IS NOT NULL").get() as { n: number }).n;
        } finally {
          db.close();
        }
      };
      await eventually(() => (recorded() === 3 ? true : undefined), 60_000, "the three GlobalJobIds recorded");
      writeFileSync(go, "");
      const inQueue = (id: string) => out(sc, "condor_q", [id, "-af", "JobStatus"]).trim() !== "";
      for (const p of [thief, mask]) {
        const s = await eventually(
          async () => {
            const [x] = await statuses(sc, [p.pod]);
            return x?.containers[0].state.terminated ? x : undefined;
          },
          60_000,
          `${p.pod.metadata.name} failed`,
        );
        expect(s.containers[0].state.terminated).toMatchObject({ reason: "JobTampered", exitCode: 1 });
        expect(s.containers[0].state.terminated.message).toContain(p === thief ? "InterLinkPodUID" : "GlobalJobId");
        await eventually(() => (inQueue(jid[p.pod.metadata.name]!) ? undefined : true), 30_000, `${p.pod.metadata.name}'s job removed`);
      }
      expect(inQueue(jid.victim!)).toBe(true);
      const [v] = await statuses(sc, [victim.pod]);
      expect(v.containers[0].state.terminated).toBeUndefined();
      // Each removal named its job by id and by what proves it the pod's.
      const rms = rmCalls(sc);
      expect(rms.length).toBeGreaterThan(0);
      for (const l of rms) expect(l).toMatch(/"-constraint","ClusterId == \d+ && ProcId == \d+ && \(GlobalJobId == /);
      expect(rms.join("\n")).not.toContain(`ClusterId == ${jid.victim!.split(".")[0]} &&`);
    },
    180_000,
  );
});
