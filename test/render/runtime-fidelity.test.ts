// Every argv the wrapper builds for the runtime, run through the shim's per-release flag check
// (docs/container-runtimes.md#how-the-tests-hold-the-wrapper-to-it). The flags come from the
// wrapper's own build_flags (src/render/wrapper-lib.bash) run in bash, not re-derived here.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderWrapper } from "../../src/render/wrapper.ts";
import type { JobPlan } from "../../src/core/types.ts";
import {
  commandFlags,
  compareVersions,
  NO_EVAL_FROM,
  RUNTIME_RELEASES,
  type RuntimeCommand,
  type RuntimeFlavour,
  singularityOptionCommands,
  singularityOptionProblem,
} from "../../src/core/runtime-flags.ts";
import { basePlan, container, minimalPlan, richPlan, withEnvFiles } from "./plans.ts";
import { BASH, cleanup, MINICONDOR, tempDir } from "./harness.ts";

afterAll(cleanup);

/** Every flag name any release registers for a command, for the options a site may allow. */
function everyFlag(command: RuntimeCommand): string[] {
  const names = new Set<string>();
  for (const flavour of ["apptainer", "singularity"] as const) {
    for (const r of RUNTIME_RELEASES[flavour]) for (const f of commandFlags(flavour, r, command)) names.add(`--${f.name}`);
  }
  return [...names];
}

/** The singularity options config load accepts without a warning: every supported release takes them. */
const ALLOWED = [...new Set([...everyFlag("instance start"), ...everyFlag("exec")])]
  .filter((f) => f !== "--help" && singularityOptionProblem(f) === undefined)
  .sort();
const withValue = (f: string) => {
  const probe = commandFlags("apptainer", "1.5.3", singularityOptionCommands(f)[0]!).find((x) => `--${x.name}` === f);
  if (!probe || probe.type === "bool") return f;
  return `${f}=${probe.type === "stringToString" ? "A=b" : probe.type === "int" ? "1" : "/x"}`;
};
const optionsPlan: JobPlan = withEnvFiles(basePlan({
  containers: [container("opts", {
    runtimeOptions: ALLOWED.filter((f) => singularityOptionCommands(f).includes("instance start")).map(withValue),
    execOptions: ALLOWED.filter((f) => singularityOptionCommands(f).includes("exec")).map(withValue),
    gpus: 2,
    amdGpus: 1,
    workingDir: "/work dir",
  })],
}));

function withoutOptions(plan: JobPlan): JobPlan {
  const strip = (c: JobPlan["containers"][number]) => ({ ...c, runtimeOptions: [], execOptions: [] });
  return { ...plan, initContainers: plan.initContainers.map(strip), containers: plan.containers.map(strip) };
}

const PLANS: [string, JobPlan][] = [["minimal", minimalPlan], ["rich", richPlan], ["every allowed singularity option", optionsPlan]];

/** START_FLAGS + C_RUNTIME_OPTIONS and EXEC_FLAGS per container, from the wrapper's build_flags. */
function buildFlags(plan: JobPlan, noEval: boolean, noHome: boolean): { start: string[]; exec: string[] }[] {
  const dir = tempDir("fidelity-");
  const script = renderWrapper(plan).replace(/\nmain( "\$@")?\n*$/, "\n");
  const file = join(dir, "wrapper.sh");
  writeFileSync(file, script);
  const r = spawnSync(BASH, [
    "-c",
    `
    source "$1" || exit 9
    RT_NOEVAL=$2 RUNTIME_NO_HOME=$3
    for fn in \${INIT_CONTAINERS[@]+"\${INIT_CONTAINERS[@]}"} \${CONTAINERS[@]+"\${CONTAINERS[@]}"}; do
      "$fn"
      [[ $C_IMAGE_KIND == host ]] && continue
      build_flags
      printf '%s\\0' start "\${START_FLAGS[@]}" --bind /src:/tmp --bind /src:/data:ro \${C_RUNTIME_OPTIONS[@]+"\${C_RUNTIME_OPTIONS[@]}"} end
      printf '%s\\0' exec "\${EXEC_FLAGS[@]}" end
    done`,
    "fidelity",
    file,
    noEval ? "1" : "0",
    noHome ? "1" : "0",
  ], { encoding: "utf8" });
  expect(r.status).toBe(0);
  const words = r.stdout.split("\0");
  const out: { start: string[]; exec: string[] }[] = [];
  for (let i = 0; i < words.length - 1;) {
    const s = words.indexOf("end", i);
    const e = words.indexOf("end", s + 1);
    out.push({ start: words.slice(i + 1, s), exec: words.slice(s + 2, e) });
    i = e + 1;
  }
  return out;
}

/**
 * buildFlags once per plan and setting: they do not depend on the release (the wrapper reads the
 * runtime's version only when it runs), so every release is held to the same argvs.
 */
