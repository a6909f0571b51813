/**
 * Fails the build when code leaves its layer (docs/architecture.md#import-direction,
 * docs/architecture.md#4-no-shell-between-the-sidecar-and-htcondor). It parses every file under
 * src/ with the TypeScript compiler (syntax only) and checks, with R = src/runtime/ and
 * C = src/condor/:
 *
 * files       Every file under src/ is a source file this check reads (.ts .tsx .js .mjs .cjs .mts
 *             .cts), not a symlink; the one exception is the wrapper's `.bash` library in
 *             src/render/, data for the job that the sidecar never runs.
 * text        A `.bash` file is imported only by src/render/, from src/render/, with
 *             `with { type: "text" }`; nothing else is imported as text, and no JSON but the
 *             repository's package.json (the version).
 * module      Outside R, an import names a relative path inside src/, a package of package.json
 *             "dependencies", or a Node built-in of BUILTINS (with or without "node:"). So `bun`,
 *             `bun:*`, child_process, worker_threads, vm, npm: and the like stay in R: an allowlist
 *             does not silently admit the next process API. Type-only imports count too.
 * runtime-global
 *             Outside R, `Bun` and `Deno` appear only in types or as `Bun.<name>` / `Deno.<name>`
 *             with a name from BUN_MEMBERS / DENO_MEMBERS (no spawn, Command, run, $, …).
 * spawn-call  Outside C and R, the names of the runtime's spawn entry points (Runtime.spawn and
 *             Runtime.spawnStream) occur nowhere, as a name or as a string: only the condor
 *             adapter starts processes.
 * shell       Everywhere, R included: no `shell` option other than `shell: false`, no argv with a
 *             shell (sh, bash, …) followed by a -c flag, no Bun.$ or `$` from "bun", no exec or
 *             execSync from child_process (both run /bin/sh).
 * modes       The sidecar's mode (src/service/main.ts) and the operator (src/operator/) do not
 *             import each other, directly or through other modules of src/: what both need at
 *             start is in src/mode-setup.ts, and only src/main.ts knows both.
 * layers      Nothing in src/core/ imports a module of src/ outside src/core/: core is the ground
 *             floor that every other folder builds on. Outside src/eventlog/, a module of it is
 *             imported only through its face, src/eventlog/index.ts: the sidecar and the
 *             operator follow the job event log through one door.
 * length      No function is longer than MAX_FUNCTION_LINES lines, nested functions included: a
 *             closure that grows a module's worth of functions is split by use case around a
 *             shared context instead (docs/architecture.md#house-style).
 *
 * It checks for mistakes and shortcuts, not for deliberate evasion (a computed member name,
 * an alias of globalThis, reflection): review catches those.
 *
 * Usage: bun scripts/check-boundaries.ts [repo-root]   (exit 1 and one line per problem)
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

export type Rule = "files" | "text" | "module" | "runtime-global" | "spawn-call" | "shell" | "modes" | "layers" | "length";

export interface Problem {
  /** Path relative to the repository root, with "/" separators. */
  file: string;
  line: number;
  rule: Rule;
  message: string;
}

/** Rule `length`: the longest a function may be, in lines, nested functions included. */
export const MAX_FUNCTION_LINES = 150;

const SCRIPT_KINDS: Record<string, ts.ScriptKind> = {
  ".ts": ts.ScriptKind.TS,
  ".mts": ts.ScriptKind.TS,
  ".cts": ts.ScriptKind.TS,
  ".tsx": ts.ScriptKind.TSX,
  ".js": ts.ScriptKind.JS,
  ".mjs": ts.ScriptKind.JS,
  ".cjs": ts.ScriptKind.JS,
};

