// A remote schedd that asks for an IDTOKEN (docs/htcondor.md#idtokens-a-token-directory), the
// token mounted as a Kubernetes Secret mounts it: a file the sidecar's user does not own, that
// others may read, behind the links of a Secret volume. HTCondor reads no such file, so
// --token-file hands the tools a private 0600 copy, through their environment: strace follows
// every execve and no command line carries the token; neither do the logs, the tools' call log,
// the job's ad or the job's environment. The ping judges the token's exp, and a renewed Secret
// reaches the tools at their next run. minicondor's schedd checks the token as a real one does
// (test/minicondor/src/security.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Json, makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, measureLoad, scaled, SHIM, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { attachTrace, execsWith, straceCheck } from "../render/harness.ts";
import { mintIdToken, runTool } from "../minicondor/src/testkit.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

const check = straceCheck();
if ("problem" in check) console.error(`SKIPPED: the argv audit needs strace: ${check.problem}`);

const KEY = "pool-signing-key";
const SECURITY = { methods: ["IDTOKENS"], trustDomain: "pool.example", signingKeys: { POOL: KEY } };
const now = () => Math.floor(Date.now() / 1000);
const token = (exp: number) => mintIdToken(KEY, { iss: "pool.example", sub: "sidecar@pool.example", exp });

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, TEARDOWN_TIMEOUT_MS);

/**
 * A Secret volume as the kubelet writes it for a pod with fsGroup: `token` links to `..data/token`,
 * `..data` to a folder replaced at each update; the file is root's (here: another user's) with the
 * group bits fsGroup adds to defaultMode 0400.
 */
function secretVolume(dir: string, value: string, generation: number): string {
  mkdirSync(dir, { recursive: true });
  const gen = `..2026_11_27_${generation}`;
  mkdirSync(join(dir, gen));
  writeFileSync(join(dir, gen, "token"), `${value}\n`);
  chownSync(join(dir, gen, "token"), 65534, 65534);
  chmodSync(join(dir, gen, "token"), 0o440);
  symlinkSync(gen, join(dir, "..data_tmp"));
  renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
  if (!existsSync(join(dir, "token"))) symlinkSync("..data/token", join(dir, "token"));
  return join(dir, "token");
}

/** A sidecar whose minicondor schedd asks for IDTOKENS. */
async function tokenSidecar(args: string[], env: Record<string, string> = {}, config?: string): Promise<Sidecar> {
  const dir = mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
  mkdirSync(join(dir, "minicondor"));
  writeFileSync(join(dir, "minicondor", "config.json"), JSON.stringify({ security: SECURITY }));
  return await startSidecar({ dir, args, env, config });
}

/** What condor_q and condor_submit print after their first line when the schedd refuses the token (docs/htcondor.md#what-each-tool-reads-for-each-method). */
const REFUSED = "AUTHENTICATE:1003:Failed to authenticate with any method; AUTHENTICATE:1004:Failed to authenticate using IDTOKENS";

