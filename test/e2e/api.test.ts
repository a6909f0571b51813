// The interLink plugin API end to end: real HTTP to a running sidecar on minicondor.
// Each test names the checklist item of docs/interlink.md#conformance-checklist it checks.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configMapObject, dataEntry, makeCreateRequest, secretObject } from "../fixtures/pods.ts";
import { eventually, http, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars, startSidecar, toolsRunning } from "../helpers/sidecar.ts";
import { PING_ANSWER_KEEP_MS } from "../../src/core/health.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

let sc: Sidecar;
let n = 0;
const uid = () => `0000aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}`;

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
const create = (req: Json) => sc.call("POST", "/create", req);
const status = (pods: Json[]) => sc.call("GET", "/status", pods);
const statusOne = async (pod: Json) => {
  const r = await status([pod]);
  expect(r.status).toBe(200);
  return (JSON.parse(r.body) as Json[])[0];
};
const calls = (tool: string) => sc.calls(tool).length;
const jobsForUid = async (u: string) => {
  const q = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-allusers", "-af", "InterLinkPodUID"], {
    env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
  });
  const h = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_history"), "-af", "InterLinkPodUID"], {
    env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
  });
  return `${q.stdout}${h.stdout}`.split("\n").filter((l) => l.trim() === u).length;
};
const terminated = async (pod: Json, timeoutMs = 60_000) =>
  eventually(
    async () => {
      const s = await statusOne(pod);
      const all = [...(s?.initContainers ?? []), ...(s?.containers ?? [])];
      return all.length && all.every((c: Json) => c.state.terminated) ? s : undefined;
    },
    timeoutMs,
    `pod ${pod.metadata.name} to terminate`,
  );
const logOf = (pod: Json, container: string) => sc.logs(pod, container);

function shPod(name: string, script: string, extra: { spec?: Json; metadata?: Json; container?: Json[] } = {}) {
  return makeCreateRequest({
    metadata: { name, uid: uid(), ...extra.metadata },
    spec: { containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", script], resources: {} }], ...extra.spec },
    container: extra.container,
  });
}

const { start } = sidecars();
beforeAll(async () => {
  sc = await start({ config: "PingFailureThreshold: 2\nHoldGraceSeconds: 1\n" });
}, scaled(SETUP_TIMEOUT_MS));

describe("transport", () => {
  test("check-1 check-2 check-17: GET /status with [] is the ping: 200 and a PingResponse object", async () => {
    const r = await sc.call("GET", "/status", []);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.status).toBe("ok");
    expect(Number(body.resources.cpu)).toBeGreaterThan(0);
    expect(body.resources.memory).toMatch(/^\d+Mi$/);
    expect(body.resources.pods).toBe("1000");
  }, scaled(60_000));
  test("check-5: keep-alive idle timeout above 120 s", async () => {
    const r = await sc.call("GET", "/status", []);
    expect(String(r.headers["keep-alive"])).toMatch(/timeout=125/);
  }, scaled(60_000));
  test("bad bodies: 4xx with one plain-text line", async () => {
    for (
      const [path, method, raw, code] of [
        ["/create", "POST", "{not json", 400],
        ["/create", "POST", "[]", 400],
        ["/status", "GET", "{}", 400],
        ["/delete", "POST", "{}", 400],
      ] as const
    ) {
      const r = await sc.call(method, path, undefined, { raw });
      expect(r.status).toBe(code);
      expect(String(r.headers["content-type"])).toMatch(/^text\/plain/);
      expect(r.body.trimEnd().includes("\n")).toBe(false);
    }
  }, scaled(60_000));
});

