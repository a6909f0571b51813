/**
 * `npm run test:binary`: builds the single executable, then checks what a site admin would:
 * --version, bad flags (exit 2), missing condor tools (exit 1), and interLink's ping over TCP and
 * over a unix socket against the bundled emulator, then a clean SIGTERM.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const binary = join(root, "dist", "htcondor-sidecar");
const condorBin = join(root, "test", "minicondor", "bin");
let failures = 0;
let passes = 0;

function check(name: string, ok: boolean, detail = ""): void {
  if (ok) passes++;
  else failures++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
}

function ping(target: { port: number } | { socketPath: string }): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(
      {
        ...("port" in target ? { host: "127.0.0.1", port: target.port } : { socketPath: target.socketPath }),
        method: "GET",
        path: "/status",
        headers: { "content-type": "application/json", "content-length": 2 },
      },
      (r) => {
        let body = "";
        r.on("data", (c) => (body += c));
        r.on("end", () => res({ status: r.statusCode ?? 0, body }));
      },
    );
    req.on("error", rej);
    req.end("[]");
  });
}

async function startAndPing(label: string, args: string[], env: Record<string, string>, target: (url: string) => { port: number } | { socketPath: string }) {
  const t0 = performance.now();
  const proc = Bun.spawn([binary, ...args], { env, stdout: "pipe", stderr: "pipe" });
  const reader = proc.stderr.getReader();
  let log = "";
  let url: string | undefined;
  const deadline = Date.now() + 15_000;
  while (!url && Date.now() < deadline) {
    const { done, value } = await Promise.race([reader.read(), Bun.sleep(15_000).then(() => ({ done: true, value: undefined }))]);
    if (done) break;
    log += new TextDecoder().decode(value);
    url = /"url":"([^"]+)"/.exec(log)?.[1];
  }
  if (!url) {
    check(`${label}: starts and logs its address`, false, log.slice(0, 500));
    proc.kill("SIGKILL");
    return;
  }
  const r = await ping(target(url));
  const ms = performance.now() - t0;
  let body: { status?: string; resources?: { cpu?: string } } = {};
  try {
    body = JSON.parse(r.body);
  } catch { /* checked below */ }
  check(
    `${label}: ping answers 200 with a PingResponse object (${ms.toFixed(0)} ms from start)`,
    r.status === 200 && typeof body.resources?.cpu === "string",
    `${r.status} ${r.body}`,
  );
  proc.kill("SIGTERM");
  const code = await Promise.race([proc.exited, Bun.sleep(10_000).then(() => "timeout")]);
  check(`${label}: SIGTERM stops it cleanly`, code === 0, `exit ${code}`);
}

const build = Bun.spawnSync([process.execPath, join(root, "scripts", "build.ts")], { cwd: root, stdout: "inherit", stderr: "inherit" });
if (build.exitCode !== 0) {
  console.error("build failed");
  process.exit(1);
}

const v = Bun.spawnSync([binary, "--version"]);
check("--version prints the version", v.exitCode === 0 && /^htcondor-sidecar \d+\.\d+\.\d+/.test(v.stdout.toString()), v.stdout.toString());

const bad = Bun.spawnSync([binary, "--bogus"]);
check("an unknown flag exits 2 naming it", bad.exitCode === 2 && /unknown flag --bogus/.test(bad.stderr.toString()), bad.stderr.toString());

const work = mkdtempSync(join(tmpdir(), "sidecar-binary-"));
try {
  const noTools = Bun.spawnSync([binary, "--config", join(work, "none.yaml")], { env: { PATH: "/usr/bin:/bin" } });
  check(
    "a missing config file named by --config exits 2",
    noTools.exitCode === 2 && /cannot read the file/.test(noTools.stderr.toString()),
    noTools.stderr.toString(),
  );

  const config = join(work, "SidecarConfig.yaml");
  writeFileSync(config, `DataRootFolder: ./data\nShutdownGraceSeconds: 2\n`);
  const noCondor = Bun.spawnSync([binary, "--config", config], { env: { PATH: "/usr/bin:/bin" } });
  check(
    "no condor tools: says so and exits 1 (never falls back)",
    noCondor.exitCode === 1 && /condor_submit is not in PATH/.test(noCondor.stderr.toString()),
    noCondor.stderr.toString(),
  );

  const env = {
    PATH: "/usr/bin:/bin",
    MINICONDOR_HOME: join(work, "minicondor"),
    MINICONDOR_ALLOW_ROOT: "1",
  };
  const common = ["--config", config, "--condor-bin", condorBin];
  await startAndPing("TCP", [...common, "--port", "0"], env, (url) => ({ port: Number(new URL(url).port) }));
  const socketPath = join(work, "sidecar.sock");
  await startAndPing("unix socket", [...common, "--socket", socketPath], env, () => ({ socketPath }));
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(`${passes} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