let uidN = 0;
const podRequest = (name: string, script: string) =>
  makeCreateRequest({
    metadata: { name, uid: `70e40000-0000-4000-8000-${String(++uidN).padStart(12, "0")}` },
    spec: { restartPolicy: "Never", containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", script], resources: {} }] },
  });
const ping = async (sc: Sidecar) => {
  const r = await sc.call("GET", "/status", []);
  return { code: r.status, status: JSON.parse(r.body).status as string };
};

describe("--token-file on a schedd that asks for IDTOKENS", () => {
  const vol = mkdtempSync(join(tmpdir(), "secret-vol-"));
  dirs.push(vol);
  const first = token(now() + 3600);
  const file = secretVolume(vol, first, 1);
  let sc: Sidecar;
  let trace = "";
  let pod: Json;
  let podLog = "";

  beforeAll(async () => {
    sc = await tokenSidecar(["--auth-method", "IDTOKENS", "--token-file", file]);
    const t = "problem" in check ? undefined : await attachTrace(check.strace, sc.proc.pid, join(sc.dir, "execve.trace"));
    const req = podRequest("with-token", "env; echo done");
    pod = { metadata: req.pod.metadata };
    expect((await sc.call("POST", "/create", req)).status).toBe(200);
    await eventually(
      async () => JSON.parse((await sc.call("GET", "/status", [pod])).body)[0]?.containers?.[0]?.state?.terminated,
      120_000,
      "the pod to end",
    );
    podLog = (await sc.logs(pod, "main")).body;
    trace = t ? await t.stop() : "";
  }, 180_000);

  afterAll(async () => {
    await sc?.destroy();
  }, TEARDOWN_TIMEOUT_MS);

  test("the tools authenticate with the private copy: the pod ran and the ping is ok", async () => {
    expect(podLog).toContain("done");
    expect(await ping(sc)).toEqual({ code: 200, status: "ok" });
    const copy = join(sc.dataRoot, "idtokens", "token");
    expect(readFileSync(copy, "utf8")).toBe(`${first}\n`);
  }, scaled(60_000));

  test.skipIf("problem" in check)("no execve carries the token; the condor tools were traced", () => {
    expect(execsWith(trace, "condor_submit").length).toBeGreaterThan(0);
    expect(execsWith(trace, "condor_q").length).toBeGreaterThan(0);
    for (const part of [first, ...first.split(".")]) expect(execsWith(trace, part)).toEqual([]);
  }, scaled(60_000));

  test("the token is in no log, no job ad and not in the job's environment", async () => {
    const history = await runTool(sc.home, "condor_history", ["-json"], {
      env: {
        MINICONDOR_ALLOW_ROOT: "1",
        _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS",
        _condor_SEC_TOKEN_DIRECTORY: join(sc.dataRoot, "idtokens"),
      },
    });
    expect(history.code).toBe(0);
    expect(history.stdout).toContain(pod.metadata.uid);
    const calls = readFileSync(join(sc.home, "calls.log"), "utf8");
    const signature = first.split(".")[2]!;
    for (const [what, text] of Object.entries({ log: sc.log(), calls, ad: history.stdout, podLog })) {
      expect([what, text.includes(signature)]).toEqual([what, false]);
    }
    // Not even where the tools find it: the job gets nothing of the tools' environment.
    for (const [what, text] of Object.entries({ calls, ad: history.stdout, podLog })) {
      expect([what, /SEC_TOKEN_DIRECTORY|idtokens/.test(text)]).toEqual([what, false]);
    }
  }, scaled(60_000));

  test("a renewed Secret reaches the tools at their next run; the ping fails while the token has expired", async () => {
    const expired = now() - 60;
    secretVolume(vol, token(expired), 2);
    const p = await ping(sc);
    expect(p).toEqual({ code: 503, status: `unhealthy: credential ${file} expired at ${new Date(expired * 1000).toISOString()}` });
    // The copy follows the Secret: the schedd refuses the expired token.
    const refused = await sc.call("POST", "/create", podRequest("while-expired", "true"));
    expect([refused.status, refused.body]).toEqual([
      503,
      'Cannot submit job for pod "default/while-expired": condor_submit exited with 1: ERROR: Failed to connect to local queue manager; ' + REFUSED + "\n",
    ]);

    secretVolume(vol, token(now() + 3600), 3);
    expect((await ping(sc)).code).toBe(200);
    expect((await sc.call("POST", "/create", podRequest("renewed", "true"))).status).toBe(200);
  }, 60_000);
});

test("SEC_TOKEN_DIRECTORY on the Secret itself (the old deployment.yaml) authenticates nobody: HTCondor skips files it does not own", async () => {
  const vol = mkdtempSync(join(tmpdir(), "secret-vol-"));
  dirs.push(vol);
  secretVolume(vol, token(now() + 3600), 1);
  const sc = await tokenSidecar(["--auth-method", "IDTOKENS"], { _condor_SEC_TOKEN_DIRECTORY: vol });
  try {
    const r = await sc.call("POST", "/create", podRequest("no-token", "true"));
    expect(r.status).toBe(503);
    // The reason keeps what the tools say past the first line: the schedd refused the (absent) token.
    expect(r.body).toEndWith(`ERROR: Failed to connect to local queue manager; ${REFUSED}\n`);
    const q = await runTool(sc.home, "condor_q", [], { env: { MINICONDOR_ALLOW_ROOT: "1", _condor_SEC_TOKEN_DIRECTORY: vol } });
    expect(q.stderr).toEndWith(`\n${REFUSED.replace("; ", "\n")}\n`);
    // No token named: the start says where the tools look (docs/configuration.md#htcondor-flags).
    expect(sc.log()).toContain(`without --token-file or --token-dir: the tools look for IDTOKENS in ${vol} (SEC_TOKEN_DIRECTORY, set in the environment;`);
  } finally {
    await sc.destroy();
  }
}, 60_000);

test("a token with a bad signature: the ping and the create's 503 say the schedd refused it, and never show the token", async () => {
  const vol = mkdtempSync(join(tmpdir(), "secret-vol-"));
  dirs.push(vol);
  const forged = mintIdToken("not-the-pool-key", { iss: "pool.example", sub: "sidecar@pool.example", exp: now() + 3600 });
  const file = secretVolume(vol, forged, 1);
  const sc = await tokenSidecar(["--auth-method", "IDTOKENS", "--token-file", file], {}, "PingFailureThreshold: 1\n");
  try {
    const r = await sc.call("POST", "/create", podRequest("forged", "true"));
    expect([r.status, r.body]).toEqual([
      503,
      `Cannot submit job for pod "default/forged": condor_submit exited with 1: ERROR: Failed to connect to local queue manager; ${REFUSED}\n`,
    ]);
    const p = await eventually(
      async () => {
        const x = await ping(sc);
        return x.code === 503 ? x : undefined;
      },
      60_000,
      "the ping to fail",
    );
    expect(p.status).toStartWith("unhealthy: HTCondor unreachable (schedd: Cannot query HTCondor: condor_q exited with 1: -- Failed to fetch ads from: <");
    expect(p.status).toEndWith(`${REFUSED})`);
    for (const text of [r.body, p.status, sc.log()]) for (const part of forged.split(".")) expect(text.includes(part)).toBe(false);
  } finally {
    await sc.destroy();
  }
}, 90_000);

test(
  "a token file the sidecar cannot read is reported as such everywhere, not as missing (a directory stands in: the tests run as root, who reads any file)",
  async () => {
    const where = mkdtempSync(join(tmpdir(), "unreadable-"));
    dirs.push(where);
    const file = join(where, "token");
    mkdirSync(file);
    const sc = await tokenSidecar(["--auth-method", "IDTOKENS", "--token-file", file]);
    try {
      const problem = `credential file ${file} cannot be read (EISDIR: a directory)`;
      expect(sc.log()).toContain(`${problem}: the ping answers 503 until that changes`);
      expect(await ping(sc)).toEqual({ code: 503, status: `unhealthy: ${problem}` });
      const r = await sc.call("POST", "/create", podRequest("unreadable", "true"));
      expect(r.status).toBe(503);
      expect(r.body).toContain(`cannot read the IDTOKEN file ${file} (EISDIR)`);
      expect(`${r.body}${sc.log()}`.includes("missing")).toBe(false);
    } finally {
      await sc.destroy();
    }
  },
  60_000,
);

describe("combinations no method can use are refused at start, exit 2", () => {
  const refusedAtStart = async (args: string[], mode: string[] = []) => {
    const dir = mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
    dirs.push(dir);
    writeFileSync(join(dir, "SidecarConfig.yaml"), `DataRootFolder: ./data\nContainerRuntime: ${SHIM}\n`);
    const proc = Bun.spawn(
      [process.execPath, sidecarEntry(), ...mode, "--config", join(dir, "SidecarConfig.yaml"), "--condor-bin", CONDOR_BIN, ...args],
      { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, MINICONDOR_HOME: join(dir, "minicondor") }, stdout: "pipe", stderr: "pipe" },
    );
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    return { code, last: stderr.trimEnd().split("\n").at(-1)! };
  };

  test("an IDTOKEN given with --proxy", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idtoken-"));
    dirs.push(dir);
    writeFileSync(join(dir, "token"), `${token(now() + 3600)}\n`);
    expect(await refusedAtStart(["--auth-method", "IDTOKENS", "--proxy", join(dir, "token")])).toEqual({
      code: 2,
      last: `htcondor-sidecar: --proxy ${
        join(dir, "token")
      }: the file holds a token, and only SCITOKENS reads one from --proxy; give an IDTOKEN with --token-file. Run 'htcondor-sidecar --help' for usage.`,
    });
  }, 30_000);

  test("a token directory that does not exist; SSL without a certificate; the operator too", async () => {
    expect(await refusedAtStart(["--token-dir", "/nonexistent/tokens.d"])).toEqual({
      code: 2,
      last: "htcondor-sidecar: --token-dir: /nonexistent/tokens.d does not exist",
    });
    expect((await refusedAtStart(["--auth-method", "SSL"])).last).toStartWith("htcondor-sidecar: --auth-method SSL: without --certfile and --keyfile");
    expect(await refusedAtStart(["--token-file", "/t", "--token-dir", "/tmp"], ["operator"])).toEqual({
      code: 2,
      last: "htcondor-sidecar: --token-file and --token-dir: give one; the tools read one token directory. Run 'htcondor-sidecar --help' for usage.",
    });
  }, 60_000);
});
