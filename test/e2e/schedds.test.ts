// One sidecar, several schedds (docs/schedds.md): creates spread by weight over the schedds that
// answer; a schedd that stops takes no new pod, its pods keep their last state and are neither
// failed nor resubmitted, a delete for one waits until it is back; a restart, and a lost store,
// find each job on its own schedd. Job ids are per schedd (docs/htcondor.md#several-schedds-in-one-pool).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, measureLoad, readCalls, scaled, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { cleanup, startSchedd, stopSchedd } from "../minicondor/src/testkit.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;

const SCHEDDS = ["localhost", "second@localhost", "third@localhost"];
let sc: Sidecar | undefined;
afterEach(async () => {
  await sc?.destroy();
  sc = undefined;
}, TEARDOWN_TIMEOUT_MS);

/** A folder whose minicondor pool has three schedds, each machine with `cpus` CPUs. */
function poolDir(cpus: number): string {
  const dir = mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
  mkdirSync(join(dir, "minicondor"));
  writeFileSync(join(dir, "minicondor", "config.json"), JSON.stringify({ host: "localhost", schedds: ["second", "third"], cpus, memory: 64 * 1024 }));
  return dir;
}

const scheddsConfig = (weights: number[] = [1, 1, 1]) =>
  "Spool: never\nSchedds:\n" + SCHEDDS.map((n, i) => `  - Name: "${n}"\n    Weight: ${weights[i]}\n`).join("");

const HEX: Record<string, string> = { wgt: "aaaa", stp: "bbbb", rst: "cccc", fol: "dddd", tmo: "eeee" };
const pod = (tag: string, i: number, script = "sleep 600") =>
  makeCreateRequest({
    metadata: { name: `${tag}-${i}`, uid: `3333dddd-${HEX[tag]}-4000-8000-${String(i).padStart(12, "0")}` },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
  });

/**
 * The schedd a PodJID names (`<schedd>#<cluster>.<proc>`); a plain `<cluster>.<proc>` is a job of the
 * first schedd, which keeps DataRootFolder (docs/schedds.md#job-ids).
 */
const scheddOf = (jid: string) => (jid.includes("#") ? jid.slice(0, jid.lastIndexOf("#")) : SCHEDDS[0]!);

