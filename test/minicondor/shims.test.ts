// Tests for the container-runtime shims (test/minicondor/shims/apptainer, singularity).
// Run: node_modules/.bin/bun test test/minicondor/shims.test.ts   (needs root or unprivileged user namespaces)
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { STRACE_EXECVE, straceCheck } from "../render/harness.ts";
import { commandFlags, flagUsages, type RuntimeCommand, type RuntimeFlavour } from "../../src/core/runtime-flags.ts";
import { SHIM_FLAGS_PATH, shimFlagsFile } from "./shims/gen-runtime-flags.ts";

// Several shim calls per test: on a loaded machine they take seconds each (one `instance stop`
// took more than 15 s under `npm run test:loaded`). How long a call takes is not what these tests
// check: a call that hangs is killed just before its test would time out, so that nothing is left.
const TEST_TIMEOUT_MS = 60_000;
const CALL_GUARD_MS = TEST_TIMEOUT_MS - 5_000;
setDefaultTimeout(TEST_TIMEOUT_MS);

const SHIMS = path.join(import.meta.dir, "shims");
const APPTAINER = path.join(SHIMS, "apptainer");
const SINGULARITY = path.join(SHIMS, "singularity");
const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Every awkward byte class: quotes, $, backticks, command substitution, newline, spaces, unicode. */
const NASTY = (marker: string) => `'"$ \`$(touch ${marker})\` \n é ${"$"}{HOME} \\ end`;

