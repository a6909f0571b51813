// GET /metrics in Prometheus's text format (docs/metrics.md), on the API
// listener and on a listener of its own (--metrics-listen). The families move as the sidecar
// works, label values stay bounded, and Prometheus's own checker accepts the text.
import { beforeAll, describe, expect, test } from "bun:test";
import { request } from "node:http";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars, startSidecar } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
const uid = "9999cccc-0000-4000-8000-000000000001";
let sc: Sidecar;
let metricsPort: number;

/** A free TCP port on loopback (for --metrics-listen, which takes no 0). */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function get(port: number, path: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path, method: "GET" }, (r) => {
      const chunks: Buffer[] = [];
      r.on("data", (c: Buffer) => chunks.push(c));
      r.on("end", () => resolve({ status: r.statusCode ?? 0, type: String(r.headers["content-type"]), body: Buffer.concat(chunks).toString("utf8") }));
    })
      .on("error", reject)
      .end();
  });
}

/** The value of one sample, e.g. sample(text, 'htcondor_sidecar_pods{phase="finished"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const promtool = Bun.which("promtool");

const { start } = sidecars();
beforeAll(async () => {
  metricsPort = await freePort();
  sc = await start({ args: ["--metrics-listen", `127.0.0.1:${metricsPort}`] });
}, scaled(SETUP_TIMEOUT_MS));

describe("GET /metrics (docs/metrics.md)", () => {
  test("the families move as the sidecar works; label values are bounded; promtool accepts the text", async () => {
    const pod = makeCreateRequest({
      metadata: { name: "measured", uid },
      spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "echo hi; exit 3"], resources: {} }] },
    });
    expect((await sc.call("POST", "/create", pod)).status).toBe(200);
    await eventually(
      async () => {
        const st = JSON.parse((await sc.call("GET", "/status", [pod.pod])).body) as Json[];
        return st[0]?.containers[0].state.terminated ? true : undefined;
      },
      60_000,
      "the pod to end",
    );
    await sc.call("GET", "/getLogs", { Namespace: "default", PodUID: uid, PodName: "measured", ContainerName: "main", Opts: {} });
    expect((await sc.call("GET", "/status", [])).status).toBe(200); // the ping
    await sc.call("GET", "/no-such-route");

    const m = await get(sc.port, "/metrics");
    expect(m.status).toBe(200);
    expect(m.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    const t = m.body;
    expect(sample(t, 'htcondor_sidecar_http_requests_total{route="/create",code="200"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_http_requests_total{route="/getLogs",code="200"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_http_requests_total{route="other",code="404"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_http_requests_total{route="/status",code="200"}')).toBeGreaterThanOrEqual(2);
    expect(sample(t, 'htcondor_sidecar_http_request_duration_seconds_count{route="/create"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_condor_commands_total{tool="condor_submit",outcome="ok"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_condor_commands_total{tool="condor_q",outcome="ok"}')).toBeGreaterThanOrEqual(1);
    expect(sample(t, 'htcondor_sidecar_condor_command_duration_seconds_count{tool="condor_submit"}')).toBe(1);
    expect(sample(t, "htcondor_sidecar_submit_batch_size_count")).toBe(1);
    expect(sample(t, 'htcondor_sidecar_submit_batch_size_bucket{le="1"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_pods{phase="finished"}')).toBe(1);
    for (const phase of ["creating", "submitted", "removing", "deleted"]) expect(sample(t, `htcondor_sidecar_pods{phase="${phase}"}`)).toBe(0);
    expect(sample(t, 'htcondor_sidecar_condor_up{daemon="schedd"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_condor_up{daemon="collector"}')).toBe(1);
    expect(sample(t, 'htcondor_sidecar_condor_consecutive_failures{daemon="schedd"}')).toBe(0);
    expect(sample(t, "htcondor_sidecar_queue_snapshot_age_seconds")).toBeGreaterThanOrEqual(0);
    // One condor_submit so far, alone: the limit has not grown (docs/performance.md#bursts).
    expect(sample(t, "htcondor_sidecar_submit_concurrency")).toBe(1);
    expect(sample(t, "process_resident_memory_bytes")).toBeGreaterThan(10 * 1024 * 1024);
    expect(sample(t, "process_start_time_seconds")).toBeGreaterThan(1_700_000_000);
    // No credential configured: no expiry sample.
    expect(sample(t, "htcondor_sidecar_credential_expiry_timestamp_seconds")).toBeUndefined();
    // Never a pod's name or UID in a label.
    expect(t).not.toContain(uid);
    expect(t).not.toContain("measured");

    if (!promtool) {
      console.warn("SKIPPED: promtool is not installed here (.ci/run installs Debian's prometheus package)");
      return;
    }
    const check = Bun.spawnSync([promtool, "check", "metrics"], { stdin: new TextEncoder().encode(t) });
    expect({ code: check.exitCode, out: check.stdout.toString() + check.stderr.toString() }).toEqual({ code: 0, out: "" });
  }, 90_000);

  test("--metrics-listen serves /metrics on its own port, and nothing else", async () => {
    const m = await get(metricsPort, "/metrics");
    expect(m.status).toBe(200);
    expect(m.body).toContain("# TYPE htcondor_sidecar_pods gauge");
    expect((await get(metricsPort, "/status")).status).toBe(404);
  }, scaled(60_000));

  test("a schedd that does not answer shows in the streak and, past the threshold, in condor_up", async () => {
    const own = await startSidecar({ config: "PingFailureThreshold: 1\n", env: { MINICONDOR_SCHEDD_DOWN: "1" } });
    try {
      await own.call("GET", "/status", []);
      const t = (await get(own.port, "/metrics")).body;
      expect(sample(t, 'htcondor_sidecar_condor_consecutive_failures{daemon="schedd"}')).toBeGreaterThanOrEqual(1);
      expect(sample(t, 'htcondor_sidecar_condor_up{daemon="schedd"}')).toBe(0);
      expect(sample(t, 'htcondor_sidecar_condor_commands_total{tool="condor_q",outcome="error"}')).toBeGreaterThanOrEqual(1);
    } finally {
      await own.destroy();
    }
  }, 60_000);

  test("with a credential file, its expiry is a sample", async () => {
    const { writeFileSync, mkdtempSync, rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const exp = 2_000_000_000;
    const dir = mkdtempSync(join(tmpdir(), "metrics-token-"));
    const token = join(dir, "token");
    writeFileSync(token, `${btoa(JSON.stringify({ alg: "none" }))}.${btoa(JSON.stringify({ exp })).replace(/=+$/, "")}.sig\n`);
    const own = await startSidecar({ args: ["--proxy", token] });
    try {
      expect(sample((await get(own.port, "/metrics")).body, "htcondor_sidecar_credential_expiry_timestamp_seconds")).toBe(exp);
    } finally {
      await own.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test.skipIf(!promtool)("the alert rules pass promtool's own tests (deploy/alerts.yml)", () => {
    const root = new URL("../../deploy/", import.meta.url).pathname;
    const check = Bun.spawnSync([promtool!, "check", "rules", `${root}alerts.yml`]);
    expect(check.exitCode).toBe(0);
    const run = Bun.spawnSync([promtool!, "test", "rules", `${root}alerts.test.yml`], { cwd: root });
    expect({ code: run.exitCode, out: run.stdout.toString() + run.stderr.toString() }).toMatchObject({ code: 0 });
  }, scaled(60_000));
});