/** Job ids by pod UID on one schedd of the pool, from its queue and its history. */
function jobsOn(home: string, schedd: string): Map<string, string[]> {
  const env = { MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const bin = join(import.meta.dir, "../minicondor/bin");
  const out = new Map<string, string[]>();
  for (const tool of ["condor_q", "condor_history"]) {
    const r = Bun.spawnSync([join(bin, tool), "-name", schedd, "-af", "ClusterId", "ProcId", "InterLinkPodUID"], { env });
    for (const line of r.stdout.toString().split("\n")) {
      const [c, p, uid] = line.trim().split(" ");
      if (!uid || uid === "undefined") continue;
      out.set(uid, [...(out.get(uid) ?? []), `${c}.${p}`]);
    }
  }
  return out;
}

async function createAll(s: Sidecar, reqs: Json[]): Promise<Map<string, { status: number; jid: string; body: string }>> {
  const out = new Map<string, { status: number; jid: string; body: string }>();
  await Promise.all(reqs.map(async (r) => {
    const res = await s.call("POST", "/create", r, { timeoutMs: 300_000 });
    out.set(r.pod.metadata.uid, { status: res.status, body: res.body, jid: res.status === 200 ? JSON.parse(res.body).PodJID : "" });
  }));
  return out;
}

describe("several schedds (docs/schedds.md)", () => {
  test("300 concurrent creates over 3 schedds land on each in proportion to its weight, in a few clusters each", async () => {
    sc = await startSidecar({ dir: poolDir(1), config: scheddsConfig([1, 2, 3]) });
    const reqs = Array.from({ length: 300 }, (_, i) => pod("wgt", i));
    const answers = await createAll(sc, reqs);
    expect([...answers.values()].filter((a) => a.status !== 200).map((a) => a.body)).toEqual([]);
    const count = (n: string) => [...answers.values()].filter((a) => scheddOf(a.jid) === n).length;
    // weights 1:2:3 of 300 pods: 50, 100, 150 (placement counts idle jobs, so a little slack)
    expect(count(SCHEDDS[0]!)).toBeWithin(35, 66);
    expect(count(SCHEDDS[1]!)).toBeWithin(80, 121);
    expect(count(SCHEDDS[2]!)).toBeWithin(125, 171);
    for (const n of SCHEDDS) {
      const jobs = jobsOn(sc.home, n);
      const mine = [...answers].filter(([, a]) => scheddOf(a.jid) === n);
      // each pod's job is on the schedd its PodJID names, once, with that id
      for (const [uid, a] of mine) expect(jobs.get(uid)).toEqual([a.jid.slice(a.jid.lastIndexOf("#") + 1)]);
      const clusters = new Set(mine.map(([, a]) => a.jid.slice(a.jid.lastIndexOf("#") + 1).split(".")[0]));
      expect(clusters.size).toBeLessThan(mine.length / 4);
    }
  }, 400_000);

  test(
    "a schedd stopped in a burst: every create answers 200 and none goes to it after; its pods stay, stale, never failed or resubmitted; a delete waits for it",
    async () => {
      // Nine CPUs a schedd: the first nine pods run wherever they land, the burst's wait idle (what
      // is checked is where creates go and what a stopped schedd's pods show, not the jobs).
      sc = await startSidecar({ dir: poolDir(9), config: scheddsConfig() });
      const first = await createAll(sc, Array.from({ length: 9 }, (_, i) => pod("stp", i)));
      expect([...first.values()].every((a) => a.status === 200)).toBe(true);
      const onSecond = [...first].filter(([, a]) => scheddOf(a.jid) === SCHEDDS[1]).map(([uid]) => uid);
      expect(onSecond.length).toBeGreaterThan(0);
      const refs = Array.from({ length: 9 }, (_, i) => pod("stp", i).pod);
      await eventually(
        async () => {
          const st: Json[] = JSON.parse((await sc!.call("GET", "/status", refs)).body);
          return st.filter((p) => onSecond.includes(p.UID) && p.containers?.[0]?.state?.running).length === onSecond.length ? true : undefined;
        },
        60_000,
        "the pods on the second schedd to run",
      );

      // a burst, with the second schedd stopped once it has begun
      const burst = Array.from({ length: 40 }, (_, i) => pod("stp", 100 + i));
      const pending = createAll(sc, burst);
      stopSchedd(sc.home, "second");
      const answers = await pending;
      expect([...answers.values()].filter((a) => a.status !== 200).map((a) => a.body)).toEqual([]);
      // once a submit found it stopped, later creates do not even try it (its calls.log: one line per tool call)
      const submitsToSecond = () => readCalls(join(sc!.home, "schedds", "second"), "condor_submit").length;
      const before = submitsToSecond();
      const later = await createAll(sc, Array.from({ length: 12 }, (_, i) => pod("stp", 200 + i)));
      expect([...later.values()].filter((a) => a.status !== 200 || scheddOf(a.jid) === SCHEDDS[1])).toEqual([]);
      expect(submitsToSecond()).toBe(before);

      // the pods on the stopped schedd: not failed, the answer marked stale, the job not resubmitted
      const st = await eventually(
        async () => {
          const r = await sc!.call("GET", "/status", refs);
          return String(r.headers["x-sidecar-stale"] ?? "").includes(`schedd ${SCHEDDS[1]}`) ? r : undefined;
        },
        60_000,
        "the status answer to say the second schedd's pods are stale",
      );
      for (const p of JSON.parse(st.body) as Json[]) {
        if (onSecond.includes(p.UID)) expect(p.containers[0].state.terminated).toBeUndefined();
      }
      const ping = await sc.call("GET", "/status", []);
      expect(ping.status).toBe(200);
      const pingBody = JSON.parse(ping.body);
      expect(pingBody.status).toStartWith("degraded: ");
      expect(pingBody.schedds.find((s: Json) => s.name === SCHEDDS[1]).up).toBe(false);

      // a delete meanwhile is remembered
      const gone = refs.find((r) => r.metadata.uid === onSecond[0])!;
      const del = await sc.call("POST", "/delete", gone);
      expect(del.status).toBe(200);
      expect(del.body).toContain("pending");

      startSchedd(sc.home, "second");
      // back: the deleted pod's job is removed, the others were never resubmitted anywhere
      await eventually(
        () => (jobsOn(sc!.home, SCHEDDS[1]!).has(onSecond[0]!) && !queued(sc!.home, SCHEDDS[1]!, onSecond[0]!) ? true : undefined),
        60_000,
        "the removal",
      );
      for (const uid of onSecond) {
        const everywhere = SCHEDDS.flatMap((n) => jobsOn(sc!.home, n).get(uid) ?? []);
        expect(everywhere).toHaveLength(1);
      }
    },
    400_000,
  );

  test("kill -9 and a restart with a lost store find each job on its own schedd; logs come from each pod's own job", async () => {
    const config = scheddsConfig();
    sc = await startSidecar({ dir: poolDir(64), config });
    const reqs = Array.from({ length: 6 }, (_, i) => pod("rst", i, `echo "I am pod ${i}"; sleep 600`));
    const answers = await createAll(sc, reqs);
    expect(new Set([...answers.values()].map((a) => scheddOf(a.jid))).size).toBe(3);
    // the same job id on two schedds is two pods
    const ids = [...answers.values()].map((a) => a.jid.slice(a.jid.lastIndexOf("#") + 1));
    expect(new Set(ids).size).toBeLessThan(ids.length);
    const logsOf = async (i: number) => (await sc!.logs(reqs[i].pod, "main", {})).body;
    for (let i = 0; i < reqs.length; i++) {
      await eventually(async () => ((await logsOf(i)).includes(`I am pod ${i}`) ? true : undefined), 60_000, `pod ${i}'s log`);
    }

    const adopted = async () => {
      const st = await eventually(
        async () => {
          const r: Json[] = JSON.parse((await sc!.call("GET", "/status", reqs.map((q) => q.pod))).body);
          return r.length === reqs.length ? r : undefined;
        },
        60_000,
        "every pod known again",
      );
      for (const p of st) expect(p.JID).toBe(answers.get(p.UID)!.jid);
    };
    // kill -9, the stores kept
    await sc.kill9();
    sc = await startSidecar({ dir: sc.dir, config });
    await adopted();
    await sc.kill9();
    // the stores of every schedd are lost
    const data = join(sc.dir, "data");
    const roots = [data, ...readdirSync(join(data, "schedds")).map((d) => join(data, "schedds", d))];
    for (const root of roots) for (const f of ["state.db", "state.db-wal", "state.db-shm"]) rmSync(join(root, f), { force: true });
    sc = await startSidecar({ dir: sc.dir, config });
    await adopted();
    for (let i = 0; i < reqs.length; i++) expect(await logsOf(i)).toContain(`I am pod ${i}`);
    for (const n of SCHEDDS) for (const [, jobs] of jobsOn(sc.home, n)) expect(jobs).toHaveLength(1);
  }, 400_000);
});

function queued(home: string, schedd: string, uid: string): boolean {
  const env = { MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const r = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-name", schedd, "-af", "InterLinkPodUID"], { env });
  return r.stdout.toString().split("\n").includes(uid);
}

describe("a submit that timed out (docs/schedds.md#when-a-schedd-goes-away)", () => {
  /** A pool whose second schedd's condor_submit misbehaves (`mode`), and a sidecar that tries the second schedd first. */
  async function slowSecond(mode: string): Promise<Sidecar> {
    const dir = poolDir(64);
    mkdirSync(join(dir, "minicondor", "schedds", "second"), { recursive: true });
    writeFileSync(join(dir, "minicondor", "schedds", "second", "faults.json"), JSON.stringify({ tools: { condor_submit: mode } }));
    return await startSidecar({
      dir,
      config: 'SubmitTimeoutSeconds: 1\nSpool: never\nSchedds:\n  - Name: "localhost"\n  - Name: "second@localhost"\n    Weight: 1000\n',
    });
  }

  test("the job queued anyway: the pod stays on its schedd, with that job, and nothing goes elsewhere", async () => {
    // the jobs are queued, then condor_submit answers only after the sidecar's timeout
    sc = await slowSecond("slowafter:4000");
    const req = pod("tmo", 1);
    const res = await sc.call("POST", "/create", req, { timeoutMs: 60_000 });
    expect([res.status, res.body]).toEqual([200, expect.stringContaining('"PodJID":"second@localhost#1.0"')]);
    expect(jobsOn(sc.home, SCHEDDS[1]!).get(req.pod.metadata.uid)).toEqual(["1.0"]);
    expect(jobsOn(sc.home, SCHEDDS[0]!).get(req.pod.metadata.uid)).toBeUndefined();
  }, 120_000);

  test("nothing queued (the schedd, asked by the pod's UID, has no such job): the create goes to another schedd", async () => {
    sc = await slowSecond("hang");
    const req = pod("tmo", 2);
    const res = await sc.call("POST", "/create", req, { timeoutMs: 60_000 });
    expect([res.status, res.body]).toEqual([200, expect.stringContaining('"PodJID":"1.0"')]);
    expect(jobsOn(sc.home, SCHEDDS[1]!).get(req.pod.metadata.uid)).toBeUndefined();
  }, 120_000);
});

describe("following each schedd as one is followed (docs/schedds.md#following)", () => {
  test("local jobs through the event log on one schedd, spooled jobs on another: each pod's end and logs come from its own job", async () => {
    const config = 'Spool: never\nSchedds:\n  - Name: "localhost"\n  - Name: "second@localhost"\n    Spool: always\n';
    sc = await startSidecar({ dir: poolDir(64), config });
    const reqs = Array.from({ length: 4 }, (_, i) => pod("fol", i, `echo "pod ${i} says hi"; exit ${10 + i}`));
    const answers = await createAll(sc, reqs);
    expect(new Set([...answers.values()].map((a) => scheddOf(a.jid)))).toEqual(new Set(["localhost", "second@localhost"]));
    const ended = await eventually(
      async () => {
        const st: Json[] = JSON.parse((await sc!.call("GET", "/status", reqs.map((q) => q.pod))).body);
        return st.length === reqs.length && st.every((p) => p.containers[0].state.terminated) ? st : undefined;
      },
      90_000,
      "every pod to end",
    );
    for (const p of ended) {
      const i = reqs.findIndex((q) => q.pod.metadata.uid === p.UID);
      expect(p.containers[0].state.terminated.exitCode).toBe(10 + i);
      const logs = await sc.logs(reqs[i]!.pod, "main", {});
      expect(logs.body).toContain(`pod ${i} says hi`);
    }
    // the spooled ones were fetched from their own schedd: condor_transfer_data ran there, never on the first
    expect(readCalls(join(sc.home, "schedds", "second"), "condor_transfer_data").length).toBeGreaterThan(0);
    expect(sc.calls("condor_transfer_data")).toEqual([]);
  }, 200_000);
});

describe("Schedds at start (docs/schedds.md#configuration)", () => {
  /** Runs the sidecar until it exits (it must refuse to start): its exit code and its last line. */
  async function refused(dir: string, config: string, args: string[] = []): Promise<{ code: number; last: string }> {
    writeFileSync(join(dir, "SidecarConfig.yaml"), `DataRootFolder: ./data\nSpool: never\n${config}`);
    const proc = Bun.spawn(
      [process.execPath, sidecarEntry(), "--config", join(dir, "SidecarConfig.yaml"), "--condor-bin", CONDOR_BIN, "--port", "0", ...args],
      {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, MINICONDOR_HOME: join(dir, "minicondor"), MINICONDOR_ALLOW_ROOT: "1" },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    return { code, last: stderr.trimEnd().split("\n").at(-1)! };
  }
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) {
      await cleanup(join(d, "minicondor"), true);
      rmSync(d, { recursive: true, force: true });
    }
  }, TEARDOWN_TIMEOUT_MS);
  const dir = () => {
    const d = poolDir(1);
    dirs.push(d);
    return d;
  };

  test("an entry whose host name does not resolve is refused, in condor_q's words (the rule of --schedd-name)", async () => {
    const r = await refused(dir(), 'ScheddNameResolveSeconds: 3\nSchedds:\n  - Name: "second@localhost"\n  - Name: "nosuchhost.invalid"\n');
    expect(r.code).toBe(2);
    expect(r.last).toStartWith(
      'htcondor-sidecar: SidecarConfig.yaml: Schedds.1.Name nosuchhost.invalid: condor_q says "Error: unknown host nosuchhost.invalid" (still after 3 s)',
    );
  }, 90_000);

  test("two entries naming one schedd, or Schedds with --schedd-name, are refused", async () => {
    const d = dir();
    expect(await refused(d, 'Schedds:\n  - Name: "second@localhost"\n  - Name: "Second@localhost"\n')).toEqual({
      code: 2,
      last: `htcondor-sidecar: ${join(d, "SidecarConfig.yaml")}: Schedds.1.Name: names the same schedd as Schedds.0 ("Second@localhost")`,
    });
    expect(await refused(d, 'Schedds:\n  - Name: "second@localhost"\n', ["--schedd-name", "localhost"])).toEqual({
      code: 2,
      last: "htcondor-sidecar: SidecarConfig.yaml: Schedds: cannot be used together with --schedd-name localhost: list that schedd in Schedds",
    });
  }, scaled(60_000));

  test("a data folder keeps the schedd it holds the pods of: the first entry changed is refused", async () => {
    sc = await startSidecar({ dir: poolDir(1), config: scheddsConfig() });
    const d = sc.dir;
    await sc.stop();
    const r = await refused(d, 'Schedds:\n  - Name: "third@localhost"\n  - Name: "localhost"\n');
    expect(r.code).toBe(2);
    expect(r.last).toContain(
      `holds the pods of schedd "localhost", not of schedd "third@localhost" (job ids are per schedd): keep "localhost" (the schedd of the data folder) first in Schedds and add "third@localhost" after it`,
    );
  }, 60_000);
});