let work = "";
let mcHome = "";
const uniq = `mcshim-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

interface Result {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}
interface RunOpts {
  env?: Record<string, string>;
  /** Start with SIGINT and SIGTERM ignored, as a background job of a script is. */
  ignoreInt?: boolean;
  /** Replace the base environment entirely (no PATH unless given). */
  bareEnv?: boolean;
  cwd?: string;
  stdin?: string;
  timeoutMs?: number;
}
function spawn(argv: string[], o: RunOpts = {}) {
  const base: Record<string, string> = o.bareEnv ? {} : { PATH: DEFAULT_PATH, HOME: process.env.HOME ?? "/root", LANG: "C.UTF-8" };
  const full = o.ignoreInt ? ["/bin/bash", "-c", 'trap "" INT TERM; exec "$@"', "ignore", ...argv] : argv;
  return Bun.spawn(full, {
    cwd: o.cwd ?? work,
    env: { ...base, MINICONDOR_HOME: mcHome, ...(o.env ?? {}) },
    stdin: o.stdin === undefined ? "ignore" : new TextEncoder().encode(o.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
}
async function finish(p: ReturnType<typeof spawn>, timeoutMs = CALL_GUARD_MS): Promise<Result> {
  const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  clearTimeout(timer);
  return { code: p.exitCode, signal: p.signalCode === null ? null : String(p.signalCode), stdout, stderr };
}
const run = (argv: string[], o: RunOpts = {}) => finish(spawn(argv, o), o.timeoutMs);
const app = (args: string[], o: RunOpts = {}) => run([APPTAINER, ...args], o);
const sing = (args: string[], o: RunOpts = {}) => run([SINGULARITY, ...args], o);

function envOf(stdout: string): Map<string, string> {
  // `env -0` output
  const m = new Map<string, string>();
  for (const rec of stdout.split("\0")) {
    if (!rec) continue;
    const i = rec.indexOf("=");
    m.set(rec.slice(0, i), rec.slice(i + 1));
  }
  return m;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for what a process does, up to the call guard: a deadline against a hang, not a measure. */
async function waitFor(pred: () => boolean, ms = CALL_GUARD_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(25);
  }
}
const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readOr(`/proc/${pid}/status`));
function readOr(p: string, d = ""): string {
  try {
    return fs.readFileSync(p, "utf8");
  } catch {
    return d;
  }
}
function pidsInMountNs(ns: string): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (fs.readlinkSync(`/proc/${e}/ns/mnt`) === ns) out.push(Number(e));
    } catch {
      // the process has gone
    }
  }
  return out;
}

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "mc-shims-"));
  mcHome = path.join(work, "mchome");
});
afterAll(async () => {
  await app(["instance", "stop", "--all", "-t", "1"]);
  fs.rmSync(work, { recursive: true, force: true });
});

describe("version and command line", () => {
  test("--version and version", async () => {
    expect((await app(["--version"])).stdout).toBe("apptainer version 1.3.4\n");
    expect((await sing(["--version"])).stdout).toBe("singularity-ce version 4.1.5\n");
    expect((await app(["version"])).stdout).toBe("1.3.4\n");
    expect((await app(["--version"], { env: { MINICONDOR_APPTAINER_VERSION: "1.0.3" } })).stdout).toBe("apptainer version 1.0.3\n");
  });

  // docs/container-runtimes.md#how-a-runtime-refuses-a-flag: the text, the streams and exit 1.
  const refusal = (prog: string, flavour: RuntimeFlavour, version: string, command: RuntimeCommand, error: string): [string, string] => {
    const name = command.split(" ").pop();
    const table = flagUsages(commandFlags(flavour, version, command), 80, { home: os.userInfo().homedir, tmpdir: "/tmp" });
    return [
      `Error for command "${name}": ${error}\n\n`,
      `Options for ${name} command:\n\n${table}\nRun '${prog} --help' for more detailed usage information.\n`,
    ];
  };
  test("an old runtime rejects --no-eval like the real one", async () => {
    const r = await app(["exec", "--no-eval", "docker://busybox", "true"], { env: { MINICONDOR_APPTAINER_VERSION: "1.0.3" } });
    expect([r.code, r.stderr]).toEqual([1, refusal("apptainer", "apptainer", "1.0.3", "exec", "unknown flag: --no-eval").join("")]);
    const ok = await app(["exec", "--no-eval", "docker://busybox", "true"], { env: { MINICONDOR_APPTAINER_VERSION: "1.1.0" } });
    expect(ok.code).toBe(0);
    const s = await sing(["exec", "--no-eval", "docker://busybox", "true"], { env: { MINICONDOR_SINGULARITY_VERSION: "3.9.9" } });
    expect([s.code, s.stderr]).toEqual([1, refusal("singularity", "singularity", "3.9.9", "exec", "unknown flag: --no-eval").join("")]);
  });

  // docs/container-runtimes.md: instance start registers no --pid in any release the wrapper supports.
  test("instance start refuses --pid as the release does; Apptainer 1.3+ prints the table on stdout", async () => {
    for (const version of ["1.1.9", "1.2.5"]) {
      const r = await app(["instance", "start", "--cleanenv", "--pid", "docker://busybox", "p"], { env: { MINICONDOR_APPTAINER_VERSION: version } });
      expect([r.code, r.stdout, r.stderr]).toEqual([1, "", refusal("apptainer", "apptainer", version, "instance start", "unknown flag: --pid").join("")]);
    }
    const r = await app(["instance", "start", "-p", "docker://busybox", "p"], { env: { MINICONDOR_APPTAINER_VERSION: "1.5.3" } });
    const [first, rest] = refusal("apptainer", "apptainer", "1.5.3", "instance start", "unknown shorthand flag: 'p' in -p");
    expect([r.code, r.stderr, r.stdout]).toEqual([1, first, rest]);
    const s = await sing(["instance", "start", "--pid", "docker://busybox", "p"], { env: { MINICONDOR_SINGULARITY_VERSION: "4.5.1" } });
    expect([s.code, s.stderr]).toEqual([1, refusal("singularity", "singularity", "4.5.1", "instance start", "unknown flag: --pid").join("")]);
    // exec registers it, and the release's -h lists it.
    expect((await app(["exec", "--pid", "docker://busybox", "true"], { env: { MINICONDOR_APPTAINER_VERSION: "1.1.9" } })).code).toBe(0);
  });

  test("the shim's flag rows are the ones src/core/runtime-flags.ts holds", () => {
    expect(fs.readFileSync(SHIM_FLAGS_PATH, "utf8")).toBe(shimFlagsFile());
  });

  test("usage errors exit 1", async () => {
    let r = await app(["exec", "--bogus", "docker://busybox", "true"]);
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([1, 'Error for command "exec": unknown flag: --bogus']);
    r = await app(["exec", "-Z", "docker://busybox", "true"]);
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([1, `Error for command "exec": unknown shorthand flag: 'Z' in -Z`]);
    r = await app(["exec", "docker://busybox"]);
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([1, 'Error for command "exec": requires at least 2 arg(s), only received 1']);
    r = await app(["frobnicate"]);
    expect(r.code).toBe(255);
    r = await app(["exec", "--env", "NOEQUALS", "docker://busybox", "true"]);
    expect(r.code).toBe(1);
    r = await app(["exec", "/nonexistent/image.sif", "true"]);
    expect(r.code).toBe(255);
    expect(r.stderr).toStartWith("FATAL:   could not open image /nonexistent/image.sif");
    // options after the image belong to the command (interspersed flags are off)
    r = await app(["exec", "docker://busybox", "echo", "--bogus", "-e"]);
    expect([r.code, r.stdout]).toEqual([0, "--bogus -e\n"]);
  });

  // shims/README.md#batch-mode-tests-only: what test/render/runtime-fidelity.test.ts relies on.
  test("batch mode answers each argv as a call of its own would", async () => {
    const argvs = [
      ["exec", "--no-eval", "--cleanenv", "-B", "/a:/b", "instance://il-none", "true"],
      ["exec", "--no-eval", "docker://busybox", "true"],
      ["exec", "-Z", "docker://busybox", "true"],
      ["instance", "start", "--pid", "/nonexistent/image.sif", "il-x"],
      ["run", "--env-file", "/x.env", "instance://il-none"],
      ["instance", "stop", "-t", "2", "il-none"],
      ["instance", "stop", "-F", "il-none"],
      ["exec", "docker://busybox"],
      ["frobnicate", ""],
    ];
    for (const version of ["1.0.3", "1.3.4"]) {
      const env = { MINICONDOR_APPTAINER_VERSION: version };
      const input = argvs.map((argv) => [String(argv.length), ...argv].map((w) => `${w}\0`).join("")).join("");
      const batch = await app(["__minicondor_batch"], { env, stdin: input });
      expect([batch.code, batch.stderr]).toEqual([0, ""]);
      const alone: string[] = [];
      for (const argv of argvs) {
        const r = await app(argv, { env });
        alone.push(String(r.code), r.stderr.replace(/\n+$/, ""));
      }
      expect(batch.stdout.split("\0")).toEqual([...alone, ""]);
    }
    const cut = await app(["__minicondor_batch"], { stdin: "3\0exec\0" });
    expect([cut.code, cut.stderr]).toEqual([2, "batch: argv cut short\n"]);
  });
});

describe("exec and run", () => {
  test("exec: exit status, stdin, command lookup, no PATH in the caller's environment", async () => {
    expect((await app(["exec", "docker://busybox", "sh", "-c", "exit 7"])).code).toBe(7);
    expect((await app(["exec", "docker://busybox", "cat"], { stdin: "piped\n" })).stdout).toBe("piped\n");
    const nf = await app(["exec", "docker://busybox", "no-such-command-xyz"]);
    expect(nf.code).toBe(255);
    expect(nf.stderr).toBe('FATAL:   "no-such-command-xyz": executable file not found in $PATH\n');
    const bare = await run([APPTAINER, "exec", "docker://busybox", "sh", "-c", 'echo "$PATH"'], { bareEnv: true });
    expect([bare.code, bare.stdout]).toEqual([0, DEFAULT_PATH + "\n"]);
  });

  test("run uses the image's entrypoint and CMD", async () => {
    let r = await app(["run", "docker://docker.io/library/busybox:1.36", "echo", "hello", "world"]);
    expect([r.code, r.stdout]).toEqual([0, "hello world\n"]);
    r = await app(["run", "docker://busybox@sha256:0123"], { stdin: "echo from-default-cmd\n" });
    expect([r.code, r.stdout]).toEqual([0, "from-default-cmd\n"]);
    r = await app(["run", "docker://alpine:3.20"], { stdin: "echo alpine-sh\n" });
    expect(r.stdout).toBe("alpine-sh\n");
    r = await app(["run", "docker://python:3.12-slim", "-c", "import sys; print(sys.argv[1:])", "a b", "c"]);
    expect([r.code, r.stdout]).toEqual([0, "['a b', 'c']\n"]);
    r = await app(["run", "oras://registry.example/some/unknown:1", "echo", "args-are-the-command"]);
    expect(r.stdout).toBe("args-are-the-command\n");
    r = await app(["run", "docker://registry.example/unknown:1"]);
    expect(r.code).toBe(255);
    expect(r.stderr).toStartWith("FATAL:   no runscript");
  });

  test("--pwd, cwd and --hostname", async () => {
    expect((await app(["exec", "docker://busybox", "pwd"])).stdout).toBe(work + "\n");
    expect((await app(["exec", "--pwd", "/usr/share", "docker://busybox", "pwd"])).stdout).toBe("/usr/share\n");
    expect((await app(["exec", "--pwd", "/no/such/dir", "docker://busybox", "pwd"])).code).toBe(255);
    expect((await app(["exec", "--hostname", "ctr-host", "docker://busybox", "cat", "/proc/sys/kernel/hostname"])).stdout).toBe("ctr-host\n");
    expect(readOr("/proc/sys/kernel/hostname").trim()).not.toBe("ctr-host");
  });
});

describe("environment", () => {
  test("host environment passes through, PATH and HOME are the runtime's", async () => {
    const r = await app(["exec", "docker://busybox", "env", "-0"], { env: { HOSTVAR: "h v", PATH: "/opt/host/bin:/usr/bin:/bin", LD_LIBRARY_PATH: "/x" } });
    const e = envOf(r.stdout);
    expect(e.get("HOSTVAR")).toBe("h v");
    expect(e.get("PATH")).toBe(DEFAULT_PATH);
    expect(e.has("LD_LIBRARY_PATH")).toBe(false);
    expect(e.get("APPTAINER_CONTAINER")).toBe("docker://busybox");
    expect(e.get("APPTAINER_NAME")).toBe("busybox");
  });

  test("--cleanenv keeps only what the runtime injects", async () => {
    const r = await app(["exec", "--cleanenv", "--env", "A=1,B=x=y", "--env", "C=a,b", "--nv", "docker://busybox", "env", "-0"], {
      env: { HOSTVAR: "dropped", TERM: "xterm", APPTAINERENV_INJ: "kept", APPTAINERENV_PATH: "/inj/bin:/usr/bin:/bin" },
    });
    const e = envOf(r.stdout);
    expect(e.has("HOSTVAR")).toBe(false);
    expect(e.has("APPTAINERENV_INJ")).toBe(false);
    expect(e.get("INJ")).toBe("kept");
    expect(e.get("PATH")).toBe("/inj/bin:/usr/bin:/bin");
    expect(e.get("LANG")).toBe("C");
    expect(e.get("TERM")).toBe("xterm");
    expect(e.get("A")).toBe("1");
    expect(e.get("B")).toBe("x=y");
    expect(e.get("C")).toBe("a,b"); // a single "=" is not split on commas (pflag StringToString)
    expect(e.get("MINICONDOR_NV")).toBe("1");
    expect(e.get("HOME")).toBeTruthy();
    expect(e.get("PWD")).toBe(work);
  });

  test("precedence: --env over APPTAINERENV_ over SINGULARITYENV_; singularity uses its own prefix", async () => {
    let r = await app(["exec", "--env", "X=flag", "docker://busybox", "sh", "-c", 'echo "$X $Y $Z"'], {
      env: { APPTAINERENV_X: "a", APPTAINERENV_Y: "a", SINGULARITYENV_Y: "s", SINGULARITYENV_Z: "s" },
    });
    expect(r.stdout).toBe("flag a s\n");
    expect(r.stderr).toContain("DEPRECATED USAGE: Environment variable SINGULARITYENV_Z");
    r = await sing(["exec", "docker://busybox", "sh", "-c", 'echo "[$S][$A][$SINGULARITY_NAME]"'], { env: { SINGULARITYENV_S: "s", APPTAINERENV_A: "a" } });
    expect(r.stdout).toBe("[s][][busybox]\n");
  });

  test("--env-file is a sourced shell file", async () => {
    const f = path.join(work, "vars.env");
    fs.writeFileSync(f, 'EF1=one\nexport EF2="$EF1-two"\n# comment\n');
    const r = await app(["exec", "--env-file", f, "--env", "EF1=flag", "docker://busybox", "sh", "-c", 'echo "$EF1 $EF2"']);
    expect(r.stdout).toBe("flag one-two\n");
  });
});

describe("evaluation: --no-eval versus the runtime's evaluation bug", () => {
  test("with --no-eval, env values and arguments arrive byte for byte", async () => {
    const marker = path.join(work, "noeval-marker");
    const v = NASTY(marker);
    const argvDump = ["sh", "-c", 'for a in "$@"; do printf "%s\\0" "$a"; done', "sh"];
    let r = await app(["exec", "--no-eval", "docker://busybox", ...argvDump, v, "$(touch " + marker + ")"]);
    expect(r.stdout).toBe(`${v}\0$(touch ${marker})\0`);
    r = await app(["run", "--no-eval", "docker://busybox", ...argvDump, v]);
    expect([r.code, r.stdout]).toEqual([0, `${v}\0`]);
    r = await app(["run", "--no-eval", "docker://python", "-c", "import sys; sys.stdout.write(sys.argv[1])", v]);
    expect(r.stdout).toBe(v);
    r = await app(["exec", "--no-eval", "--cleanenv", "--env", `W=${v}`, "docker://busybox", "env", "-0"], { env: { APPTAINERENV_V: v } });
    const e = envOf(r.stdout);
    expect(e.get("V")).toBe(v);
    expect(e.get("W")).toBe(v);
    r = await sing(["exec", "--no-eval", "docker://busybox", "printenv", "V"], { env: { SINGULARITYENV_V: v } });
    expect(r.stdout).toBe(v + "\n");
    expect(fs.existsSync(marker)).toBe(false);
  });

  test("without --no-eval, injected values are shell-evaluated (apptainer/apptainer#438)", async () => {
    const m1 = path.join(work, "eval-env-marker");
    const r = await app(["exec", "docker://busybox", "printenv", "V", "H"], { env: { APPTAINERENV_V: `$(touch ${m1})x`, APPTAINERENV_H: "$HOME" } });
    expect(r.stdout).toBe(`x\n${process.env.HOME ?? "/root"}\n`);
    expect(fs.existsSync(m1)).toBe(true);
    // a value that breaks the generated `export V="…"` line is fatal
    const bad = await app(["exec", "docker://busybox", "true"], { env: { APPTAINERENV_V: 'a"b' } });
    expect(bad.code).toBe(255);
    // host variables that are passed through are not evaluated
    const m2 = path.join(work, "eval-host-marker");
    const h = await app(["exec", "docker://busybox", "printenv", "HV"], { env: { HV: `$(touch ${m2})` } });
    expect(h.stdout).toBe(`$(touch ${m2})\n`);
    expect(fs.existsSync(m2)).toBe(false);
  });

  test("without --no-eval, run arguments go through the OCI runscript's eval; exec arguments do not", async () => {
    const m1 = path.join(work, "eval-run-marker");
    const m2 = path.join(work, "eval-exec-marker");
    const r = await app(["run", "docker://busybox", "echo", `$(touch ${m1})a b`, "$HOME"]);
    expect(r.stdout).toBe(`a b ${process.env.HOME ?? "/root"}\n`);
    expect(fs.existsSync(m1)).toBe(true);
    const x = await app(["exec", "docker://busybox", "echo", `$(touch ${m2})`]);
    expect(x.stdout).toBe(`$(touch ${m2})\n`);
    expect(fs.existsSync(m2)).toBe(false);
  });
});

describe("bind mounts", () => {
  test("ro, rw, files and missing targets, without creating anything on the host", async () => {
    const src = path.join(work, "bsrc");
    const scratchTmp = path.join(work, "scratch", "tmp");
    fs.mkdirSync(src, { recursive: true });
    fs.mkdirSync(scratchTmp, { recursive: true });
    fs.writeFileSync(path.join(src, "data"), "payload\n");
    fs.writeFileSync(path.join(work, "single"), "one file\n");
    const topNew = `/${uniq}-top/deep/er`;
    const nested = `/usr/share/${uniq}/x`;
    const fileDst = `/opt/${uniq}/conf/single.txt`;
    // Names of this run only: other programs may write to the machine's /tmp and / meanwhile.
    const tmpName = `${uniq}-from-container`;
    const script = [
      `cat ${topNew}/data ${nested}/data ${fileDst}`,
      `touch ${topNew}/nope 2>/dev/null && echo WRITABLE || echo read-only`,
      `echo rw > ${nested}/written`,
      `echo in-tmp > /tmp/${tmpName}`,
      "ls /tmp",
      `test -d /proc/self && test -e /dev/null && echo system-dirs-ok`,
    ].join("; ");
    const r = await app(
      [
        "exec",
        "--bind",
        `${src}:${topNew}:ro,${path.join(work, "single")}:${fileDst}`,
        "-B",
        `${scratchTmp}:/tmp`,
        "--bind",
        `${src}:${nested}`,
        "docker://busybox",
        "sh",
        "-c",
        script,
      ],
      { timeoutMs: CALL_GUARD_MS },
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(["payload", "payload", "one file", "read-only", tmpName, "system-dirs-ok", ""].join("\n"));
    expect(r.code).toBe(0);
    // the container wrote through the binds...
    expect(fs.readFileSync(path.join(src, "written"), "utf8")).toBe("rw\n");
    expect(fs.readFileSync(path.join(scratchTmp, tmpName), "utf8")).toBe("in-tmp\n");
    // ...and nothing was created on the host: not what it wrote to /tmp, not the mount points the
    // shim made for the missing targets, not the scratch folder of its root view.
    for (const p of [`/tmp/${tmpName}`, `/${uniq}-top`, `/usr/share/${uniq}`, `/opt/${uniq}`, path.join(mcHome, "tmp")]) {
      expect([p, fs.existsSync(p)]).toEqual([p, false]);
    }
  });

  // What the operator's wrapper binds: a file, then a folder, below one new top-level folder. The
  // second bind makes a view of a folder the first made, whose entry is already a mount.
  test("binds below a folder an earlier bind created; entries with spaces, backslashes and newlines", async () => {
    const top = `/${uniq}-job`;
    const odd = path.join(work, "odd-names");
    fs.mkdirSync(path.join(odd, "a dir\\with\nnewline"), { recursive: true });
    fs.writeFileSync(path.join(odd, "a dir\\with\nnewline", "f"), "deep\n");
    fs.writeFileSync(path.join(odd, "file\twith tab"), "tabbed\n");
    // a folder named as the shim's own fstab file in a view: the shim picks another name
    fs.mkdirSync(path.join(odd, ".minicondor-fstab"));
    fs.writeFileSync(path.join(odd, ".minicondor-fstab", "g"), "clash\n");
    fs.writeFileSync(path.join(work, "job-script"), "echo from the script\n");
    const out = fs.mkdtempSync(path.join(work, "job-work-"));
    const script = [
      `bash ${top}/script`,
      `echo written > ${top}/work/out.txt`,
      `cat "${odd}/a dir\\\\with"$'\\n'"newline/f" "${odd}/file"$'\\t'"with tab" ${odd}/.minicondor-fstab/g`,
      `ls ${top}`,
    ].join("; ");
    const r = await app(
      [
        "exec",
        "--no-eval",
        "-B",
        `${path.join(work, "job-script")}:${top}/script:ro`,
        "-B",
        `${out}:${top}/work`,
        "-B",
        `${odd}:${odd}/inner/x`,
        "docker://busybox",
        "bash",
        "-c",
        script,
      ],
      { timeoutMs: CALL_GUARD_MS },
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("from the script\ndeep\ntabbed\nclash\nscript\nwork\n");
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(out, "out.txt"), "utf8")).toBe("written\n");
    for (const p of [top, path.join(odd, "inner")]) expect([p, fs.existsSync(p)]).toEqual([p, false]);
  });

  test("minicondor's container-universe command line: -s exec -S /tmp -S /var/tmp --pwd <scratch> -B <scratch> --no-home -C", async () => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "mc-shim-exec-"));
    const hostFile = `/tmp/${uniq}-host-only`;
    fs.writeFileSync(path.join(scratch, "input"), "in\n");
    fs.writeFileSync(hostFile, "x");
    try {
      const r = await run(
        [
          APPTAINER,
          "-s",
          "exec",
          "-S",
          "/tmp",
          "-S",
          "/var/tmp",
          "--pwd",
          scratch,
          "-B",
          scratch,
          "--no-home",
          "-C",
          "docker://busybox",
          "sh",
          "-c",
          'pwd; cat input; ls -A /tmp; ls -A /var/tmp | wc -l; echo out > output; echo "$FOO|$HOSTVAR"',
        ],
        { bareEnv: true, cwd: scratch, env: { APPTAINERENV_FOO: "bar", HOSTVAR: "dropped-by-C" } },
      );
      expect(r.stderr).toBe("");
      // -S gives /tmp and /var/tmp empty scratch mounts; the scratch bind shows in one of them only when the
      // temp dir (TMPDIR, os.tmpdir()) lies under it, as its first path component
      const under = (dir: string) => (scratch.startsWith(dir + "/") ? scratch.slice(dir.length + 1).split("/")[0]! : null);
      const inTmp = under("/tmp"), inVarTmp = under("/var/tmp");
      expect(r.stdout.replace(/^ +/gm, "")).toBe(`${scratch}\nin\n${inTmp === null ? "" : inTmp + "\n"}${inVarTmp === null ? 0 : 1}\nbar|\n`);
      expect(fs.readFileSync(path.join(scratch, "output"), "utf8")).toBe("out\n");
      expect(fs.existsSync(hostFile)).toBe(true);
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
      fs.rmSync(hostFile, { force: true });
    }
  });

  test("bind errors", async () => {
    let r = await app(["exec", "--bind", `/nonexistent-${uniq}:/mnt/x`, "docker://busybox", "true"]);
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("mount source /nonexistent-" + uniq + " doesn't exist");
    r = await app(["exec", "--bind", `${work}:/x:bogus`, "docker://busybox", "true"]);
    expect(r.code).toBe(255);
    expect(fs.existsSync("/x")).toBe(false);
  });

  test("APPTAINER_BIND and --contain", async () => {
    const src = path.join(work, "envbind");
    fs.mkdirSync(src, { recursive: true });
    fs.writeFileSync(path.join(src, "f"), "via-env\n");
    let r = await app(["exec", "docker://busybox", "cat", `/mnt/${uniq}/f`], { env: { APPTAINER_BIND: `${src}:/mnt/${uniq}` } });
    expect(r.stdout).toBe("via-env\n");
    expect(fs.existsSync(`/mnt/${uniq}`)).toBe(false);
    fs.writeFileSync(`/tmp/${uniq}-visible`, "x");
    try {
      r = await app(["exec", "--contain", "docker://busybox", "sh", "-c", `ls -A /tmp | wc -l; test -e /tmp/${uniq}-visible || echo hidden`]);
      expect(r.stdout.replace(/ /g, "")).toBe("0\nhidden\n");
    } finally {
      fs.rmSync(`/tmp/${uniq}-visible`);
    }
  });

  // Apptainer binds the caller's working directory at its own path (addCwdMount) unless it is / or
  // an operating-system directory (or under /sys, /proc, /dev), or -c/-C or --no-mount cwd is given;
  // the shim records the bind as MINICONDOR_CWD_BOUND (see shims/README.md, "Mounts").
  test("the caller's working directory is bound, except from / and system directories, with -c/-C or --no-mount cwd", async () => {
    const show = ["sh", "-c", 'echo "[${MINICONDOR_CWD_BOUND-}]"'];
    const bound = async (args: string[], cwd: string) => {
      const r = await app(args, { cwd, env: { MINICONDOR_CWD_BOUND: "from-the-caller" } });
      expect([args, r.stderr, r.code]).toEqual([args, "", 0]);
      return r.stdout.trim().slice(1, -1);
    };
    expect(await bound(["exec", "docker://busybox", ...show], work)).toBe(work);
    expect(await bound(["run", "--no-eval", "docker://busybox", ...show], work)).toBe(work);
    for (const dir of ["/", "/usr", "/etc", "/proc/self"]) expect([dir, await bound(["exec", "docker://busybox", ...show], dir)]).toEqual([dir, ""]);
    for (const flags of [["-c"], ["--containall"], ["--no-mount", "home,cwd"], ["--no-mount=cwd"]]) {
      expect([flags, await bound(["exec", ...flags, "docker://busybox", ...show], work)]).toEqual([flags, ""]);
    }
    // The bind is real: a scratch tmpfs over its parent hides everything there but the cwd.
    fs.writeFileSync(path.join(work, "cwd-marker"), "here\n");
    const parent = path.dirname(work);
    let r = await app(["exec", "-S", parent, "docker://busybox", "sh", "-c", `cat ${work}/cwd-marker; ls -A ${parent}`]);
    expect(r.stdout).toBe(`here\n${path.basename(work)}\n`);
    r = await app(["exec", "--no-mount", "cwd", "-S", parent, "docker://busybox", "sh", "-c", `test -e ${work} || echo hidden`]);
    expect(r.stdout).toBe("hidden\n");
    // An instance's mounts are those of its start: an exec into it adds no bind of its own cwd.
    expect((await app(["instance", "start", "docker://busybox", "cwd-from-work"], { cwd: work })).code).toBe(0);
    expect((await app(["instance", "start", "docker://busybox", "cwd-from-root"], { cwd: "/" })).code).toBe(0);
    try {
      expect(await bound(["exec", "instance://cwd-from-work", ...show], "/")).toBe(work);
      expect(await bound(["exec", "instance://cwd-from-root", ...show], work)).toBe("");
    } finally {
      await app(["instance", "stop", "-t", "1", "cwd-from-work", "cwd-from-root"]);
    }
  });
});

describe("instances", () => {
  test("start, exec sharing the bound /tmp, run, list, stop", async () => {
    const scratchTmp = path.join(work, "inst-scratch", "tmp");
    fs.mkdirSync(scratchTmp, { recursive: true });
    const name = "web-1.a_b";
    let r = await app(["instance", "start", "--bind", `${scratchTmp}:/tmp`, "--bind", `${work}:/${uniq}-inst`, "docker://busybox:1.36", name]);
    expect(r.stderr).toBe("INFO:    instance started successfully\n");
    expect(r.code).toBe(0);
    r = await app(["instance", "start", "docker://busybox", name]);
    expect([r.code, r.stderr]).toEqual([255, `FATAL:   instance ${name} already exists\n`]);

    r = await app(["exec", `instance://${name}`, "sh", "-c", `echo shared > /tmp/s; ls -d /${uniq}-inst`]);
    expect([r.code, r.stdout]).toEqual([0, `/${uniq}-inst\n`]);
    r = await app(["exec", "--cleanenv", "--env", "Q=1", `instance://${name}`, "sh", "-c", 'cat /tmp/s; echo "$Q $HOSTVAR"; pwd'], {
      env: { HOSTVAR: "h" },
      cwd: "/usr/share",
    });
    expect(r.stdout).toBe("shared\n1 \n/usr/share\n");
    // the caller's cwd (under /tmp) is hidden by the instance's /tmp bind: falls back to $HOME
    r = await app(["exec", `instance://${name}`, "sh", "-c", 'test "$PWD" = "$HOME" && test "$(pwd)" = "$HOME" && echo home']);
    expect(r.stdout).toBe("home\n");
    r = await app(["run", `instance://${name}`, "cat", "/tmp/s"]);
    expect(r.stdout).toBe("shared\n");
    expect(fs.readFileSync(path.join(scratchTmp, "s"), "utf8")).toBe("shared\n");
    expect(fs.existsSync(`/${uniq}-inst`)).toBe(false);

    r = await app(["instance", "list", "--json"]);
    const list = JSON.parse(r.stdout) as { instances: { instance: string; pid: number; img: string }[] };
    const me = list.instances.find((i) => i.instance === name);
    expect(me?.img).toBe("docker://busybox:1.36");
    const holder = me!.pid;
    const ns = fs.readlinkSync(`/proc/${holder}/ns/mnt`);
    expect((await app(["instance", "list"])).stdout).toMatch(
      new RegExp(`^INSTANCE NAME +PID +IP +IMAGE\\n${name.replace(/\./g, "\\.")} +${holder} +docker://busybox:1.36\\n`),
    );

    // a long-running process inside the instance, with a child of its own
    const pidFile = path.join(scratchTmp, "pid");
    const long = spawn([APPTAINER, "exec", `instance://${name}`, "sh", "-c", "sleep 300 & echo $$ > /tmp/pid; wait"]);
    await waitFor(() => fs.existsSync(pidFile) && readOr(pidFile).trim() !== "");
    const inner = Number(readOr(pidFile).trim());
    expect(alive(inner)).toBe(true);
    expect(pidsInMountNs(ns).length).toBeGreaterThanOrEqual(3); // holder, sh, sleep

    r = await app(["instance", "stop", name]);
    expect(r.stderr).toBe(`INFO:    Stopping ${name} instance of docker://busybox:1.36 (PID=${holder})\n`);
    expect(r.code).toBe(0);
    const lr = await finish(long);
    expect(lr.code).toBe(143);
    expect(alive(holder)).toBe(false);
    expect(alive(inner)).toBe(false);
    expect(pidsInMountNs(ns)).toEqual([]);
    expect(fs.existsSync(path.join(mcHome, "instances", name))).toBe(false);

    r = await app(["exec", `instance://${name}`, "true"]);
    expect([r.code, r.stderr]).toEqual([255, `FATAL:   no instance found with name ${name}\n`]);
    r = await app(["instance", "stop", name]);
    expect([r.code, r.stderr]).toEqual([255, `FATAL:   no instance found with name ${name}\n`]);
  });

  test("stop --signal and --timeout; invalid names", async () => {
    let r = await app(["instance", "start", "docker://busybox", "stubborn"]);
    expect(r.code).toBe(0);
    const up = path.join(work, "stubborn-up");
    const p = spawn([APPTAINER, "exec", "instance://stubborn", "sh", "-c", `trap '' TERM; touch ${up}; while :; do sleep 0.1; done`]);
    await waitFor(() => fs.existsSync(up));
    const t0 = Date.now();
    r = await app(["instance", "stop", "-t", "1", "stubborn"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("Killing stubborn instance");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect((await finish(p)).code).toBe(137);

    r = await app(["instance", "start", "docker://busybox", "usr1"]);
    const usr1Up = path.join(work, "usr1-up");
    const q = spawn([APPTAINER, "exec", "instance://usr1", "sh", "-c", `touch ${usr1Up}; exec sleep 300`]);
    // Stopped once the command runs (not after a fixed wait, which a busy machine outlasts).
    await waitFor(() => fs.existsSync(usr1Up));
    r = await app(["instance", "stop", "--signal", "SIGUSR1", "usr1"]);
    expect(r.code).toBe(0);
    expect((await finish(q)).code).toBe(128 + 10);

    for (const bad of ["a/b", "..", "-x", "with space", ""]) {
      r = await app(["instance", "start", "docker://busybox", bad]);
      expect(r.code).toBe(255);
    }
    expect((await app(["instance", "list"])).stdout).toBe("INSTANCE NAME    PID      IP    IMAGE\n");
  });

  test("stop ends only the instance's own processes, not another process in a namespace of the same id", async () => {
    // The kernel hands a freed namespace id to the next namespace made: when the instance's last
    // process exits, another pod's container starting a moment later may get the same id. That
    // container is modelled by a process entered into the instance's namespace from outside while
    // the stop runs: it is neither the instance's nor a child of it, and must survive the stop.
    expect((await app(["instance", "start", "docker://busybox", "sameid"])).code).toBe(0);
    const up = path.join(work, "sameid-up");
    const own = spawn([
      APPTAINER,
      "exec",
      "instance://sameid",
      "sh",
      "-c",
      `trap 'touch ${up}.term' TERM; echo $$ > ${up}.tmp; mv ${up}.tmp ${up}; while :; do sleep 0.1; done`,
    ]);
    await waitFor(() => fs.existsSync(up));
    const inside = fs.readFileSync(up, "utf8").trim();
    const stop = app(["instance", "stop", "-t", "2", "sameid"]);
    // The other process enters once the stop has sent its SIGTERM (which the instance's process
    // ignores) and waits for the timeout before its SIGKILL: while the stop runs, whatever the load.
    await waitFor(() => fs.existsSync(`${up}.term`));
    const other = Bun.spawn(["nsenter", `--mount=/proc/${inside}/ns/mnt`, "sleep", "300"], { stdout: "ignore", stderr: "ignore" });
    try {
      const r = await stop;
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("Killing sameid instance");
      expect((await finish(own)).code).toBe(137);
      expect(other.exitCode).toBeNull();
      expect(other.signalCode).toBeNull();
    } finally {
      other.kill("SIGKILL");
      await other.exited;
    }
  });
});

