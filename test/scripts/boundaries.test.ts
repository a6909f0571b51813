// The boundaries check (scripts/check-boundaries.ts) on small trees: one that uses each API where
// it is allowed passes, and each mistake is reported under its rule. The same for the shape
// rules: the two modes apart, core/ at the bottom and the job event log through its face
// (docs/architecture.md#import-direction), no
// function over MAX_FUNCTION_LINES. CI runs the check on the real src/ (npm run check:boundaries).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { checkBoundaries, MAX_FUNCTION_LINES, type Problem, type Rule } from "../../scripts/check-boundaries.ts";

/** A function of `lines` lines, first to last: one statement per line between the braces. */
const functionOf = (name: string, lines: number) => `export function ${name}(): number {\n  let n = 0;\n${"  n++;\n".repeat(lines - 4)}  return n;\n}\n`;

/** A closure of `lines` lines whose own functions are all short: nested functions count toward its length. */
const closureOf = (name: string, lines: number) =>
  `export function ${name}() {\n${Array.from({ length: lines - 3 }, (_, i) => `  const f${i} = () => ${i};\n`).join("")}  return {};\n}\n`;

/** src/service/main.ts of the clean tree: the sidecar's mode. */
const CLEAN_START = `
    import type { Runtime } from "../runtime/types.ts";
    import { createCondor } from "../condor/tools.ts";
    import { exitCode } from "../mode-setup.ts";
    export class Started extends Error {}
    export function start(runtime: Runtime, name: keyof Runtime) {
      const condor = createCondor(runtime, "/usr/bin");
      return { condor, uid: runtime.uid(), env: runtime.env(), name, cwd: process.cwd(), v: globalThis.structuredClone, code: exitCode(runtime) };
    }`;