describe("create, status, delete", () => {
  test("check-8 check-18 check-19 check-20 check-21 check-22: create → 200 {PodUID, PodJID}; status runs to Succeeded with exit code 0", async () => {
    const req = shPod("hello", "echo hello; sleep 1");
    const r = await create(req);
    expect(r.status).toBe(200);
    const out = JSON.parse(r.body);
    expect(out.PodUID).toBe(req.pod.metadata.uid);
    expect(out.PodJID).toMatch(/^\d+\.0$/);
    const s = await terminated(req.pod);
    expect(s).toMatchObject({ name: "hello", UID: req.pod.metadata.uid, namespace: "default", JID: out.PodJID });
    expect(s.containers).toHaveLength(1);
    expect(s.containers[0].state.terminated.exitCode).toBe(0);
    expect(s.containers[0].state.terminated.finishedAt).toMatch(/Z$/);
    expect((await logOf(req.pod, "main")).body).toBe("hello\n");
  }, 90_000);

  test("check-20: a failing container reports its exit code", async () => {
    const req = shPod("fails", "exit 7");
    expect((await create(req)).status).toBe(200);
    const s = await terminated(req.pod);
    expect(s.containers[0].state.terminated.exitCode).toBe(7);
  }, 90_000);

  test("check-10: a repeated create returns the same JID and submits once", async () => {
    const req = shPod("twice", "sleep 2");
    const before = calls("condor_submit");
    const [a, b] = await Promise.all([create(req), create(req)]);
    const c = await create(req);
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    expect(JSON.parse(b.body).PodJID).toBe(JSON.parse(a.body).PodJID);
    expect(JSON.parse(c.body).PodJID).toBe(JSON.parse(a.body).PodJID);
    expect(calls("condor_submit") - before).toBe(1);
    expect(await jobsForUid(req.pod.metadata.uid)).toBe(1);
  }, 30_000);

  test("check-6: parallel creates for different pods, and a status during a create", async () => {
    const reqs = Array.from({ length: 8 }, (_, i) => shPod(`par-${i}`, "sleep 1"));
    const during = status([reqs[0].pod]);
    const res = await Promise.all(reqs.map(create));
    expect(res.map((r) => r.status)).toEqual(reqs.map(() => 200));
    expect((await during).status).toBe(200);
    const jids = new Set(res.map((r) => JSON.parse(r.body).PodJID));
    expect(jids.size).toBe(8);
  }, 60_000);

  test("check-21: an unknown UID in a batch is omitted, the batch still answers 200", async () => {
    const req = shPod("known", "sleep 1");
    await create(req);
    const unknown = { ...req.pod, metadata: { ...req.pod.metadata, uid: "ffffffff-0000-4000-8000-000000000000", name: "ghost" } };
    const r = await status([unknown, req.pod]);
    expect(r.status).toBe(200);
    const list = JSON.parse(r.body);
    expect(list.map((p: Json) => p.UID)).toEqual([req.pod.metadata.uid]);
  }, 30_000);

  test("check-7: unknown fields are ignored and null accepted where an array is expected", async () => {
    const req = shPod("nulls", "true", { spec: { volumes: null, initContainers: null, extraField: { x: 1 } } });
    req.extra = "ignored";
    req.pod.metadata.annotations = null;
    expect((await create(req)).status).toBe(200);
  }, 30_000);

  test("check-9: a failed submission → non-200 plain text, nothing left behind", async () => {
    writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ tools: { condor_submit: "fail" } }));
    try {
      const req = shPod("nosubmit", "true");
      const r = await create(req);
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(r.body).toMatch(/Cannot submit job for pod "default\/nosubmit"/);
      expect(existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid))).toBe(false);
      expect((JSON.parse((await status([req.pod])).body) as Json[]).length).toBe(0);
    } finally {
      writeFileSync(join(sc.home, "faults.json"), "{}");
    }
  }, 30_000);

  test("check-14: an unresolvable valueFrom is a 400 naming the variable", async () => {
    const req = shPod("envbad", "true");
    req.pod.spec.containers[0].env = [{ name: "PASSWORD", valueFrom: { secretKeyRef: { name: "nope", key: "pw" } } }];
    const r = await create(req);
    expect(r.status).toBe(400);
    expect(r.body).toContain("PASSWORD");
    expect(existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid))).toBe(false);
  }, scaled(60_000));

  test("check-11 check-12 check-13 check-16: volumes at mount paths, shared emptyDir, init order, pre-exec first", async () => {
    const u = uid();
    const req = makeCreateRequest({
      metadata: { name: "full", uid: u, annotations: { "slurm-job.vk.io/pre-exec": "echo pre-exec >> emptydir/work/order" } },
      spec: {
        initContainers: [
          {
            name: "first",
            image: "busybox",
            command: ["sh", "-c", "echo first >> /mnt/shared/order"],
            volumeMounts: [{ name: "work", mountPath: "/mnt/shared" }],
            resources: {},
          },
          {
            name: "second",
            image: "busybox",
            command: ["sh", "-c", "echo second >> /mnt/shared/order"],
            volumeMounts: [{ name: "work", mountPath: "/mnt/shared" }],
            resources: {},
          },
        ],
        containers: [
          {
            name: "main",
            image: "busybox",
            command: [
              "sh",
              "-c",
              "cat /mnt/shared/order; cat /etc/app/app.conf; echo; cat /etc/secret/pw; echo; cat /var/run/sa/token; echo; cat /etc/one/renamed.txt",
            ],
            volumeMounts: [
              { name: "work", mountPath: "/mnt/shared" },
              { name: "cfg", mountPath: "/etc/app", readOnly: true },
              { name: "sec", mountPath: "/etc/secret" },
              { name: "sa", mountPath: "/var/run/sa" },
              { name: "cfg2", mountPath: "/etc/one" },
            ],
            resources: {},
          },
        ],
        volumes: [
          { name: "work", emptyDir: {} },
          { name: "cfg", configMap: { name: "app" } },
          { name: "cfg2", configMap: { name: "app", items: [{ key: "app.conf", path: "renamed.txt" }] } },
          { name: "sec", secret: { secretName: "creds" } },
          { name: "sa", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } },
        ],
      },
      container: [
        dataEntry("first"),
        dataEntry("second"),
        dataEntry("main", {
          configMaps: [configMapObject("app", { "app.conf": "key=value" })],
          secrets: [secretObject("creds", { pw: "s3cr3t" })],
          projected: [{ metadata: { name: "sa" }, data: { token: "tok-123" } }],
        }),
      ],
    });
    const r = await create(req);
    expect(r.status).toBe(200);
    const s = await terminated(req.pod);
    expect(s.initContainers.map((c: Json) => c.name)).toEqual(["first", "second"]);
    expect(s.containers[0].state.terminated.exitCode).toBe(0);
    expect((await logOf(req.pod, "main")).body).toBe("pre-exec\nfirst\nsecond\nkey=value\ns3cr3t\ntok-123\nkey=value\n");
  }, 90_000);

  test("secret files are 0600 in 0700 folders on the submit side, and removed once the job has left", async () => {
    const req = shPod("secretfiles", "sleep 2; cat /etc/secret/pw", {
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          command: ["sh", "-c", "sleep 2; cat /etc/secret/pw"],
          volumeMounts: [{ name: "sec", mountPath: "/etc/secret" }],
          env: [{ name: "TOKEN", value: "t0k" }],
          resources: {},
        }],
        volumes: [{ name: "sec", secret: { secretName: "creds", defaultMode: 0o644 } }],
      },
      container: [dataEntry("main", { secrets: [secretObject("creds", { pw: "s3cr3t" })] })],
    });
    expect((await create(req)).status).toBe(200);
    const dir = join(sc.dataRoot, "pods", req.pod.metadata.uid);
    const secretFiles = ["volumes/sec/pw", "env/c.main.env"].map((f) => join(dir, f));
    for (const f of secretFiles) {
      expect(statSync(f).mode & 0o777).toBe(0o600);
      expect(statSync(join(f, "..")).mode & 0o777).toBe(0o700);
    }
    const s = await terminated(req.pod);
    expect(s.containers[0].state.terminated.exitCode).toBe(0);
    // The pod's mode (0644) applies in the job's sandbox, where the container reads it.
    expect((await logOf(req.pod, "main")).body).toBe("s3cr3t\n");
    for (const f of secretFiles) expect(existsSync(f)).toBe(false);
  }, 60_000);

  test("check-19: status reports only the offloaded containers, though the status request lists all of them", async () => {
    const req = shPod("partly", "sleep 1", { metadata: { annotations: { "interlink.eu/disable-offload-containers": "local" } } });
    expect((await create(req)).status).toBe(200);
    // interLink sends the original pod on /status: it still has the container that runs in-cluster.
    const original = { ...req.pod, spec: { ...req.pod.spec, containers: [...req.pod.spec.containers, { name: "local", image: "busybox", resources: {} }] } };
    const s = await statusOne(original);
    expect(s.containers.map((c: Json) => c.name)).toEqual(["main"]);
    expect(s.initContainers).toEqual([]);
    await terminated(original);
  }, 60_000);

  test("check-3: a create body over 16 MiB (a large ConfigMap) is accepted and its data reaches the container", async () => {
    const big = "x".repeat(17 * 1024 * 1024);
    const req = shPod("bigcfg", "wc -c < /cfg/big", {
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          command: ["sh", "-c", "wc -c < /cfg/big"],
          volumeMounts: [{ name: "cfg", mountPath: "/cfg" }],
          resources: {},
        }],
        volumes: [{ name: "cfg", configMap: { name: "big" } }],
      },
      container: [dataEntry("main", { configMaps: [configMapObject("big", { big })] })],
    });
    const r = await create(req);
    expect(r.status).toBe(200);
    await terminated(req.pod);
    expect((await logOf(req.pod, "main")).body.trim()).toBe(String(big.length));
  }, 90_000);

  test("secrets never reach the job ad (condor_q -json)", async () => {
    const req = shPod("secretive", "sleep 3");
    req.pod.spec.containers[0].env = [{ name: "TOKEN", value: "very-secret-value-42" }];
    expect((await create(req)).status).toBe(200);
    const q = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-allusers", "-json"], {
      env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
    });
    expect(q.stdout.toString()).not.toContain("very-secret-value-42");
    const sub = readFileSync(join(sc.dataRoot, "pods", req.pod.metadata.uid, "job.sub"), "utf8");
    expect(sub).not.toContain("very-secret-value-42");
    const envDir = join(sc.dataRoot, "pods", req.pod.metadata.uid, "env");
    for (const f of readdirSync(envDir)) expect(statSync(join(envDir, f)).mode & 0o777).toBe(0o600);
    expect(statSync(join(sc.dataRoot, "pods", req.pod.metadata.uid)).mode & 0o777).toBe(0o700);
    // Nor the sidecar's log (request bodies are never logged), nor the job's own files.
    expect(sc.log()).not.toContain("very-secret-value-42");
    const q2 = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-allusers", "-long"], {
      env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
    });
    expect(q2.stdout.toString()).not.toContain("very-secret-value-42");
  }, 30_000);

  test("check-23 check-24: delete removes the job and the files; unknown and repeated deletes answer 200; a late create is refused", async () => {
    const req = shPod("doomed", "sleep 300");
    const r = await create(req);
    expect(r.status).toBe(200);
    await eventually(async () => ((await statusOne(req.pod))?.containers[0].state.running ? true : undefined), 30_000, "running");
    const d = await sc.call("POST", "/delete", req.pod);
    expect(d.status).toBe(200);
    expect(existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid))).toBe(false);
    await eventually(
      async () => {
        const q = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-allusers", "-af", "InterLinkPodUID"], {
          env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
        });
        return q.stdout.toString().includes(req.pod.metadata.uid) ? undefined : true;
      },
      30_000,
      "job to leave the queue",
    );
    expect((await sc.call("POST", "/delete", req.pod)).status).toBe(200);
    const ghost = { ...req.pod, metadata: { ...req.pod.metadata, uid: uid() } };
    expect((await sc.call("POST", "/delete", ghost)).status).toBe(200);
    const late = await create({ ...req, pod: ghost });
    expect(late.status).toBe(409);
    expect(late.body).toMatch(/already deleted/);
  }, 60_000);
});