/** Node built-ins that cannot start a process, load native code or run code from a string. */
const BUILTINS = new Set(
  ("assert assert/strict buffer crypto dns dns/promises events fs fs/promises http https net os path path/posix perf_hooks querystring " +
    "readline stream stream/promises stream/web string_decoder timers timers/promises tls url util zlib sqlite").split(" "),
);
const BUN_MEMBERS = new Set("version revision env argv main stdin stdout stderr nanoseconds sleep file write inspect deepEquals".split(" "));
const DENO_MEMBERS = new Set(
  ("args env stdin stdout stderr version build pid cwd exit hostname memoryUsage errors inspect noColor addSignalListener " +
    "removeSignalListener readTextFile readFile writeTextFile writeFile stat lstat mkdir remove rename readDir open uid gid").split(" "),
);
const SPAWN_NAMES = new Set(["spawn", "spawnStream"]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"]);
const SHELL_COMMAND_FLAG = /^-[A-Za-z]*c[A-Za-z]*$/;
const CHILD_PROCESS = new Set(["child_process", "node:child_process"]);

const SIDECAR_MODE = "src/service/main.ts";
const OPERATOR_DIR = "src/operator/";
const EVENTLOG_DIR = "src/eventlog/";
const sideOf = (rel: string) =>
  rel === SIDECAR_MODE ? "the sidecar's mode (src/service/main.ts)" : rel.startsWith(OPERATOR_DIR) ? "the operator (src/operator/)" : undefined;

/** A relative import of one file of src/ by another. */
interface Edge {
  from: string;
  to: string;
  spec: string;
  line: number;
}

const toRel = (root: string, path: string) => relative(root, path).split(sep).join("/");
const isRelative = (spec: string) => spec.startsWith("./") || spec.startsWith("../");

/** The text of a string literal or a template without substitutions, else undefined. */
function literalText(node: ts.Node | undefined): string | undefined {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

/** The module a node loads, when it loads one by a literal name: import, export … from, import x = require(), require(), import(). */
function moduleReference(node: ts.Node): { at: ts.Node; spec: string } | undefined {
  let at: ts.Node | undefined;
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) at = node.moduleSpecifier;
  else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) at = node.moduleReference.expression;
  else if (
    ts.isCallExpression(node) &&
    (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === "require"))
  ) {
    at = node.arguments[0];
  } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) at = node.argument.literal;
  const spec = literalText(at);
  return at && spec !== undefined ? { at, spec } : undefined;
}

/** `with { type: "…" }` of an import or export declaration, when it has one. */
function importType(node: ts.Node): string | undefined {
  const attrs = ts.isImportDeclaration(node) || ts.isExportDeclaration(node) ? node.attributes : undefined;
  const el = attrs?.elements.find((e) => e.name.text === "type");
  return el ? (literalText(el.value) ?? "(computed)") : undefined;
}

/** Is this identifier inside a type (an annotation, an interface, `typeof X` in a type)? */
function inType(node: ts.Node): boolean {
  for (let n = node.parent; n; n = n.parent) {
    if (ts.isTypeNode(n) && !ts.isExpressionWithTypeArguments(n)) return true;
    if (ts.isStatement(n) || ts.isBlock(n)) return ts.isInterfaceDeclaration(n) || ts.isTypeAliasDeclaration(n);
  }
  return false;
}

function listSources(root: string, problems: Problem[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = toRel(root, path);
      if (lstatSync(path).isSymbolicLink()) {
        problems.push({ file: rel, line: 0, rule: "files", message: "is a symlink: a file under src/ must be where its folder says" });
      } else if (lstatSync(path).isDirectory()) walk(path);
      else if (extname(name) === ".bash" && rel.startsWith("src/render/")) continue;
      else if (!(extname(name) in SCRIPT_KINDS)) problems.push({ file: rel, line: 0, rule: "files", message: "is not a source file this check reads" });
      else out.push(path);
    }
  };
  walk(join(root, "src"));
  return out;
}

/** Rule `modes`: an import by one side of the other side, or of a module that leads there. */
function checkModes(edges: readonly Edge[], problems: Problem[]): void {
  const out = new Map<string, Edge[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e]);
  /** The chain of files from `start` to the first file of `side`, through files of no side. */
  const pathTo = (start: string, side: string): string[] | undefined => {
    const before = new Map<string, string>([[start, ""]]);
    for (const queue = [start]; queue.length > 0;) {
      const f = queue.shift()!;
      if (sideOf(f) === side) {
        const chain = [f];
        for (let p = before.get(f)!; p !== ""; p = before.get(p)!) chain.unshift(p);
        return chain;
      }
      if (sideOf(f) !== undefined && f !== start) continue;
      for (const e of out.get(f) ?? []) {
        if (!before.has(e.to)) {
          before.set(e.to, f);
          queue.push(e.to);
        }
      }
    }
    return undefined;
  };
  for (const e of edges) {
    const mine = sideOf(e.from);
    const theirs = mine && sideOf(e.to);
    if (!mine || theirs === mine) continue;
    const other = mine === sideOf(SIDECAR_MODE) ? sideOf(OPERATOR_DIR)! : sideOf(SIDECAR_MODE)!;
    const chain = theirs === undefined ? pathTo(e.to, other) : [e.to];
    if (!chain) continue;
    const via = chain.length > 1 ? `, which leads to ${chain.at(-1)} (${chain.join(" → ")})` : "";
    problems.push({
      file: e.from,
      line: e.line,
      rule: "modes",
      message: `imports ${JSON.stringify(e.spec)}${via}: ${mine} and ${other} do not import each other; what both need at start belongs in src/mode-setup.ts`,
    });
  }
}