const built = new Map<JobPlan, Map<string, { start: string[]; exec: string[] }[]>>();
function builtFlags(plan: JobPlan, noEval: boolean, noHome: boolean): { start: string[]; exec: string[] }[] {
  const forPlan = built.get(plan) ?? new Map<string, { start: string[]; exec: string[] }[]>();
  built.set(plan, forPlan);
  const key = `${noEval} ${noHome}`;
  let flags = forPlan.get(key);
  if (!flags) forPlan.set(key, flags = buildFlags(plan, noEval, noHome));
  return flags;
}

/** The first release of each stretch with the same flags for the wrapper's commands. */
function representatives(flavour: RuntimeFlavour): string[] {
  let last = "";
  return RUNTIME_RELEASES[flavour].filter((r) => {
    const key = (["instance start", "exec", "run"] as const).map((c) => commandFlags(flavour, r, c).map((f) => f.name).join(",")).join("|");
    if (key === last) return false;
    last = key;
    return true;
  });
}

// One shim process per release, a few seconds on a busy machine.
setDefaultTimeout(120_000);

const SHIMS = join(MINICONDOR, "shims");

/**
 * Runs each argv through the shim of that release, in one process: the shim's batch mode
 * (shims/README.md#batch-mode) runs every argv through the same code as a call of its own. A flag
 * it refuses exits 1; an argv it accepts gets as far as the missing image or instance (255).
 */
function shim(flavour: RuntimeFlavour, version: string, argvs: string[][]): { code: number; stderr: string }[] {
  const env = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? "/",
    MINICONDOR_HOME: tempDir("fidelity-home-"),
    MINICONDOR_APPTAINER_VERSION: version,
    MINICONDOR_SINGULARITY_VERSION: version,
  };
  const input = argvs.map((argv) => [String(argv.length), ...argv].map((w) => `${w}\0`).join("")).join("");
  const r = spawnSync(join(SHIMS, flavour), ["__minicondor_batch"], { input, encoding: "utf8", env, maxBuffer: 64 << 20 });
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: "" });
  const fields = r.stdout.split("\0");
  expect(fields.length).toBe(2 * argvs.length + 1);
  return argvs.map((_, i) => ({ code: Number(fields[2 * i]), stderr: fields[2 * i + 1]! }));
}

/** Old releases keep the plan without a site's options. */
const heldOld = new Map(PLANS.map(([, plan]) => [plan, withoutOptions(plan)]));

describe("the runtime accepts every argv the wrapper builds", () => {
  for (const flavour of ["apptainer", "singularity"] as const) {
    for (const version of representatives(flavour)) {
      const supported = compareVersions(version, NO_EVAL_FROM[flavour]) >= 0;
      test(`${flavour} ${version}${supported ? "" : " (OldRuntime)"}`, () => {
        const cases: { label: string; noEval: boolean; noHome: boolean; argv: string[] }[] = [];
        for (const [label, plan] of PLANS) {
          if (!supported && plan === optionsPlan) continue;
          // An old release is held to the wrapper's own flags: a site's singularity options are checked for supported releases only.
          const held = supported ? plan : heldOld.get(plan)!;
          for (const noEval of supported ? [true, false] : [false]) {
            for (const noHome of [true, false]) {
              for (const { start, exec } of builtFlags(held, noEval, noHome)) {
                const argvs = [
                  ["instance", "start", ...start, "/nonexistent/image.sif", "il-x"],
                  ["exec", ...exec, "instance://il-none", "true"],
                  ["run", ...exec, "instance://il-none"],
                ];
                // The check of a command the runtime could not start adds --env-file to the same exec or
                // run (docs/container-runtimes.md#a-command-that-cannot-start).
                if (supported) {
                  argvs.push(
                    ...argvs.slice(1).map(([mode, ...rest]) => [mode!, ...rest.slice(0, exec.length), "--env-file", "/x.env", ...rest.slice(exec.length)]),
                  );
                }
                for (const argv of argvs) cases.push({ label, noEval, noHome, argv });
              }
            }
          }
        }
        // The same argv gives the same answer: each distinct one runs once, every case is checked against it.
        const distinct = new Map(cases.map((c) => [JSON.stringify(c.argv), c.argv]));
        const index = new Map([...distinct.keys()].map((k, i) => [k, i]));
        const answers = shim(flavour, version, [...distinct.values()]);
        for (const { label, noEval, noHome, argv } of cases) {
          const r = answers[index.get(JSON.stringify(argv))!]!;
          expect({ label, noEval, noHome, argv, code: r.code, fatal: /^FATAL:/m.test(r.stderr) || r.stderr.split("\n")[0] }).toEqual({
            label,
            noEval,
            noHome,
            argv,
            code: 255,
            fatal: true,
          });
        }
      });
    }
  }
  test("instance stop as the wrapper runs it", () => {
    for (const flavour of ["apptainer", "singularity"] as const) {
      for (const version of representatives(flavour)) {
        const argvs = [["-t", "2"], ["-F"]].map((flags) => ["instance", "stop", ...flags, "il-none"]);
        for (const [i, r] of shim(flavour, version, argvs).entries()) expect({ argv: argvs[i], code: r.code }).not.toEqual({ argv: argvs[i], code: 1 });
      }
    }
  });
});