describe("server basics (issue: foundation)", () => {
  test("bad start-up settings exit 2 with one line naming the problem, before anything is created", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "sidecar-start-"));
    try {
      const cases: [string, string[], RegExp][] = [
        ["SharedFilesystem: true\n", ["--spool", "always"], /^htcondor-sidecar: SidecarConfig\.yaml: SharedFilesystem: cannot be used with spooling/],
        ["", ["--condor-config", join(dir, "missing.config")], /^htcondor-sidecar: --condor-config: .*missing\.config does not exist$/],
        ["", ["--certfile", dir], /^htcondor-sidecar: --certfile: .* is not a file$/],
      ];
      for (const [config, args, message] of cases) {
        writeFileSync(join(dir, "c.yaml"), `DataRootFolder: ./data\n${config}`);
        const p = Bun.spawnSync([
          process.execPath,
          sidecarEntry(),
          "--config",
          join(dir, "c.yaml"),
          "--condor-bin",
          join(import.meta.dir, "../minicondor/bin"),
          ...args,
        ], {
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: join(dir, "mc") },
        });
        const lines = p.stderr.toString().trim().split("\n").filter((l) => !l.includes('"level":"warn"'));
        expect(p.exitCode).toBe(2);
        expect(lines.length).toBe(1);
        expect(lines[0]).toMatch(message);
        expect(existsSync(join(dir, "data"))).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  test("one log line per request: method, path, status, duration and interLink's session header; a 413 too", async () => {
    const own = await startSidecar({ config: "BodyLimit: 1024\n" });
    try {
      const ok = await http(own.port, "GET", "/status", [], { session: "GetStatus#4242" });
      expect(ok.status).toBe(200);
      const big = await http(own.port, "POST", "/create", { pad: "x".repeat(4096) }, { session: "CreatePod#77" });
      expect(big.status).toBe(413);
      const lines = await eventually(
        () => {
          const l = own.log().split("\n").filter((x) => x.includes('"msg":"request"')).map((x) => JSON.parse(x) as Json);
          return l.length >= 2 ? l : undefined;
        },
        5_000,
        "request lines",
      );
      expect(lines.find((l) => l.session === "GetStatus#4242")).toMatchObject({
        level: "info",
        method: "GET",
        path: "/status",
        status: 200,
        aborted: false,
        durationMs: expect.any(Number),
      });
      expect(lines.find((l) => l.session === "CreatePod#77")).toMatchObject({ method: "POST", path: "/create", status: 413 });
      expect(own.log()).not.toContain("xxxx");
    } finally {
      await own.destroy();
    }
  }, 30_000);

  test("SIGTERM: a request in flight finishes, new connections are refused, the process exits 0", async () => {
    // The grace and the tools' timeout are not what is tested: the ping stays in flight for as
    // long as the test holds its condor_status, however slowly the machine runs.
    const own = await startSidecar({ config: "ShutdownGraceSeconds: 120\nQueryTimeoutSeconds: 120\n" });
    try {
      writeFileSync(join(own.home, "faults.json"), JSON.stringify({ tools: { condor_status: "gate:release-status" } }));
      let answered = false;
      const ping = own.call("GET", "/status", []).finally(() => (answered = true));
      await toolsRunning(own.home, "condor_status");
      own.proc.kill("SIGTERM");
      // A new connection is refused once the listener has closed, while the ping is in flight (a
      // path answered at once, so that an accepted connection does not wait on the held call).
      await eventually(() => own.call("GET", "/no-such-path").then(() => undefined, () => true), 30_000, "a new connection refused");
      expect(answered).toBe(false);
      writeFileSync(join(own.home, "release-status"), "");
      expect((await ping).status).toBe(200);
      expect(await own.proc.exited).toBe(0);
      expect(own.log()).toContain("shutting down");
    } finally {
      await own.destroy();
    }
  }, 30_000);

  test("creates run in parallel up to MaxConcurrentSubmits condor_submit processes", async () => {
    // One pod per condor_submit, so that six creates need six processes (batching is tested in batch.test.ts).
    const own = await startSidecar({ config: "MaxConcurrentSubmits: 2\nMaxSubmitBatch: 1\n" });
    try {
      writeFileSync(join(own.home, "faults.json"), JSON.stringify({ tools: { condor_submit: "slow:1200" } }));
      const reqs = Array.from({ length: 6 }, (_, i) => shPod(`par-${i}`, "true"));
      const answers = await Promise.all(reqs.map((r) => own.call("POST", "/create", r)));
      expect(answers.map((a) => a.status)).toEqual(reqs.map(() => 200));
      // Each condor_submit's span in calls.log, [start, end].
      const spans = own.calls("condor_submit").map((c) => [c.start, c.end] as const);
      expect(spans.length).toBe(6);
      const most = Math.max(...spans.map(([a]) => spans.filter(([b, e]) => b <= a && a < e).length));
      expect(most).toBe(2);
    } finally {
      await own.destroy();
    }
  }, 60_000);
});

