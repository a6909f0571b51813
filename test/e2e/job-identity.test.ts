// A job id is not an identity (docs/threat-model.md#a-job-id-is-not-an-identity): a schedd whose
// queue starts over hands the recorded ids to other jobs. The sidecar never takes such a job for
// its pod's: the pod reads as gone (docs/status.md#a-job-id-that-names-another-job), and no
// condor_rm touches the stranger (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { resetQueue } from "../minicondor/src/testkit.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const pod = (name: string) =>
  makeCreateRequest({
    metadata: { name, uid: `7777aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}` },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 300"], resources: {} }] },
  });

const started: Sidecar[] = [];
afterAll(async () => {
  for (const s of started) await s.destroy();
}, TEARDOWN_TIMEOUT_MS);

const run = (sc: Sidecar, tool: string, args: string[]) =>
  Bun.spawnSync([join(CONDOR_BIN, tool), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } });
const out = (sc: Sidecar, tool: string, args: string[]) => run(sc, tool, args).stdout.toString();
const statuses = async (sc: Sidecar, pods: Json[]): Promise<Json[]> => JSON.parse((await sc.call("GET", "/status", pods)).body) as Json[];
const rmCalls = (sc: Sidecar) =>
  existsSync(join(sc.home, "calls.log")) ? readFileSync(join(sc.home, "calls.log"), "utf8").split("\n").filter((l) => l.split(" ")[1] === "condor_rm") : [];

describe("a schedd whose queue started over while the sidecar was down", () => {
  test("the pods read as gone with JobReplaced, never JobTampered; the other jobs that got their ids stay, through status and delete", async () => {
    let sc = await startSidecar();
    started.push(sc);
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

    sc = await startSidecar({ dir: sc.dir });
    started.push(sc);
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
    // The other jobs are where they were, untouched; no condor_rm ran.
    expect(others().map((l) => l.split(" ")[0] + " " + l.split(" ")[2])).toEqual(before.map((l) => l.split(" ")[0] + " " + l.split(" ")[2]));
    for (const l of others()) expect(l.split(" ")[1]).not.toBe("3");
    expect(rmCalls(sc).length).toBe(rmBefore);
    expect(sc.log()).not.toContain("a job rewrote its identity attributes");

    // A delete of each pod removes its own job only: here there is none left.
    for (const p of pods) {
      const res = await sc.call("POST", "/delete", p.pod);
      expect(res.status).toBe(200);
      expect(res.body).not.toContain("removed)");
    }
    expect(others().map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual(before.map((l) => l.split(" ").slice(0, 2).join(" ")));
    for (const l of rmCalls(sc).slice(rmBefore)) expect(l).toContain("-constraint");
  }, 240_000);
});