describe("adding a schedd to a sidecar that ran with one (docs/schedds.md#each-data-folder-holds-one-schedds-pods)", () => {
  const HEXA = "ffff";
  const own = (i: number) =>
    makeCreateRequest({
      metadata: { name: `add-${i}`, uid: `3333dddd-${HEXA}-4000-8000-${String(i).padStart(12, "0")}` },
      spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 600"], resources: {} }] },
    });
  const env = (home: string) => ({ MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" });
  /** Jobs some other user queued on a schedd, with the same ids as the sidecar's (ids are per schedd). */
  function submitForeign(home: string, schedd: string, n: number): string[] {
    const sub = join(home, "foreign.sub");
    writeFileSync(sub, "executable = /bin/sleep\narguments = 600\nqueue\n");
    return Array.from({ length: n }, () => {
      const r = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_submit"), "-name", schedd, "-terse", sub], { env: env(home) });
      expect(r.exitCode).toBe(0);
      return r.stdout.toString().trim().replace(/ - .*$/, "");
    });
  }
  /** The ids of the jobs in one schedd's queue. */
  const queue = (home: string, schedd: string) =>
    Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-name", schedd, "-af", "ClusterId", "ProcId"], { env: env(home) }).stdout
      .toString().trim().split("\n").filter(Boolean).map((l) => l.replace(" ", ".")).sort();

  test(
    "with the new schedd first the start is refused and nothing is removed; after the existing one, the pods keep running, with their JIDs, and a delete removes only its own job",
    async () => {
      const dir = poolDir(64);
      // one schedd (HTCondor's default, the pool's first), Spool auto
      sc = await startSidecar({ dir });
      const reqs = [0, 1, 2].map(own);
      // one after the other: jobs 1.0, 2.0 and 3.0, as in the scenario this guards against
      const jids = new Map<string, string>();
      for (const r of reqs) {
        const res = await sc.call("POST", "/create", r, { timeoutMs: 120_000 });
        expect(res.status).toBe(200);
        jids.set(r.pod.metadata.uid, JSON.parse(res.body).PodJID);
      }
      expect([...jids.values()]).toEqual(["1.0", "2.0", "3.0"]);
      // the data folder says whose pods it holds, with one schedd too (an empty name: the default schedd)
      expect(readFileSync(join(dir, "data", "schedd"), "utf8")).toBe("\n");
      const running = async (s: Sidecar) => {
        const st: Json[] = JSON.parse((await s.call("GET", "/status", reqs.map((q) => q.pod))).body);
        return st.length === 3 && st.every((p) => p.containers?.[0]?.state?.running) ? st : undefined;
      };
      await eventually(() => running(sc!), 60_000, "the 3 pods to run");
      expect(await sc.stop()).toBe(0);
      const mine = queue(join(dir, "minicondor"), "localhost");
      expect(mine).toHaveLength(3);
      // another user's jobs on the new schedd, with the very ids of the sidecar's
      const foreign = submitForeign(join(dir, "minicondor"), "second@localhost", 3).sort();
      expect(foreign).toEqual(mine);

      // the new schedd listed first: refused at start (a configuration error), with how to list them
      const refused = await startSidecar({ dir, config: 'Schedds:\n  - Name: "second@localhost"\n  - Name: "localhost"\n' }).then(
        async (s) => {
          // (what the code before this rule did: it asked /status once, and took the other user's jobs for its pods')
          await s.call("GET", "/status", reqs.map((q) => q.pod));
          await s.stop();
          return `started:\n${s.log()}`;
        },
        (err: Error) => err.message,
      );
      expect(queue(join(dir, "minicondor"), "localhost")).toEqual(mine);
      expect(queue(join(dir, "minicondor"), "second@localhost")).toEqual(foreign);
      expect(refused).toContain("it exited with 2");
      expect(refused).toContain('keep "localhost" (the schedd of the data folder) first in Schedds and add "second@localhost" after it');

      // the new schedd after the existing one: the pods are where they were, with the JIDs they had
      sc = await startSidecar({ dir, config: 'Schedds:\n  - Name: "localhost"\n  - Name: "second@localhost"\n' });
      // both schedds are on this host: Spool auto spools neither (docs/configuration.md#spool-auto-is-the-schedd-on-this-host)
      expect(sc.log()).toContain('"spool":[false,false]');
      const st = await eventually(() => running(sc!), 60_000, "the 3 pods to run again");
      for (const p of st) expect(p.JID).toBe(jids.get(p.UID)!);
      expect(queue(join(dir, "minicondor"), "second@localhost")).toEqual(foreign);
      // a delete of each removes its own job, and no other
      for (const [i, r] of reqs.entries()) {
        expect((await sc.call("POST", "/delete", r.pod)).status).toBe(200);
        const id = jids.get(r.pod.metadata.uid)!;
        await eventually(() => (queue(join(dir, "minicondor"), "localhost").includes(id) ? undefined : true), 60_000, `pod ${i}'s job to leave the queue`);
        expect(queue(join(dir, "minicondor"), "localhost")).toEqual(mine.filter((j) => !reqs.slice(0, i + 1).some((q) => jids.get(q.pod.metadata.uid) === j)));
        expect(queue(join(dir, "minicondor"), "second@localhost")).toEqual(foreign);
      }
    },
    400_000,
  );

  test("a data folder from a version that wrote no claim: a list is refused until the sidecar has started once with its one schedd", async () => {
    const dir = poolDir(64);
    sc = await startSidecar({ dir, config: 'Schedds:\n  - Name: "localhost"\n' });
    const res = await sc.call("POST", "/create", own(9), { timeoutMs: 120_000 });
    expect([res.status, JSON.parse(res.body).PodJID]).toEqual([200, "1.0"]);
    expect(await sc.stop()).toBe(0);
    // as the versions before the claim left it
    rmSync(join(dir, "data", "schedd"));
    const list = 'Schedds:\n  - Name: "localhost"\n  - Name: "second@localhost"\n';
    const refused = await startSidecar({ dir, config: list }).then(
      async (s) => {
        await s.stop();
        return "started";
      },
      (err: Error) => err.message,
    );
    expect(refused).toContain("it exited with 2");
    expect(refused).toContain(
      "holds 1 pods of a version that did not record their schedd, which the list cannot tell: start once as before, with that schedd alone",
    );
    expect(existsSync(join(dir, "data", "schedd"))).toBe(false);
    // once with the one schedd: the folder is recorded as its; then the list starts, the pod as it was
    sc = await startSidecar({ dir, config: 'Schedds:\n  - Name: "localhost"\n' });
    expect(await sc.stop()).toBe(0);
    expect(readFileSync(join(dir, "data", "schedd"), "utf8")).toBe("localhost\n");
    sc = await startSidecar({ dir, config: list });
    const st: Json[] = JSON.parse((await sc.call("GET", "/status", [own(9).pod])).body);
    expect(st.map((p) => p.JID)).toEqual(["1.0"]);
  }, 300_000);
});