/** A small tree shaped like the sidecar that uses every API only where the rules allow it. */
const CLEAN: Record<string, string> = {
  "package.json": JSON.stringify({ dependencies: { zod: "4", hono: "4" } }),
  "src/runtime/types.ts": `
    export interface SpawnOptions { argv: readonly string[]; env?: Record<string, string> }
    export interface Runtime {
      spawn(o: SpawnOptions): Promise<{ code: number | null }>;
      spawnStream(o: SpawnOptions): { exited: Promise<number | null> };
      env(): Record<string, string>;
      uid(): number;
    }`,
  "src/runtime/bun.ts": `
    import { Database } from "bun:sqlite";
    import { spawnSync } from "node:child_process";
    import type { Runtime } from "./types.ts";
    export const bunRuntime: Runtime = {
      spawn: async (o) => ({ code: await Bun.spawn([...o.argv], { env: o.env ?? {}, stdout: "pipe" }).exited }),
      spawnStream: (o) => ({ exited: Bun.spawn([...o.argv], { shell: false } as never).exited }),
      env: () => ({ ...(process.env as Record<string, string>) }),
      uid: () => spawnSync("id", ["-u"]).status ?? Number(new Database(":memory:").filename.length),
    };`,
  "src/runtime/deno.ts": `
    export const kill = (s: Deno.Signal) => new Deno.Command("condor_q", { args: ["-json"] }).spawn().kill(s);`,
  "src/condor/tools.ts": `
    import type { Runtime } from "../runtime/types.ts";
    export function createCondor(runtime: Runtime, bin: string) {
      const { spawn } = runtime;
      return {
        q: () => runtime.spawn({ argv: [bin + "/condor_q", "-json"] }),
        tail: () => runtime.spawnStream({ argv: [bin + "/condor_tail", "-f"] }),
        direct: () => spawn.call(runtime, { argv: ["condor_version"] }),
      };
    }`,
  "src/eventlog/follow.ts": `export const POLL_MS = 250;`,
  "src/eventlog/index.ts": `export { POLL_MS } from "./follow.ts";`,
  "src/service/follow.ts": `import { POLL_MS } from "../eventlog/index.ts"; export const every = POLL_MS;`,
  "src/core/plan.ts": `
    import { z } from "zod";
    import { readFileSync } from "node:fs";
    import { join } from "path";
    import { quote } from "./quote.ts";
    const Pod = z.object({ name: z.string() });
    export function plan(raw: unknown, env: Record<string, string>, key: string) {
      const pod = Pod.parse(raw);
      const words = ["sh", "alone", "is", "a word"];
      const flags = ["-c", "alone", "is", "a flag"];
      const opts = { shell: false };
      const parsed = JSON.parse(readFileSync(join("a", "b"), "utf8"));
      return [pod[key as never], env[key], words[0], flags[0], opts, parsed[key], Object.keys(env), process.env[key], quote(key)];
    }`,
  "src/core/quote.ts": `export const quote = (s: string) => JSON.stringify(s);`,
  "src/core/wrapper.js": `export const script = "#!/bin/bash\\nexec sh -c \\"$CMD\\"";`,
  "src/render/lib.bash": `greet() { echo "hi $1"; }\n`,
  "src/render/wrapper.ts": `import lib from "./lib.bash" with { type: "text" }; export const script = (x: string) => lib + x;`,
  "src/service/main.ts": CLEAN_START,
  // Both modes use the shared start-up steps; only the entry imports both modes.
  "src/mode-setup.ts": `import type { Runtime } from "./runtime/types.ts"; export const exitCode = (r: Runtime) => (r.uid() === 0 ? 2 : 1);`,
  "src/operator/main.ts": `import { exitCode } from "../mode-setup.ts"; import { helper } from "./helper.ts"; export const operatorMode = [exitCode, helper];`,
  "src/operator/helper.ts": `export const helper = 1;`,
  "src/main.ts": `import { operatorMode } from "./operator/main.ts"; import { start } from "./service/main.ts"; export const modes = { operatorMode, start };`,
  "src/core/longest.ts": functionOf("longest", MAX_FUNCTION_LINES),
  "src/main.bun.ts":
    `import { bunRuntime } from "./runtime/bun.ts"; import { start } from "./service/main.ts"; start(bunRuntime, "env"); process.stdout.write(String(Bun.version));`,
  "src/main.deno.ts":
    `import { start } from "./service/main.ts"; declare const r: never; start(r, "env"); Deno.stdout.writeSync(new TextEncoder().encode(Deno.args.join(" ")));`,
};