/** A function's name as a reader finds it: its own, the variable or property it is assigned to, else "(anonymous)". */
function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) || ts.isPrivateIdentifier(node.name))) return node.name.text;
  const p = node.parent;
  if ((ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && ts.isIdentifier(p.name)) return p.name.text;
  return ts.isConstructorDeclaration(node) ? "constructor" : "(anonymous)";
}

/** Checks one file; relative imports are added to `edges` for the rules between files. */
function checkFile(root: string, file: string, dependencies: readonly string[], edges: Edge[], problems: Problem[]): void {
  const rel = toRel(root, file);
  const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true, SCRIPT_KINDS[extname(file)]);
  const inRuntime = rel.startsWith("src/runtime/");
  const mayCallSpawn = inRuntime || rel.startsWith("src/condor/");
  const lineOf = (node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const report = (node: ts.Node, rule: Rule, message: string) => problems.push({ file: rel, line: lineOf(node), rule, message });
  /** Local names bound to the whole of child_process (`import * as cp`, `import cp`). */
  const childProcess = new Set<string>();

  const checkModule = (node: ts.Node) => {
    const ref = moduleReference(node);
    if (!ref) return;
    const { at, spec } = ref;
    const target = isRelative(spec) ? toRel(root, resolve(dirname(file), spec)) : undefined;
    const type = importType(node);
    // The version, from package.json (src/flags.ts).
    if (type === "json" && target === "package.json" && ts.isImportDeclaration(node)) return;
    if (spec.endsWith(".bash") || type !== undefined) {
      const ok = type === "text" && spec.endsWith(".bash") && ts.isImportDeclaration(node) && rel.startsWith("src/render/") &&
        !!target?.startsWith("src/render/");
      if (!ok) report(at, "text", `imports ${JSON.stringify(spec)}: only src/render/ imports bash, as text (with { type: "text" }), from src/render/`);
      return;
    }
    if (CHILD_PROCESS.has(spec) && ts.isImportDeclaration(node) && node.importClause) {
      const { name, namedBindings } = node.importClause;
      if (name) childProcess.add(name.text);
      if (namedBindings && ts.isNamespaceImport(namedBindings)) childProcess.add(namedBindings.name.text);
      if (namedBindings && ts.isNamedImports(namedBindings)) {
        for (const el of namedBindings.elements) {
          const imported = (el.propertyName ?? el.name).text;
          if (imported === "exec" || imported === "execSync") report(el, "shell", `${imported} from ${spec} runs /bin/sh: spawn an argv array instead`);
        }
      }
    }
    if (spec === "bun" && ts.isImportDeclaration(node)) {
      const named = node.importClause?.namedBindings;
      if (named && ts.isNamedImports(named) && named.elements.some((el) => (el.propertyName ?? el.name).text === "$")) {
        report(at, "shell", `$ from "bun" runs a shell command line`);
      }
    }
    if (target !== undefined) edges.push({ from: rel, to: target, spec, line: lineOf(at) });
    if (inRuntime) return;
    if (target !== undefined) {
      if (!target.startsWith("src/")) report(at, "module", `imports ${JSON.stringify(spec)}, outside src/`);
      return;
    }
    const bare = spec.startsWith("node:") ? spec.slice(5) : spec;
    const pkg = spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");
    if ((spec.startsWith("node:") || !spec.includes(":")) && BUILTINS.has(bare)) return;
    if (!spec.includes(":") && dependencies.includes(pkg)) return;
    report(at, "module", `imports ${JSON.stringify(spec)} outside src/runtime/ (allowed: relative paths in src/, package.json dependencies, BUILTINS)`);
  };

  const checkShell = (node: ts.Node) => {
    if ((ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) {
      const value = ts.isPropertyAssignment(node) ? node.initializer : undefined;
      if (node.name.text === "shell" && value?.kind !== ts.SyntaxKind.FalseKeyword) {
        report(node, "shell", "a `shell` option: spawn an argv array, never through a shell");
      }
    }
    const text = literalText(node);
    if (text !== undefined && SHELLS.has(text.split("/").pop()!)) {
      // A shell and, later in the same array, call or `new`, a -c flag.
      let holder = node.parent;
      while (!ts.isArrayLiteralExpression(holder) && !ts.isCallExpression(holder) && !ts.isNewExpression(holder) && !ts.isSourceFile(holder)) {
        holder = holder.parent;
      }
      let flag: string | undefined;
      const find = (n: ts.Node): void => {
        const t = literalText(n);
        if (t !== undefined && n.pos > node.pos && SHELL_COMMAND_FLAG.test(t)) flag ??= t;
        else ts.forEachChild(n, find);
      };
      if (!ts.isSourceFile(holder)) find(holder);
      if (flag) report(node, "shell", `argv ${JSON.stringify(text)} … ${JSON.stringify(flag)}: runs a command line through a shell`);
    }
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression)) {
      const [obj, name] = [node.expression.text, node.name.text];
      if (obj === "Bun" && name === "$") report(node, "shell", "Bun.$ runs a shell command line");
      if (childProcess.has(obj) && (name === "exec" || name === "execSync")) {
        report(node, "shell", `child_process.${name} runs /bin/sh: spawn an argv array instead`);
      }
    }
  };

  const checkRuntimeGlobal = (node: ts.Identifier) => {
    const p = node.parent;
    if (ts.isPropertyAccessExpression(p) && p.name === node) return;
    if (inType(node)) return;
    const allowed = node.text === "Bun" ? BUN_MEMBERS : DENO_MEMBERS;
    if (!ts.isPropertyAccessExpression(p) || p.expression !== node) {
      report(node, "runtime-global", `\`${node.text}\` used other than as ${node.text}.<name> (only src/runtime/ uses the runtime's APIs)`);
    } else if (!allowed.has(p.name.text)) {
      report(p, "runtime-global", `${node.text}.${p.name.text} outside src/runtime/ (allowed: ${[...allowed].join(", ")})`);
    }
  };

  const visit = (node: ts.Node): void => {
    checkModule(node);
    checkShell(node);
    if (!inRuntime && ts.isIdentifier(node) && (node.text === "Bun" || node.text === "Deno")) checkRuntimeGlobal(node);
    if (!mayCallSpawn && (ts.isIdentifier(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && SPAWN_NAMES.has(node.text)) {
      report(node, "spawn-call", `${JSON.stringify(node.text)} outside src/condor/: only the condor adapter starts processes (through Runtime.${node.text})`);
    }
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = lineOf(node);
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      if (last - first + 1 > MAX_FUNCTION_LINES) {
        report(
          node,
          "length",
          `${functionName(node as ts.FunctionLikeDeclaration)} is ${last - first + 1} lines (${first}–${last}), over ${MAX_FUNCTION_LINES}: ` +
            "split it, as src/service/ and src/operator/controller/ split theirs by use case around a shared context",
        );
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

/** Checks the src/ tree of a repository: the problems, sorted by file and line (none: the boundaries hold). */
export function checkBoundaries(root: string): Problem[] {
  root = resolve(root);
  const problems: Problem[] = [];
  let dependencies: string[] = [];
  try {
    dependencies = Object.keys((JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { dependencies?: object }).dependencies ?? {});
  } catch {
    // No package.json: no package is allowed.
  }
  const edges: Edge[] = [];
  for (const file of listSources(root, problems)) checkFile(root, file, dependencies, edges, problems);
  checkModes(edges, problems);
  for (const e of edges) {
    if (e.from.startsWith("src/core/") && !e.to.startsWith("src/core/")) {
      problems.push({
        file: e.from,
        line: e.line,
        rule: "layers",
        message: `imports ${JSON.stringify(e.spec)}: src/core/ is the ground floor and imports nothing else of src/`,
      });
    }
    if (e.to.startsWith(EVENTLOG_DIR) && e.to !== `${EVENTLOG_DIR}index.ts` && !e.from.startsWith(EVENTLOG_DIR)) {
      problems.push({
        file: e.from,
        line: e.line,
        rule: "layers",
        message: `imports ${JSON.stringify(e.spec)}: the job event log is used through its face, src/eventlog/index.ts`,
      });
    }
  }
  return problems.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
}

if (import.meta.main) {
  const problems = checkBoundaries(process.argv[2] ?? join(import.meta.dir, ".."));
  for (const p of problems) console.error(`${p.file}:${p.line}: [${p.rule}] ${p.message}`);
  if (problems.length) {
    console.error(`${problems.length} boundary problem(s); the rules are in scripts/check-boundaries.ts`);
    process.exit(1);
  }
  console.log(
    `boundaries ok: process APIs only in src/runtime/, spawn calls only in src/condor/, no shell anywhere, the two modes apart, core/ at the bottom, eventlog/ through its face, no function over ${MAX_FUNCTION_LINES} lines`,
  );
}
