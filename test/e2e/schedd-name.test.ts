// --schedd-name without "@" is a host name the condor tools resolve before anything else
// (docs/htcondor.md#a-schedd-name-without--is-a-host-name): one that still does not resolve after
// ScheddNameResolveSeconds (30 s by default; 4 s here) is refused at start with exit 2, in
// condor_q's words. Other forms, and a schedd or
// collector that does not answer, never stop the sidecar from starting.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { cleanup } from "../minicondor/src/testkit.ts";
import { CONDOR_BIN, SHIM, type Sidecar, sidecars, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

const { start } = sidecars();
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) {
    await cleanup(join(d, "minicondor"), true);
    rmSync(d, { recursive: true, force: true });
  }
}, TEARDOWN_TIMEOUT_MS);

const ping = async (s: Sidecar) => JSON.parse((await s.call("GET", "/status", [])).body).status as string;

describe("--schedd-name at start (docs/htcondor.md#a-schedd-name-without--is-a-host-name)", () => {
  test("a host name that does not resolve is refused with exit 2 and condor_q's words, after retrying", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
    dirs.push(dir);
    mkdirSync(join(dir, "minicondor"));
    writeFileSync(join(dir, "SidecarConfig.yaml"), `DataRootFolder: ./data\nContainerRuntime: ${SHIM}\nScheddNameResolveSeconds: 4\n`);
    const proc = Bun.spawn(
      [
        process.execPath,
        sidecarEntry(),
        "--config",
        join(dir, "SidecarConfig.yaml"),
        "--condor-bin",
        CONDOR_BIN,
        "--port",
        "0",
        "--schedd-name",
        "nosuchhost.invalid",
      ],
      {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, MINICONDOR_HOME: join(dir, "minicondor"), MINICONDOR_ALLOW_ROOT: "1" },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(code).toBe(2);
    const last = stderr.trimEnd().split("\n").at(-1)!;
    expect(last).toStartWith('htcondor-sidecar: --schedd-name nosuchhost.invalid: condor_q says "Error: unknown host nosuchhost.invalid" (still after 4 s)');
    expect(stderr).not.toContain('"msg":"listening"');
    // It tried more than once before giving up.
    expect(stderr.match(/does not resolve \(yet\)/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
  }, 90_000);

  test.each([
    ["name@host of this machine", `sched@${hostname().split(".")[0]}`, "ok", {}],
    ["this machine's host name", hostname().split(".")[0]!, "ok", {}],
    // The collector has no such schedd: the ping says so, but the sidecar runs.
    ["name@host of a host that does not resolve (the tools do not resolve it)", "sched@nosuchhost.invalid", "degraded: condor_q failing", {}],
    // A schedd or collector that does not answer is never a reason to exit.
    ["this machine's host name while its schedd and collector are down", hostname().split(".")[0]!, "degraded: condor_q and condor_status failing", {
      MINICONDOR_SCHEDD_DOWN: "1",
    }],
  ])("%s starts", async (_what, name, status, env: Record<string, string>) => {
    const s = await start({ args: ["--schedd-name", name], env });
    expect(await ping(s)).toBe(status);
  }, 60_000);
});