/** Each bypass, in its own file, and the rules it must be reported under. */
const BYPASSES: [string, string, Rule[]][] = [
  ["src/core/bun-shell.ts", `import { $ } from "bun"; export const ls = () => $\`ls\`;`, ["module", "shell"]],
  ["src/core/bun-dollar.ts", "export const ls = () => Bun.$`ls`;", ["runtime-global", "shell"]],
  ["src/core/bun-spawn-import.ts", `import { spawn } from "bun"; export const go = () => spawn(["ls"]);`, ["module", "spawn-call"]],
  ["src/core/bun-element.ts", `export const go = () => Bun["spawn"](["ls"]);`, ["runtime-global", "spawn-call"]],
  ["src/core/bun-computed.ts", `const k = ["sp", "awn"].join(""); export const go = () => (Bun as any)[k](["ls"]);`, ["runtime-global"]],
  ["src/core/bun-spawnsync.ts", `export const go = () => Bun.spawnSync(["ls"]);`, ["runtime-global"]],
  ["src/core/bun-alias.ts", `const B = Bun; export const go = () => B.file("x");`, ["runtime-global"]],
  ["src/core/deno-command.ts", `export const go = () => new Deno.Command("ls").output();`, ["runtime-global"]],
  ["src/core/deno-run.ts", `export const go = () => Deno.run({ cmd: ["ls"] });`, ["runtime-global"]],
  ["src/core/deno-element.ts", `export const go = (k: string) => (Deno as any)[k];`, ["runtime-global"]],
  ["src/core/node-process.ts", `import { binding } from "node:process"; export const go = () => binding;`, ["module"]],
  [
    "src/core/create-require.ts",
    `import { createRequire } from "node:module"; const req = createRequire(import.meta.url); export const cp = req("node:child" + "_process");`,
    ["module"],
  ],
  [
    "src/core/destructured-spawn.ts",
    `import type { Runtime } from "../runtime/types.ts"; export const go = (rt: Runtime) => { const { spawn } = rt; return spawn({ argv: ["ls"] }); };`,
    ["spawn-call"],
  ],
  [
    "src/core/renamed-spawn.ts",
    `import type { Runtime } from "../runtime/types.ts"; export const go = (rt: Runtime) => { const { spawnStream: s } = rt; return s({ argv: ["ls"] }); };`,
    ["spawn-call"],
  ],
  ["src/service.ts", `import type { Runtime } from "./runtime/types.ts"; export const go = (rt: Runtime) => rt.spawn({ argv: ["condor_q"] });`, ["spawn-call"]],
  ["src/core/spawn-string.ts", `import type { Runtime } from "../runtime/types.ts"; export const go = (rt: Runtime) => rt["spawn"]({ argv: ["ls"] });`, [
    "spawn-call",
  ]],
  ["src/core/child.js", `const cp = require("child_process"); module.exports = () => cp.execFileSync("ls");`, ["module"]],
  ["src/core/child-esm.mjs", `import cp from "node:child_process"; export default () => cp.execFileSync("ls");`, ["module"]],
  ["src/core/child-cjs.cts", `import cp = require("child_process"); export = () => cp.execFileSync("ls");`, ["module"]],
  ["src/core/workers.ts", `import { Worker } from "node:worker_threads"; export const w = () => new Worker("x.js");`, ["module"]],
  ["src/core/cluster.mts", `import cluster from "node:cluster"; export const c = cluster;`, ["module"]],
  ["src/core/ffi.ts", `import { dlopen } from "bun:ffi"; export const f = dlopen;`, ["module"]],
  ["src/core/vm.ts", `import { runInNewContext } from "node:vm"; export const f = () => runInNewContext("1");`, ["module"]],
  ["src/core/npm.ts", `import execa from "npm:execa"; export const f = execa;`, ["module"]],
  ["src/core/unlisted.ts", `import shelljs from "shelljs"; export const f = shelljs;`, ["module"]],
  ["src/core/escape.ts", `import { run } from "../../scripts/lib/kit.ts"; export const f = run;`, ["module"]],
  ["src/runtime/shell-option.ts", `import { spawnSync } from "node:child_process"; export const f = () => spawnSync("ls", { shell: true });`, ["shell"]],
  ["src/runtime/shell-string.ts", `import { spawnSync } from "node:child_process"; export const f = () => spawnSync("ls", { shell: "/bin/bash" });`, ["shell"]],
  ["src/runtime/sh-c.ts", `export const f = (cmd: string) => Bun.spawn(["sh", "-c", cmd]);`, ["shell"]],
  ["src/runtime/bash-c.ts", `export const f = (cmd: string) => Bun.spawn(["/usr/bin/env", "bash", "-e", "-lc", cmd]);`, ["shell"]],
  ["src/runtime/deno-sh.ts", `export const f = (cmd: string) => new Deno.Command("/bin/sh", { args: ["-c", cmd] });`, ["shell"]],
  ["src/runtime/exec.ts", `import { exec } from "node:child_process"; export const f = (cmd: string) => exec(cmd);`, ["shell"]],
  ["src/runtime/exec-ns.ts", `import * as cp from "node:child_process"; export const f = (cmd: string) => cp.execSync(cmd);`, ["shell"]],
  ["src/runtime/bun-dollar.ts", "export const f = () => Bun.$`ls`;", ["shell"]],
  ["src/condor/shell.ts", `export const argv = ["bash", "-c", "condor_q"];`, ["shell"]],
  ["src/core/data.json", `{}`, ["files"]],
  ["src/render/run.sh", `#!/bin/sh\necho hi\n`, ["files"]],
  // Bash is data imported as text by src/render/ only.
  ["src/core/lib.bash", `echo hi\n`, ["files"]],
  ["src/core/uses-bash.ts", `import lib from "../render/lib.bash" with { type: "text" }; export const f = lib;`, ["text"]],
  ["src/runtime/uses-bash.ts", `import lib from "../render/lib.bash" with { type: "text" }; export const f = lib;`, ["text"]],
  ["src/render/bash-untyped.ts", `import lib from "./lib.bash"; export const f = lib;`, ["text"]],
  ["src/render/bash-json.ts", `import lib from "./lib.bash" with { type: "json" }; export const f = lib;`, ["text"]],
  ["src/render/bash-dynamic.ts", `export const f = () => import("./lib.bash", { with: { type: "text" } });`, ["text"]],
  ["src/render/text-source.ts", `import src from "./wrapper.ts" with { type: "text" }; export const f = src;`, ["text"]],
  ["src/render/bash-outside.ts", `import lib from "../../scripts/x.bash" with { type: "text" }; export const f = lib;`, ["text"]],
  ["src/render/bash-reexport.ts", `export { default } from "./lib.bash" with { type: "text" };`, ["text"]],
  // The two modes apart: directly, back, and through a module of neither.
  ["src/operator/uses-start.ts", `import { start } from "../service/main.ts"; export const f = start;`, ["modes"]],
  ["src/service/main.ts", `${CLEAN_START}\n    import { operatorMode } from "../operator/main.ts"; export const g = operatorMode;`, ["modes"]],
  ["src/operator/through-shared.ts", `import { h } from "../shared/reaches-start.ts"; export const f = h;`, ["modes"]],
  // core/ is the ground floor: it imports nothing of src/ outside core/.
  ["src/core/reaches-up.ts", `import type { Runtime } from "../runtime/types.ts"; export type R = Runtime;`, ["layers"]],
  // The job event log is used through its face, src/eventlog/index.ts.
  ["src/service/behind-face.ts", `import { POLL_MS } from "../eventlog/follow.ts"; export const f = POLL_MS;`, ["layers"]],
  // Function lengths, a closure's own functions included.
  ["src/core/too-long.ts", functionOf("tooLong", MAX_FUNCTION_LINES + 1), ["length"]],
  ["src/core/long-closure.ts", closureOf("createEverything", MAX_FUNCTION_LINES + 1), ["length"]],
];

