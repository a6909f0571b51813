import { describe, expect, test } from "bun:test";
import { bindOrder, instancePrefix, renderWrapper, WRAPPER_LIB } from "../../src/render/wrapper.ts";
import { BASH_OWN_VARIABLES, type MountPlan } from "../../src/core/types.ts";
import { scriptCanReceive } from "../../src/core/job-script.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { basePlan, container, jobScriptPlan, minimalPlan, richPlan } from "./plans.ts";
import { expectGolden, perPodPart } from "./golden.ts";

function bashSyntaxOk(script: string): void {
  const r = Bun.spawnSync(["/bin/bash", "-n"], { stdin: new TextEncoder().encode(script) });
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
}

// The golden files hold what the plan decides; the library (wrapper-lib.bash) is one marker line.
describe("renderWrapper golden files", () => {
  test("minimal plan", () => expectGolden("minimal.sh", perPodPart(renderWrapper(minimalPlan))));
  test("rich plan", () => expectGolden("rich.sh", perPodPart(renderWrapper(richPlan))));
  test("a plan with interLink's job script", () => expectGolden("jobscript.sh", perPodPart(renderWrapper(jobScriptPlan))));
});

// docs/pod-to-job.md#the-job-script: the wrapper names the script's file, never its text.
describe("renderWrapper with a job script", () => {
  const script = jobScriptPlan.files.find((f) => f.path === "job-script.sh")!;

  test("the script's text is nowhere in the wrapper; its file is named once, as a plan value", () => {
    const s = renderWrapper(jobScriptPlan);
    bashSyntaxOk(s);
    expect(s).not.toContain(new TextDecoder().decode(script.content).trim());
    expect(s).not.toContain("it's the job script");
    const planPart = s.slice(0, s.indexOf(WRAPPER_LIB));
    const r = Bun.spawnSync([
      "/bin/bash",
      "-c",
      `${planPart}
printf '%s' "$JOB_SCRIPT"`,
    ], { env: {} });
    expect(r.stdout.toString()).toBe("job-script.sh");
  });

  test("without one, JOB_SCRIPT is empty", () => {
    const planPart = renderWrapper(minimalPlan).slice(0, renderWrapper(minimalPlan).indexOf(WRAPPER_LIB));
    const r = Bun.spawnSync([
      "/bin/bash",
      "-uc",
      `${planPart}
printf '[%s]' "$JOB_SCRIPT"`,
    ], { env: {} });
    expect(r.stdout.toString()).toBe("[]");
  });

  test("refuses a script that is not a shipped file of the sandbox's top folder, not runnable, or has no container to report it", () => {
    const bad: [string, Partial<typeof jobScriptPlan>][] = [
      ["not a file of the plan", { jobScript: "other.sh" }],
      ["in a folder", { jobScript: "volumes/x.sh", files: [{ ...script, path: "volumes/x.sh" }], transferInput: ["volumes"] }],
      ["not shipped", { transferInput: [] }],
      ["not runnable", { files: [{ ...script, mode: 0o600 }] }],
      ["no container", { containers: [] }],
    ];
    const refused = bad.filter(([, over]) => {
      try {
        renderWrapper({ ...jobScriptPlan, ...over });
        return false;
      } catch (e) {
        return e instanceof SidecarError;
      }
    });
    expect(refused.map(([what]) => what)).toEqual(bad.map(([what]) => what));
    bashSyntaxOk(renderWrapper(jobScriptPlan));
  });
});

