// The shim's lines for a command it cannot start, as Apptainer and SingularityCE print them
// (docs/container-runtimes.md#a-command-that-cannot-start; test/minicondor/shims/README.md, "Starting the command").
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

setDefaultTimeout(60_000);

const SHIMS = join(import.meta.dir, "shims");
const work = mkdtempSync(join(tmpdir(), "shim-start-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function shim(flavour: "apptainer" | "singularity", args: string[], version?: string) {
  const env: Record<string, string> = {
    PATH: "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    MINICONDOR_HOME: join(work, ".minicondor"),
  };
  if (version) env[flavour === "apptainer" ? "MINICONDOR_APPTAINER_VERSION" : "MINICONDOR_SINGULARITY_VERSION"] = version;
  const r = Bun.spawnSync([join(SHIMS, flavour), ...args], { cwd: work, env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const exec = (cmd: string[], flags: string[] = []) => shim("apptainer", ["exec", ...flags, "docker://busybox", ...cmd]);

describe("a command the runtime cannot start", () => {
  test("the lookup's errors, one FATAL line, exit 255", () => {
    writeFileSync(join(work, "plain"), "data\n", { mode: 0o644 });
    const cases: [string, string][] = [
      ["nosuchcmd", 'FATAL:   "nosuchcmd": executable file not found in $PATH\n'],
      ['we"ird\\name\t', 'FATAL:   "we\\"ird\\\\name\\t": executable file not found in $PATH\n'],
      // A file without an execute bit on PATH is passed over, not reported.
      ["plain", 'FATAL:   "plain": executable file not found in $PATH\n'],
      [join(work, "plain"), "FATAL:   permission denied\n"],
      ["./plain", "FATAL:   permission denied\n"],
      ["/etc", "FATAL:   is a directory\n"],
      ["./no/such", `FATAL:   stat ${work}/no/such: no such file or directory\n`],
    ];
    for (const [cmd, line] of cases) {
      const r = exec([cmd], ["--env", `PATH=${work}:/usr/bin:/bin`, "--pwd", work]);
      expect({ cmd, code: r.code, stderr: r.stderr, stdout: r.stdout }).toEqual({ cmd, code: 255, stderr: line, stdout: "" });
    }
  });

  test("Singularity 3.5: the image's shell runs the action script", () => {
    const nf = shim("singularity", ["exec", "docker://busybox", "nosuchcmd"], "3.5.3");
    expect([nf.code, nf.stderr]).toEqual([127, "/.singularity.d/actions/exec: 9: exec: nosuchcmd: not found\n"]);
    const pd = shim("singularity", ["exec", "docker://busybox", "/etc/passwd"], "3.5.3");
    expect([pd.code, pd.stderr]).toEqual([126, "/.singularity.d/actions/exec: 9: exec: /etc/passwd: Permission denied\n"]);
    expect(shim("singularity", ["exec", "docker://busybox", "nosuchcmd"], "3.6.0").stderr).toBe(
      'FATAL:   "nosuchcmd": executable file not found in $PATH\n',
    );
  });

  test("a variable of 128 KiB: the lookup first, then the exec fails before the program runs", () => {
    const big = join(work, "big.env");
    writeFileSync(big, `SIDECAR_START_CHECK=${"x".repeat(131072)}\n`);
    const marker = join(work, "ran");
    const found = exec(["bash", "-c", `touch ${marker}`], ["--env-file", big]);
    expect(found.code).toBe(255);
    expect(found.stderr).toMatch(/^FATAL: {3}exec \/\S*\/bash failed: argument list too long\n$/);
    expect(existsSync(marker)).toBe(false);
    expect(exec(["nosuchcmd"], ["--env-file", big]).stderr).toBe('FATAL:   "nosuchcmd": executable file not found in $PATH\n');
    // One byte less reaches the program.
    writeFileSync(big, `SIDECAR_START_CHECK=${"x".repeat(131072 - "SIDECAR_START_CHECK=".length - 1)}\n`);
    expect(exec(["bash", "-c", `touch ${marker}`], ["--env-file", big]).code).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });
});
