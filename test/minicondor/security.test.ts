// A schedd that asks for authentication (docs/htcondor.md#what-each-tool-reads-for-each-method):
// the emulator reads each method's credential where HTCondor's tools read it, and refuses what a
// real schedd refuses.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanup, createHome, mintIdToken, runTool } from "./src/testkit.ts";
import { measureLoad, scaled, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

const KEY = "pool-signing-key";
const home = createHome({
  scheddIdleExitMs: 1500,
  security: { methods: ["IDTOKENS", "SCITOKENS", "SSL"], trustDomain: "pool.example", signingKeys: { POOL: KEY }, scitokensIssuers: ["https://sci.example"] },
});
const files = mkdtempSync(join(tmpdir(), "minicondor-security-"));
afterAll(() => {
  cleanup(home, true);
  rmSync(files, { recursive: true, force: true });
}, TEARDOWN_TIMEOUT_MS);

const base = { MINICONDOR_ALLOW_ROOT: "1" };
const q = (env: Record<string, string>) => runTool(home, "condor_q", ["-af", "ClusterId"], { env: { ...base, ...env } });
const soon = () => Math.floor(Date.now() / 1000) + 3600;
let n = 0;
/** A token directory holding one file. */
function tokenDir(text: string, mode = 0o600, uid?: number): string {
  const dir = join(files, `d${++n}`);
  mkdirSync(dir);
  writeFileSync(join(dir, "token"), `${text}\n`);
  chmodSync(join(dir, "token"), mode);
  if (uid !== undefined) chownSync(join(dir, "token"), uid, uid);
  return dir;
}
const refused = (...methods: string[]) =>
  ["AUTHENTICATE:1003:Failed to authenticate with any method", ...methods.map((m) => `AUTHENTICATE:1004:Failed to authenticate using ${m}`)].join("\n");

describe("IDTOKENS", () => {
  const good = () => mintIdToken(KEY, { iss: "pool.example", sub: "alice@pool.example", exp: soon() });
  const only = { _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS" };

  test("a token of the pool's issuer and key, 0600 in SEC_TOKEN_DIRECTORY: condor_q answers", async () => {
    expect(await q({ ...only, _condor_SEC_TOKEN_DIRECTORY: tokenDir(good()) })).toEqual({ code: 0, stdout: "", stderr: "" });
  }, scaled(60_000));

  test("refused, in condor_q's words, when the token is expired, forged, of another pool, or for another key", async () => {
    const tokens = [
      mintIdToken(KEY, { iss: "pool.example", sub: "a", exp: Math.floor(Date.now() / 1000) - 5 }),
      mintIdToken("not-the-key", { iss: "pool.example", sub: "a" }),
      mintIdToken(KEY, { iss: "other.example", sub: "a" }),
      mintIdToken(KEY, { iss: "pool.example", sub: "a", kid: "OTHER" }),
    ];
    for (const t of tokens) {
      const r = await q({ ...only, _CONDOR_sec_token_directory: tokenDir(t) });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^\\n-- Failed to fetch ads from: <[^>]+> : \\S+\\n${refused("IDTOKENS")}\\n$`));
    }
  }, scaled(60_000));

  test("a file others may read, or another user's, is not read at all: as with no token, condor_q prints the three lines a real schedd gave", async () => {
    for (const dir of [tokenDir(good(), 0o644), tokenDir(good(), 0o600, 65534), tokenDir("# none")]) {
      const r = await q({ ...only, _condor_SEC_TOKEN_DIRECTORY: dir });
      expect(r.stderr).toMatch(new RegExp(`^\\n-- Failed to fetch ads from: <[^>]+> : \\S+\\n${refused("IDTOKENS")}\\n$`));
    }
  }, scaled(60_000));

  test("a name HTCondor skips (a dot file) is not read", async () => {
    const dir = tokenDir("# nothing");
    writeFileSync(join(dir, ".token"), good(), { mode: 0o600 });
    expect((await q({ ...only, _condor_SEC_TOKEN_DIRECTORY: dir })).code).toBe(1);
  }, scaled(60_000));

  test("condor_submit fails to connect, after its banner", async () => {
    const sub = join(files, "job.sub");
    writeFileSync(sub, "executable = /bin/true\nqueue\n");
    const r = await runTool(home, "condor_submit", [sub], { env: { ...base, ...only, _condor_SEC_TOKEN_DIRECTORY: tokenDir("# none") } });
    expect(r).toEqual({ code: 1, stdout: "Submitting job(s)", stderr: `\nERROR: Failed to connect to local queue manager\n${refused("IDTOKENS")}\n` });
  }, scaled(60_000));
});

describe("SCITOKENS and SSL", () => {
  const sci = (iss: string, exp: number) =>
    `${Buffer.from('{"alg":"ES256","kid":"k"}').toString("base64url")}.${Buffer.from(JSON.stringify({ iss, sub: "u", exp })).toString("base64url")}.sig`;

  test("SCITOKENS_FILE's first token line, from an accepted issuer and unexpired", async () => {
    const file = join(files, "scitoken");
    writeFileSync(file, `# a comment\n${sci("https://sci.example", soon())}\n`);
    expect((await q({ _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS", _condor_SCITOKENS_FILE: file })).code).toBe(0);
    writeFileSync(file, `${sci("https://other.example", soon())}\n`);
    expect((await q({ _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS", _condor_SCITOKENS_FILE: file })).stderr).toEndWith(`${refused("SCITOKENS")}\n`);
  }, scaled(60_000));

  test("BEARER_TOKEN_FILE when SCITOKENS_FILE is not set", async () => {
    const file = join(files, "bt");
    writeFileSync(file, sci("https://sci.example", soon()));
    expect((await q({ _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKEN", BEARER_TOKEN_FILE: file })).code).toBe(0);
  }, scaled(60_000));

  test("SSL with a certificate and a key; an X.509 proxy only with AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR", async () => {
    const cert = join(files, "cert.pem");
    const key = join(files, "key.pem");
    writeFileSync(cert, "-----BEGIN CERTIFICATE-----\n");
    writeFileSync(key, "-----BEGIN PRIVATE KEY-----\n");
    const ssl = { _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SSL" };
    expect((await q({ ...ssl, _condor_AUTH_SSL_CLIENT_CERTFILE: cert, _condor_AUTH_SSL_CLIENT_KEYFILE: key })).code).toBe(0);
    expect((await q({ ...ssl, X509_USER_PROXY: cert })).stderr).toEndWith(`${refused("SSL")}\n`);
    expect((await q({ ...ssl, X509_USER_PROXY: cert, _condor_AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR: "true" })).code).toBe(0);
  }, scaled(60_000));

  test("the client's list in its order, each method tried that the schedd takes; FS is not among a remote schedd's", async () => {
    const r = await q({ _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "FS,SSL,SCITOKENS", _condor_SCITOKENS_FILE: join(files, "none") });
    expect(r.stderr).toEndWith(`\n${refused("SCITOKENS", "SSL")}\n`);
  }, scaled(60_000));

  test("condor_version asks nobody", async () => {
    expect((await runTool(home, "condor_version", [], { env: { ...base, _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS" } })).code).toBe(0);
  }, scaled(60_000));
});