describe("instance cleanup", () => {
  test("deleting the state directory without `instance stop` ends the instance and its processes", async () => {
    const home2 = path.join(work, "mchome-orphan");
    const env = { MINICONDOR_HOME: home2 };
    expect((await app(["instance", "start", "docker://busybox", "orphan"], { env })).code).toBe(0);
    const holder = Number(readOr(path.join(home2, "instances", "orphan", "pid")).trim());
    const ns = fs.readlinkSync(`/proc/${holder}/ns/mnt`);
    const p = spawn([APPTAINER, "exec", "instance://orphan", "sleep", "300"], { env });
    await waitFor(() => pidsInMountNs(ns).length >= 2);
    fs.rmSync(home2, { recursive: true, force: true });
    await waitFor(() => pidsInMountNs(ns).length === 0, 5000);
    expect((await finish(p)).code).toBe(137);
  });
});

describe("signals", () => {
  test("SIGTERM and SIGINT sent to the shim reach the command; exit codes follow it", async () => {
    const ready1 = path.join(work, "sig-ready-1");
    const p = spawn([APPTAINER, "exec", "docker://busybox", "sh", "-c", `trap 'echo got-term; kill $!; exit 3' TERM; touch ${ready1}; sleep 30 & wait`]);
    await waitFor(() => fs.existsSync(ready1));
    p.kill("SIGTERM");
    const r = await finish(p);
    expect([r.code, r.stdout]).toEqual([3, "got-term\n"]);

    const ready2 = path.join(work, "sig-ready-2");
    const q = spawn([APPTAINER, "exec", "docker://busybox", "sh", "-c", `touch ${ready2}; exec sleep 30`]);
    await waitFor(() => fs.existsSync(ready2));
    await sleep(100); // let sh exec sleep
    q.kill("SIGINT");
    expect((await finish(q)).code).toBe(130);

    expect((await app(["exec", "docker://busybox", "sh", "-c", "kill -KILL $$"])).code).toBe(137);
  });

  test("a shim started with SIGINT ignored (background job of a script) still forwards it", async () => {
    // SIGINT once the container runs (it marks the working folder, which the shim binds), not after
    // 0.5 s: on a busy machine the shim had not yet started itself again to stop ignoring it.
    const ready = `int-ready-${uniq}`;
    const r = await run([
      "bash",
      "-c",
      `${APPTAINER} exec docker://busybox sh -c 'touch ${ready}; exec sleep 30' & until [ -e ${ready} ]; do sleep 0.1; done; kill -INT $!; wait $!; echo "rc=$?"`,
    ]);
    expect(r.stdout).toBe("rc=130\n");
  });
});