describe("restarts and faults", () => {
  test("check-15: the mapping survives a restart", async () => {
    const req = shPod("survivor", "sleep 2; exit 3");
    const r = await create(req);
    const jid = JSON.parse(r.body).PodJID;
    await sc.stop();
    sc = await start({ dir: sc.dir, config: "PingFailureThreshold: 2\nHoldGraceSeconds: 1\n" });
    const s = await terminated(req.pod);
    expect(s.JID).toBe(jid);
    expect(s.containers[0].state.terminated.exitCode).toBe(3);
  }, 90_000);

  test("check-17: ping degrades only after consecutive failures", async () => {
    writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ scheddDown: true }));
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) {
        // Pings within PING_ANSWER_KEEP_MS share one answer (docs/status.md#the-ping): interLink's
        // come 30 s apart, each a new observation.
        if (i > 0) await Bun.sleep(PING_ANSWER_KEEP_MS + 100);
        codes.push((await sc.call("GET", "/status", [])).status);
      }
      expect(codes).toEqual([200, 503, 503]);
    } finally {
      writeFileSync(join(sc.home, "faults.json"), "{}");
    }
    await eventually(async () => ((await sc.call("GET", "/status", [])).status === 200 ? true : undefined), 20_000, "the ping to recover");
  }, 60_000);

  test("a delete while the schedd is down removes the job once it is back", async () => {
    const req = shPod("later", "sleep 300");
    await create(req);
    expect(await jobsForUidInQueue(req.pod.metadata.uid)).toBe(1);
    writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ scheddDown: true }));
    const d = await sc.call("POST", "/delete", req.pod);
    expect(d.status).toBe(200);
    expect(d.body).toMatch(/pending/);
    writeFileSync(join(sc.home, "faults.json"), "{}");
    await eventually(async () => ((await jobsForUidInQueue(req.pod.metadata.uid)) === 0 ? true : undefined), 60_000, "the reaper to remove the job");
  }, 90_000);
});

async function jobsForUidInQueue(u: string) {
  const q = Bun.spawnSync([join(import.meta.dir, "../minicondor/bin/condor_q"), "-allusers", "-af", "InterLinkPodUID"], {
    env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" },
  });
  return q.stdout.toString().split("\n").filter((l) => l.trim() === u).length;
}