/** Files the bypasses need that are not bypasses themselves: never reported. */
const BYPASS_HELPERS: Record<string, string> = {
  "src/shared/reaches-start.ts": `export { start as h } from "../service/main.ts";`,
};

let dir = "";
const write = (files: Record<string, string>) => {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
};
const summary = (ps: Problem[]) => ps.map((p) => `${p.file}:${p.line} [${p.rule}] ${p.message}`);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "boundaries-"));
  write(CLEAN);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("check-boundaries", () => {
  test("a clean tree that uses each API where it is allowed passes", () => {
    expect(summary(checkBoundaries(dir))).toEqual([]);
  });

  test("every bypass is reported under its rule, and nothing else is", () => {
    write({ ...BYPASS_HELPERS, ...Object.fromEntries(BYPASSES.map(([path, text]) => [path, text])) });
    symlinkSync(join(dir, "src/runtime/bun.ts"), join(dir, "src/core/linked.ts"));
    const problems = checkBoundaries(dir);
    const missing: string[] = [];
    for (const [path, , rules] of BYPASSES) {
      for (const rule of rules) if (!problems.some((p) => p.file === path && p.rule === rule)) missing.push(`${path} [${rule}]`);
    }
    if (!problems.some((p) => p.file === "src/core/linked.ts" && p.rule === "files")) missing.push("src/core/linked.ts [files]");
    expect(missing).toEqual([]);
    const expectedFiles = new Set([...BYPASSES.map(([path]) => path), "src/core/linked.ts"]);
    expect(summary(problems.filter((p) => !expectedFiles.has(p.file)))).toEqual([]);
    for (const p of problems) expect(p.line).toBeGreaterThanOrEqual(p.rule === "files" ? 0 : 1);
  });
});