describe("renderWrapper", () => {
  test("is valid bash", () => {
    bashSyntaxOk(renderWrapper(minimalPlan));
    bashSyntaxOk(renderWrapper(richPlan));
    bashSyntaxOk(renderWrapper({ ...richPlan, dummy: true }));
  });

  test("starts with a shebang and ends by calling main", () => {
    const s = renderWrapper(minimalPlan);
    expect(s.startsWith("#!/bin/bash\n")).toBe(true);
    expect(s.endsWith('\nmain "$@"\n')).toBe(true);
  });

  test("the library is the .bash file byte for byte, once, between the plan and main", async () => {
    const file = await Bun.file(new URL("../../src/render/wrapper-lib.bash", import.meta.url)).text();
    expect(WRAPPER_LIB).toBe(file);
    expect(WRAPPER_LIB).toContain('"${t%.*}"');
    expect(WRAPPER_LIB).not.toContain("\\${");
    const s = renderWrapper(minimalPlan);
    expect(s.indexOf(WRAPPER_LIB)).toBe(s.lastIndexOf(WRAPPER_LIB));
    expect(s.endsWith(`${WRAPPER_LIB}\nmain "$@"\n`)).toBe(true);
  });

  test("user data is quoted: the plan section declares no command substitution", () => {
    const evil = "$(touch /tmp/pwned)`id`'\"; rm -rf / #\n";
    const plan = basePlan({
      containers: [
        container("main", {
          command: [evil],
          args: [evil],
          workingDir: evil.replaceAll("\n", ""),
          image: { kind: "container", uri: evil },
          runtimeOptions: [evil],
        }),
      ],
      preExec: [evil],
      commandPrefix: evil,
      backgroundCommands: [evil],
    });
    const s = renderWrapper(plan);
    bashSyntaxOk(s);
    // Source the plan section alone and check every value came through byte for byte.
    const planPart = s.slice(0, s.indexOf(WRAPPER_LIB));
    const probe =
      `${planPart}\nctr_0\nprintf '%s\\0' "$COMMAND_PREFIX" "\${PRE_EXEC[@]}" "\${BACKGROUND_COMMANDS[@]}" "\${C_COMMAND[@]}" "\${C_ARGS[@]}" "$C_IMAGE" "\${C_RUNTIME_OPTIONS[@]}"`;
    const r = Bun.spawnSync(["/bin/bash", "-c", probe], { env: {} });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString().split("\0").slice(0, -1)).toEqual([evil, evil, evil, evil, evil, evil, evil]);
  });

  test("binds parent first: by depth of the normalised mount path, pod order among equals", () => {
    const m = (target: string): MountPlan => ({ source: { kind: "sandbox", path: `emptydir/${target.length}` }, target, readOnly: false });
    const table: [string[], string[]][] = [
      [["/data/sub", "/data"], ["/data", "/data/sub"]],
      [["/a/b/c", "/x", "/a/b", "/a//"], ["/x", "/a", "/a/b", "/a/b/c"]],
      [["/b", "/a", "/c/d", "/c"], ["/b", "/a", "/c", "/c/d"]],
      [["/data/./sub/", "/data"], ["/data", "/data/sub"]],
    ];
    for (const [given, bound] of table) expect(bindOrder(given.map(m)).map((x) => x.target)).toEqual(bound);
  });

  test("instance names: il- and the start of the uid", () => {
    expect(instancePrefix("7c9e6679-7425-40de-944b-e07fc1f90ae7")).toBe("il-7c9e66797425");
    expect(instancePrefix("---")).toBe("il-pod");
  });

  test("refuses mount paths apptainer cannot bind", () => {
    for (const target of ["/a:b", "/a,b", "relative", "/x\ny"]) {
      const plan = basePlan({
        containers: [container("main", { mounts: [{ source: { kind: "sandbox", path: "volumes/x" }, target, readOnly: false }] })],
      });
      expect(() => renderWrapper(plan)).toThrow(SidecarError);
    }
  });

  test("refuses files outside the sandbox and bad container names", () => {
    const file = { content: new Uint8Array(), mode: 0o600, secret: false };
    expect(() => renderWrapper(basePlan({ files: [{ ...file, path: "../x" }] }))).toThrow(SidecarError);
    expect(() => renderWrapper(basePlan({ files: [{ ...file, path: "/etc/x" }] }))).toThrow(SidecarError);
    expect(() => renderWrapper(basePlan({ containers: [container("Bad_Name")] }))).toThrow(SidecarError);
    expect(() => renderWrapper(basePlan({ containers: [container("a", { image: { kind: "container", uri: "--fakeroot" } })] }))).toThrow(SidecarError);
    expect(() => renderWrapper(basePlan({ containers: [container("a"), container("a", { index: 1 })] }))).toThrow(SidecarError);
  });

  test("env values never appear in the script", () => {
    const plan = basePlan({ containers: [container("main", { env: [["TOKEN", "very-secret-value"]] })] });
    expect(renderWrapper(plan)).not.toContain("very-secret-value");
  });
});