// The real runtime receives the container's variables in its environment and passes them on the
// same way; the shim must too, or a test of its callers could not tell a secret on a command line
// (readable by every user, e.g. with ps) from one in an environment (readable by its owner only).
describe("values never on a command line", () => {
  const check = straceCheck();
  if ("problem" in check) console.error(`SKIPPED: the shim's argv audit needs strace: ${check.problem}`);
  test.skipIf("problem" in check)("every execve of exec, run, instance start/exec, evaluation and re-execution is free of the values", async () => {
    const strace = (check as { strace: string }).strace;
    const secret = (what: string) => `s3cret-${what}-${uniq}`;
    const trace = path.join(work, "argv.trace");
    const tracedArgv = (args: string[]) => [strace, ...STRACE_EXECVE, "-o", `${trace}.${args[0]}.${Math.random()}`, APPTAINER, ...args];
    const traced = (args: string[], o: RunOpts = {}) => run(tracedArgv(args), o);
    const name = `${uniq}-argv`;
    const before = [
      // --cleanenv and --no-eval, as the job wrapper calls it
      await traced(["exec", "--cleanenv", "--no-eval", "docker://busybox", "printenv", "A"], { env: { APPTAINERENV_A: secret("injected") } }),
      // the host's environment passing through
      await traced(["exec", "docker://busybox", "printenv", "H"], { env: { H: secret("host") } }),
      // without --no-eval, the evaluation helper
      await traced(["run", "docker://busybox", "printenv", "E"], { env: { APPTAINERENV_E: secret("evaluated") } }),
    ];
    // An instance, and an exec into it. strace -f follows the instance's own processes, so the
    // traced start ends only with the instance: go on once the shim has written that it started
    // (its instance folder's `started`), and collect the start after the stop.
    const starting = spawn(tracedArgv(["instance", "start", "--cleanenv", "--no-eval", "docker://busybox", name]), {
      env: { APPTAINERENV_S: secret("start") },
    });
    await waitFor(() => fs.existsSync(path.join(mcHome, "instances", name, "started")), CALL_GUARD_MS);
    const after = [
      await traced(["exec", "--cleanenv", "--no-eval", `instance://${name}`, "printenv", "X"], { env: { APPTAINERENV_X: secret("instance") } }),
      // started with SIGINT ignored: the shim starts itself again
      await traced(["exec", "--cleanenv", "docker://busybox", "printenv", "R"], { env: { APPTAINERENV_R: secret("reexec") }, ignoreInt: true }),
    ];
    await app(["instance", "stop", "-t", "1", name]);
    const results = [...before, await finish(starting), ...after];
    expect(results.map((r) => r.stdout)).toEqual([
      `${secret("injected")}\n`,
      `${secret("host")}\n`,
      `${secret("evaluated")}\n`,
      "",
      `${secret("instance")}\n`,
      `${secret("reexec")}\n`,
    ]);
    const logs = fs.readdirSync(work).filter((f) => f.startsWith("argv.trace.")).map((f) => fs.readFileSync(path.join(work, f), "utf8")).join("\n");
    // The trace saw the shim's stages: the inner stage of each call and the re-execution.
    expect(logs.split("\n").filter((l) => l.includes("__minicondor_inner")).length).toBeGreaterThanOrEqual(5);
    expect(logs).toContain("--default-signal=HUP,INT,QUIT,TERM");
    for (const what of ["injected", "host", "evaluated", "start", "instance", "reexec"]) {
      expect([what, logs.split("\n").filter((l) => l.includes(secret(what)))]).toEqual([what, []]);
    }
  });
});