/** One function of the library, by name, as text. */
function libFunction(name: string): string {
  const at = WRAPPER_LIB.indexOf(`\n${name}() {`) + 1;
  expect(at).toBeGreaterThan(0);
  return WRAPPER_LIB.slice(at, WRAPPER_LIB.indexOf("\n}\n", at) + 3);
}

describe("the plan and the library agree", () => {
  // The plan warns about the names the job script cannot get (core/job-script.ts); the wrapper
  // leaves out the same ones rather than put them on a command line.
  test("script_env (wrapper-lib.bash) passes the job script exactly the names scriptCanReceive (core/job-script.ts) accepts", () => {
    const names = ["TOKEN", "PATH", "_X", "odd.name", "a-b", "1A", "SECONDS", "UID", "BASH_ENV", "HOSTNAME", "PWD"];
    const lib = ["script_env", "bash_own_variable"].map(libFunction).join("\n");
    const r = Bun.spawnSync([
      "/bin/bash",
      "-c",
      `${lib}\nwlog() { :; }\nENV_PAIRS=(); for n in "$@"; do ENV_PAIRS+=("$n=v"); done\nscript_env\nprintf '%s\\n' "\${HOST_ENV[@]}"`,
      "t",
      ...names,
    ], {
      env: { SANDBOX: "/sandbox", FROM_THE_JOB: "1" },
    });
    const got = r.stdout.toString().split("\n").filter((l) => l.endsWith("=v")).map((l) => l.slice(0, -2));
    expect(got).toEqual(names.filter((n) => scriptCanReceive(n)));
    // The job's own environment comes first (without the wrapper's shell bookkeeping), then HOME
    // and TMPDIR, then the pod's.
    expect(r.stdout.toString()).toContain("FROM_THE_JOB=1\n");
    expect(r.stdout.toString()).not.toContain("SHLVL=");
    expect(r.stdout.toString()).toContain("TMPDIR=/sandbox/tmp\n");
  });

  // A host container gets the variables bash keeps for itself on env's command line; the plan
  // refuses such names with a secret's value by the same list.
  test("bash_own_variable (wrapper-lib.bash) and BASH_OWN_VARIABLES (core/types.ts) name the same variables", () => {
    const names = [
      "UID",
      "EUID",
      "PPID",
      "BASHOPTS",
      "SHELLOPTS",
      "RANDOM",
      "SRANDOM",
      "SECONDS",
      "LINENO",
      "HISTCMD",
      "BASHPID",
      "EPOCHSECONDS",
      "EPOCHREALTIME",
      "FUNCNAME",
      "GROUPS",
      "DIRSTACK",
      "PIPESTATUS",
      "OPTIND",
      "SHLVL",
      "_",
      "BASH_ENV",
      "BASH_X1",
      "PATH",
      "HOME",
      "IFS",
      "PWD",
      "OLDPWD",
      "HOSTNAME",
      "TOKEN",
      "UIDX",
      "XUID",
      "BASH",
      "MY_SECONDS",
      "_X",
      "bash_env",
    ];
    const fn = WRAPPER_LIB.slice(WRAPPER_LIB.indexOf("bash_own_variable() {"), WRAPPER_LIB.indexOf("\n}\n", WRAPPER_LIB.indexOf("bash_own_variable() {")) + 3);
    const r = Bun.spawnSync(["/bin/bash", "-c", `${fn}\nfor n in "$@"; do bash_own_variable "$n" && echo "$n"; done`, "t", ...names]);
    expect(r.stdout.toString().split("\n").filter(Boolean)).toEqual(names.filter((n) => BASH_OWN_VARIABLES.test(n)));
    // …and they are the ones bash really cannot export with a value of ours.
    const probe = Bun.spawnSync([
      "/bin/bash",
      "-c",
      'for n in "$@"; do v=$(env -i /bin/bash -c \'export "$1=v4lue" 2>/dev/null; exec /usr/bin/env\' x "$n" | grep -ax "$n=v4lue"); [[ -z $v ]] && echo "$n"; done',
      "t",
      ...names,
    ]);
    expect(probe.stdout.toString().split("\n").filter(Boolean)).toEqual(names.filter((n) => BASH_OWN_VARIABLES.test(n) && !/^BASH_(ENV|X1)$/.test(n)));
  }, 60_000);
});
