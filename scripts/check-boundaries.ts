/**
 * Fails the build when process APIs leak out of their layers
 * (docs/architecture.md#import-direction,
 * docs/architecture.md#4-no-shell-between-the-sidecar-and-htcondor): in the sidecar process no
 * command line is built from a string and no shell is ever invoked, only src/runtime/ touches the
 * APIs that start processes, and only src/condor/ asks the runtime to start one.
 *
 * It parses every file under src/ with the TypeScript compiler (syntax, plus the type checker for
 * computed member access), so spelling tricks that defeat a text search are seen for what they are.
 * The rules, with R = src/runtime/ and C = src/condor/:
 *
 * files       Every file under src/ is .ts .tsx .js .mjs .cjs .mts or .cts (any other file, or a
 *             symlink, is an error: the check could not read it, or it could move a file across a
 *             boundary). One exception: `.bash` files under src/render/, the wrapper's library,
 *             which is data for the job, never run by the sidecar.
 * text        A `.bash` file is loaded only by an `import x from "./y.bash" with { type: "text" }`
 *             in src/render/ naming a file in src/render/; any other import of a `.bash` file, and
 *             any text import of something else, is refused (text imports cannot hide code, but
 *             they must not become a way to bring other files into src/).
 * module      Outside R, a module specifier (import, export … from, import x = require(), require(),
 *             import()) is one of: a relative path that stays inside src/; a package in
 *             package.json "dependencies" (or a subpath of one); a Node built-in from BUILTINS
 *             below, with or without "node:". So `bun`, `bun:*`, child_process, worker_threads,
 *             cluster, module (createRequire), process (aliases the global past the rules below),
 *             vm (runs code built from strings, which no static check can follow), inspector, wasi,
 *             npm:/jsr:/data:/http: specifiers are all refused: an allowlist does not silently
 *             admit the next process API. Type-only imports count too: only R knows the runtime.
 * loader      Outside R, import() and require() take a string literal, `require` appears only as
 *             the callee of such a call, and nothing is named `createRequire` or accessed as
 *             `.require` (module.require, import.meta.require).
 * process     Outside R, the global `process` appears only as `process.<name>` and never
 *             `process[…]`; and nothing outside R is accessed, destructured or imported as binding,
 *             _linkedBinding, dlopen, getBuiltinModule or execve (the native back doors to spawn).
 * runtime-global
 *             Outside R, `Bun` and `Deno` appear only in type positions or as `Bun.<name>` /
 *             `Deno.<name>` with a name from BUN_MEMBERS / DENO_MEMBERS (no spawn, spawnSync, $,
 *             Command, run, …; never `Bun[…]`, never aliased or destructured); `globalThis`,
 *             `global`, `self`, `window` appear only as `<g>.<name>` with a name other than Bun,
 *             Deno, process, require, eval, Function.
 * code        Outside R, no `eval`, no `Function` value, no `.constructor` access (the way to
 *             Function without naming it), no `Worker`: code from strings or on other threads
 *             escapes the check.
 * spawn-call  Outside C and R, the names of the runtime's spawn entry point (Runtime.spawn in
 *             src/runtime/types.ts, and spawnStream, a streaming variant's name) occur nowhere: not as identifiers,
 *             member names, destructured names, import names or string literals. A member access
 *             with a computed key, and an Object.* / Reflect.* call taking the value as an
 *             argument (except those that answer only names: keys, ownKeys, has, …), are refused
 *             on a value whose type has a spawn or spawnStream member (a Runtime) or is an `any`
 *             written in src/ (`as any`, or declared `any`: how a Runtime would be smuggled past the
 *             names). Calling a method
 *             of the runtime by its literal name (runtime.env(), runtime.uid()) stays allowed.
 * shell       Everywhere in src/, R included: no `shell` option other than `shell: false`; no
 *             argv with a shell (sh, bash, dash, zsh, …) followed by a -c flag in one array, call
 *             or `new`; no Bun.$ / `$` from "bun"; no exec or execSync from child_process (both
 *             run /bin/sh).
 * modes       The sidecar's mode (src/start.ts) and the operator's modules (src/operator/) do not
 *             import each other, directly or through other modules of src/: what both need at
 *             start is in src/startup.ts, and only the entry (src/main.ts) knows both
 *             (docs/architecture.md#import-direction).
 * layers      Nothing in src/core/ imports a module of src/ outside src/core/: core is the ground
 *             floor that every other folder builds on (docs/architecture.md#import-direction).
 * length      No function in src/ is longer than MAX_FUNCTION_LINES lines, from its first line to
 *             its last, nested functions included: a closure that holds a module's worth of
 *             functions is split by use case instead (docs/architecture.md#house-style).
 *             LONG_FUNCTIONS names the few that are not split yet, each with the length it may
 *             not grow past.
 *
 * The first seven rules keep process APIs in their layers, the last three keep the code's shape.
 *
 * What a static check cannot see: code that reaches a Runtime through a dependency's reflection,
 * or a string split into an argv (`cmd.split(" ")`). Review covers those; this check covers the
 * mistakes and the shortcuts.
 *
 * Usage: bun scripts/check-boundaries.ts [repo-root]   (exit 1 and one line per problem)
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

export type Rule = "files" | "text" | "module" | "loader" | "process" | "runtime-global" | "code" | "spawn-call" | "shell" | "modes" | "layers" | "length";

export interface Problem {
  /** Path relative to the repository root, with "/" separators. */
  file: string;
  line: number;
  rule: Rule;
  message: string;
}

const SOURCE_EXTENSIONS = new Set([".ts", ".tsx", ".js", ".mjs", ".cjs", ".mts", ".cts"]);

/** Node built-ins that cannot start a process, load native code or run code from a string. */
const BUILTINS = new Set([
  "assert",
  "assert/strict",
  "buffer",
  "crypto",
  "dns",
  "dns/promises",
  "events",
  "fs",
  "fs/promises",
  "http",
  "https",
  "net",
  "os",
  "path",
  "path/posix",
  "perf_hooks",
  "querystring",
  "readline",
  "stream",
  "stream/promises",
  "stream/web",
  "string_decoder",
  "timers",
  "timers/promises",
  "tls",
  "url",
  "util",
  "zlib",
  "sqlite",
]);

const BUN_MEMBERS = new Set([
  "version",
  "revision",
  "env",
  "argv",
  "main",
  "stdin",
  "stdout",
  "stderr",
  "nanoseconds",
  "sleep",
  "file",
  "write",
  "inspect",
  "deepEquals",
]);
const DENO_MEMBERS = new Set([
  "args",
  "env",
  "stdin",
  "stdout",
  "stderr",
  "version",
  "build",
  "pid",
  "cwd",
  "exit",
  "hostname",
  "memoryUsage",
  "errors",
  "inspect",
  "noColor",
  "addSignalListener",
  "removeSignalListener",
  "readTextFile",
  "readFile",
  "writeTextFile",
  "writeFile",
  "stat",
  "lstat",
  "mkdir",
  "remove",
  "rename",
  "readDir",
  "open",
  "uid",
  "gid",
]);
const GLOBAL_OBJECTS = new Set(["globalThis", "global", "self", "window"]);
const GLOBAL_FORBIDDEN = new Set(["Bun", "Deno", "process", "require", "eval", "Function"]);
const NATIVE_DOORS = new Set(["binding", "_linkedBinding", "dlopen", "getBuiltinModule", "execve"]);
const SPAWN_NAMES = new Set(["spawn", "spawnStream"]);
/** Object/Reflect methods that answer only names or flags, never a member's value. */
const NAMES_ONLY = new Set(["keys", "getOwnPropertyNames", "getOwnPropertySymbols", "ownKeys", "has", "isFrozen", "isSealed", "isExtensible", "is"]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"]);
const SHELL_COMMAND_FLAG = /^-[A-Za-z]*c[A-Za-z]*$/;
const CHILD_PROCESS = new Set(["child_process", "node:child_process"]);

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2023.d.ts"],
  types: [],
  allowJs: true,
  checkJs: false,
  allowImportingTsExtensions: true,
  noEmit: true,
  skipLibCheck: true,
  strict: true,
  noResolve: false,
};

/** Parsed declaration files (lib, dependencies' types) kept across calls: the tests run the check several times. */
const declarationCache = new Map<string, ts.SourceFile>();

function listSources(root: string, problems: Problem[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = toRel(root, path);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) problems.push({ file: rel, line: 0, rule: "files", message: "is a symlink: a file under src/ must be where its folder says" });
      else if (st.isDirectory()) walk(path);
      else if (extname(name) === ".bash" && isUnderRender(rel)) continue;
      else if (!SOURCE_EXTENSIONS.has(extname(name))) {
        problems.push({ file: rel, line: 0, rule: "files", message: `is not a source file this check reads (${[...SOURCE_EXTENSIONS].join(" ")})` });
      } else out.push(path);
    }
  };
  walk(join(root, "src"));
  return out;
}

/** The one folder whose `.bash` files are allowed (and imported as text). */
const TEXT_FOLDER = "src/render/";
function isUnderRender(rel: string): boolean {
  return rel.startsWith(TEXT_FOLDER);
}

/** `with { type: "…" }` of an import or export declaration, when it has one. */
function importType(node: ts.Node): string | undefined {
  const attrs = (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) ? node.attributes : undefined;
  for (const el of attrs?.elements ?? []) {
    if (el.name.text === "type") return literalText(el.value) ?? "(computed)";
  }
  return undefined;
}

function toRel(root: string, path: string): string {
  return relative(root, path).split(sep).join("/");
}

function readDependencies(root: string): string[] {
  try {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
    return Object.keys(pkg.dependencies ?? {});
  } catch {
    return [];
  }
}

function createProgram(files: string[]): ts.Program {
  const host = ts.createCompilerHost(COMPILER_OPTIONS, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.endsWith(".d.ts") || !fileName.includes("node_modules")) return getSourceFile(fileName, languageVersion, onError, shouldCreate);
    let sf = declarationCache.get(fileName);
    if (!sf) {
      sf = getSourceFile(fileName, languageVersion, onError, shouldCreate);
      if (sf) declarationCache.set(fileName, sf);
    }
    return sf;
  };
  // Packages stay unresolved (their values are `any`, not flagged unless written `any` in src/):
  // what matters is src/'s own types, and zod's inferred types would triple the run time.
  host.resolveModuleNameLiterals = (literals, containingFile, _redirect, options) =>
    literals.map((lit) =>
      lit.text.startsWith("./") || lit.text.startsWith("../") ? ts.resolveModuleName(lit.text, containingFile, options, host) : { resolvedModule: undefined }
    );
  return ts.createProgram({ rootNames: files, options: COMPILER_OPTIONS, host });
}

/** The text of a string literal or a template without substitutions, else undefined. */
function literalText(node: ts.Node | undefined): string | undefined {
  if (!node) return undefined;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isParenthesizedExpression(node)) return literalText(node.expression);
  return undefined;
}

/** The member name of `a.b`, `a["b"]`, or undefined for a computed key. */
function memberName(node: ts.PropertyAccessExpression | ts.ElementAccessExpression): string | undefined {
  return ts.isPropertyAccessExpression(node) ? node.name.text : literalText(node.argumentExpression);
}

function stripExpression(node: ts.Expression): ts.Expression {
  let e = node;
  while (
    ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isTypeAssertionExpression(e) || ts.isNonNullExpression(e) || ts.isSatisfiesExpression(e)
  ) e = e.expression;
  return e;
}

function isTypePosition(node: ts.Node): boolean {
  for (let n: ts.Node = node; n.parent; n = n.parent) {
    const p = n.parent;
    if (
      ts.isTypeNode(p) || ts.isTypeQueryNode(p) || ts.isTypeReferenceNode(p) || ts.isExpressionWithTypeArguments(p) || ts.isTypeAliasDeclaration(p) ||
      ts.isInterfaceDeclaration(p)
    ) {
      // `class X extends Y` is an ExpressionWithTypeArguments holding a value.
      if (
        ts.isExpressionWithTypeArguments(p) && ts.isHeritageClause(p.parent) && p.parent.token === ts.SyntaxKind.ExtendsKeyword &&
        ts.isClassLike(p.parent.parent)
      ) return false;
      return true;
    }
    if (ts.isQualifiedName(p)) continue;
    if (!ts.isPropertyAccessExpression(p) && !ts.isQualifiedName(p)) return false;
  }
  return false;
}

/** Is this identifier a reference to a value (not a declaration name, member name or label)? */
function isValueReference(id: ts.Identifier): boolean {
  const p = id.parent;
  if (ts.isPropertyAccessExpression(p) && p.name === id) return false;
  if (
    (ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p) || ts.isMethodDeclaration(p) || ts.isPropertySignature(p) || ts.isMethodSignature(p) ||
      ts.isGetAccessor(p) || ts.isSetAccessor(p) || ts.isEnumMember(p)) && p.name === id
  ) return false;
  if (
    (ts.isVariableDeclaration(p) || ts.isParameter(p) || ts.isFunctionDeclaration(p) || ts.isClassDeclaration(p) || ts.isBindingElement(p)) && p.name === id
  ) return false;
  if (ts.isBindingElement(p) && p.propertyName === id) return false;
  if ((ts.isImportSpecifier(p) || ts.isExportSpecifier(p)) && (p.propertyName === id || p.name === id)) return false;
  if (ts.isImportClause(p) || ts.isNamespaceImport(p) || ts.isImportEqualsDeclaration(p)) return false;
  if (ts.isLabeledStatement(p) || ts.isBreakOrContinueStatement(p)) return false;
  if (ts.isQualifiedName(p) && p.right === id) return false;
  return !isTypePosition(id);
}

/** The module specifier a node loads, when it loads one: [specifier node, is it a literal]. */
function moduleReference(node: ts.Node): { spec: ts.Expression; text: string | undefined } | undefined {
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
    return { spec: node.moduleSpecifier, text: literalText(node.moduleSpecifier) };
  }
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
    return { spec: node.moduleReference.expression, text: literalText(node.moduleReference.expression) };
  }
  if (ts.isCallExpression(node)) {
    const callee = node.expression;
    const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
    const isRequire = ts.isIdentifier(callee) && callee.text === "require";
    if (isImport || isRequire) {
      const arg = node.arguments[0];
      return { spec: arg ?? node, text: literalText(arg) };
    }
  }
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
    return { spec: node.argument.literal as ts.Expression, text: literalText(node.argument.literal) };
  }
  return undefined;
}

function bareModuleName(spec: string): string {
  return spec.startsWith("node:") ? spec.slice(5) : spec;
}

function packageName(spec: string): string {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** The sidecar's mode module, and the operator's folder: neither imports the other (rule `modes`). */
const SIDECAR_MODE = "src/start.ts";
const OPERATOR_DIR = "src/operator/";
const sideOf = (
  rel: string,
) => (rel === SIDECAR_MODE ? "the sidecar's mode (src/start.ts)" : rel.startsWith(OPERATOR_DIR) ? "the operator (src/operator/)" : undefined);

/** A relative import of one file of src/ by another. */
interface Edge {
  from: string;
  to: string;
  spec: string;
  line: number;
}

/**
 * Rule `modes`: an import by one side of a file of the other side, or of a module that leads
 * there. Imports between the files of one side are not followed: each file answers for its own.
 */
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
    problems.push({
      file: e.from,
      line: e.line,
      rule: "modes",
      message: `imports ${JSON.stringify(e.spec)}${chain.length > 1 ? `, which leads to ${chain.at(-1)} (${chain.join(" → ")})` : ""}: ${mine} and ${other} ` +
        "do not import each other; what both need at start belongs in src/startup.ts",
    });
  }
}

/** Rule `length`: the longest a function may be, in lines, nested functions included. */
export const MAX_FUNCTION_LINES = 150;

/**
 * Functions over MAX_FUNCTION_LINES not split yet, by `file#name`, with the length each may not
 * grow past. Each is in a module that other work was rewriting when the rule came (issue 25):
 * split it there, then remove it here.
 */
const LONG_FUNCTIONS: Readonly<Record<string, number>> = {};

/** A function's name as a reader finds it: its own, the variable or property it is assigned to, else "(anonymous)". */
function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) || ts.isPrivateIdentifier(node.name))) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const p = node.parent;
  if ((ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && ts.isIdentifier(p.name)) return p.name.text;
  return "(anonymous)";
}

/** Rule `length` for one file; `seen` collects the LONG_FUNCTIONS entries found. */
function checkLengths(sf: ts.SourceFile, rel: string, problems: Problem[], seen: Set<string>): void {
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      const lines = last - first + 1;
      const name = functionName(node as ts.FunctionLikeDeclaration);
      const key = `${rel}#${name}`;
      const allowed = LONG_FUNCTIONS[key];
      if (allowed !== undefined) seen.add(key);
      if (lines > Math.max(MAX_FUNCTION_LINES, allowed ?? 0)) {
        problems.push({
          file: rel,
          line: first,
          rule: "length",
          message:
            `${name} is ${lines} lines (${first}–${last}), over ${allowed ?? MAX_FUNCTION_LINES}${
              allowed === undefined ? "" : " (its LONG_FUNCTIONS entry)"
            }: ` +
            `split it, as src/service/ and src/operator/controller/ split theirs by use case around a shared context`,
        });
      } else if (allowed !== undefined && lines <= MAX_FUNCTION_LINES) {
        problems.push({ file: rel, line: first, rule: "length", message: `${name} is ${lines} lines now: remove its entry from LONG_FUNCTIONS` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

/**
 * Checks the src/ tree of a repository. Returns the problems, sorted by file and line; an empty
 * list means the boundaries hold.
 */
export function checkBoundaries(root: string): Problem[] {
  root = resolve(root);
  const srcDir = join(root, "src");
  const problems: Problem[] = [];
  const files = listSources(root, problems);
  const dependencies = readDependencies(root);
  const program = createProgram(files);
  let checker: ts.TypeChecker | undefined;
  const types = () => (checker ??= program.getTypeChecker());
  const edges: Edge[] = [];
  const longSeen = new Set<string>();

  for (const file of files) {
    const sf = program.getSourceFile(file);
    const rel = toRel(root, file);
    if (!sf) {
      problems.push({ file: rel, line: 0, rule: "files", message: "could not be parsed" });
      continue;
    }
    const inRuntime = rel.startsWith("src/runtime/");
    const mayCallSpawn = inRuntime || rel.startsWith("src/condor/");
    const report = (node: ts.Node, rule: Rule, message: string) => {
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      problems.push({ file: rel, line, rule, message });
    };
    /** Local names bound to child_process (namespace, default, require). */
    const childProcessNames = new Set<string>();

    /** Is this `any` written in src/: an `as any`, or a variable, parameter or function declared `any`? */
    const explicitAny = (expr: ts.Expression): boolean => {
      for (let e: ts.Expression = expr;;) {
        if ((ts.isAsExpression(e) || ts.isTypeAssertionExpression(e)) && e.type.kind === ts.SyntaxKind.AnyKeyword) return true;
        if (
          ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isTypeAssertionExpression(e) || ts.isNonNullExpression(e) || ts.isSatisfiesExpression(e)
        ) e = e.expression;
        else if (ts.isIdentifier(e) || ts.isCallExpression(e)) {
          const sym = types().getSymbolAtLocation(ts.isCallExpression(e) ? e.expression : e);
          return !!sym?.declarations?.some((d) => {
            const type = (d as { type?: ts.TypeNode }).type;
            return type?.kind === ts.SyntaxKind.AnyKeyword && resolve(d.getSourceFile().fileName).startsWith(srcDir + sep);
          });
        } else return false;
      }
    };
    /** Could this value be a Runtime: its type has spawn/spawnStream, or it is `any` written in src/. */
    const mayHoldRuntime = (expr: ts.Expression): string | undefined => {
      const t = types().getTypeAtLocation(expr);
      if (t.flags & ts.TypeFlags.Any) return explicitAny(expr) ? "is typed any" : undefined;
      const parts = t.isUnionOrIntersection() ? t.types : [t];
      for (const part of parts) {
        for (const name of SPAWN_NAMES) if (types().getPropertyOfType(types().getApparentType(part), name)) return `has a ${name} member`;
      }
      return undefined;
    };

    const checkModule = (node: ts.Node) => {
      const ref = moduleReference(node);
      if (!ref) return;
      if (ref.text === undefined) {
        if (!inRuntime) report(ref.spec, "loader", "import()/require() of a computed specifier: the check cannot see what it loads");
        return;
      }
      const spec = ref.text;
      const type = importType(node);
      if (spec.endsWith(".bash") || type !== undefined) {
        const target = spec.startsWith("./") || spec.startsWith("../") ? toRel(root, resolve(dirname(file), spec)) : undefined;
        const ok = ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && type === "text" && spec.endsWith(".bash") &&
          isUnderRender(rel) && target !== undefined && isUnderRender(target);
        if (!ok) {
          report(
            ref.spec,
            "text",
            `imports ${JSON.stringify(spec)}${
              type === undefined ? "" : ` as ${JSON.stringify(type)}`
            }: only src/render/ imports bash, as text (with { type: "text" }), from src/render/`,
          );
        }
        return;
      }
      if (CHILD_PROCESS.has(spec) && ts.isImportDeclaration(node)) {
        const named = node.importClause?.namedBindings;
        if (named && ts.isNamedImports(named)) {
          for (const el of named.elements) {
            const imported = (el.propertyName ?? el.name).text;
            if (imported === "exec" || imported === "execSync") report(el, "shell", `${imported} from ${spec} runs /bin/sh: spawn an argv array instead`);
          }
        } else if (named && ts.isNamespaceImport(named)) childProcessNames.add(named.name.text);
        if (node.importClause?.name) childProcessNames.add(node.importClause.name.text);
      }
      if (CHILD_PROCESS.has(spec) && ts.isImportEqualsDeclaration(node)) childProcessNames.add(node.name.text);
      if (CHILD_PROCESS.has(spec) && ts.isCallExpression(node) && ts.isVariableDeclaration(node.parent)) {
        const name = node.parent.name;
        if (ts.isIdentifier(name)) childProcessNames.add(name.text);
        else if (ts.isObjectBindingPattern(name)) {
          for (const el of name.elements) {
            const imported = (el.propertyName && ts.isIdentifier(el.propertyName) ? el.propertyName.text : undefined) ??
              (ts.isIdentifier(el.name) ? el.name.text : "");
            if (imported === "exec" || imported === "execSync") report(el, "shell", `${imported} from ${spec} runs /bin/sh: spawn an argv array instead`);
          }
        }
      }
      if (spec === "bun" && ts.isImportDeclaration(node)) {
        const named = node.importClause?.namedBindings;
        if (named && ts.isNamedImports(named)) {
          for (const el of named.elements) if ((el.propertyName ?? el.name).text === "$") report(el, "shell", `$ from "bun" runs a shell command line`);
        }
      }
      if (spec.startsWith("./") || spec.startsWith("../")) {
        const to = ts.resolveModuleName(spec, file, COMPILER_OPTIONS, ts.sys).resolvedModule?.resolvedFileName;
        if (to) edges.push({ from: rel, to: toRel(root, to), spec, line: sf.getLineAndCharacterOfPosition(ref.spec.getStart(sf)).line + 1 });
      }
      if (inRuntime) return;
      if (spec.startsWith("./") || spec.startsWith("../")) {
        const target = resolve(dirname(file), spec);
        if (!target.startsWith(srcDir + sep)) report(ref.spec, "module", `imports ${JSON.stringify(spec)}, outside src/`);
        return;
      }
      const bare = bareModuleName(spec);
      if ((spec.startsWith("node:") || !spec.includes(":")) && BUILTINS.has(bare)) return;
      if (!spec.includes(":") && !spec.startsWith("/") && dependencies.includes(packageName(spec))) return;
      report(
        ref.spec,
        "module",
        `imports ${
          JSON.stringify(spec)
        } outside src/runtime/ (allowed: relative paths in src/, package.json dependencies, the built-ins listed in scripts/check-boundaries.ts)`,
      );
    };

    const visit = (node: ts.Node): void => {
      checkModule(node);

      // shell: everywhere
      if (
        (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
        node.name.text === "shell"
      ) {
        const value = ts.isPropertyAssignment(node) ? node.initializer : undefined;
        if (!value || value.kind !== ts.SyntaxKind.FalseKeyword) report(node, "shell", "a `shell` option: spawn an argv array, never through a shell");
      }
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        const base = node.text.split("/").pop() ?? "";
        if (SHELLS.has(base)) {
          let holder: ts.Node = node.parent;
          while (holder && !ts.isArrayLiteralExpression(holder) && !ts.isCallExpression(holder) && !ts.isNewExpression(holder) && !ts.isSourceFile(holder)) {
            holder = holder.parent;
          }
          let flag: ts.Node | undefined;
          const find = (n: ts.Node): void => {
            if (flag) return;
            if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && n.pos > node.pos && SHELL_COMMAND_FLAG.test(n.text)) flag = n;
            else ts.forEachChild(n, find);
          };
          if (!ts.isSourceFile(holder)) find(holder);
          if (flag) {
            report(
              node,
              "shell",
              `argv ${JSON.stringify(node.text)} … ${JSON.stringify((flag as ts.StringLiteral).text)}: runs a command line through a shell`,
            );
          }
        }
      }
      if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
        const name = memberName(node);
        const obj = stripExpression(node.expression);
        if (name === "$" && ts.isIdentifier(obj) && obj.text === "Bun") report(node, "shell", "Bun.$ runs a shell command line");
        if ((name === "exec" || name === "execSync") && ts.isIdentifier(obj) && childProcessNames.has(obj.text)) {
          report(node, "shell", `child_process.${name} runs /bin/sh: spawn an argv array instead`);
        }
      }

      if (!inRuntime) checkOutsideRuntime(node);
      if (!mayCallSpawn) checkSpawnNames(node);
      ts.forEachChild(node, visit);
    };

    const checkOutsideRuntime = (node: ts.Node) => {
      if (ts.isIdentifier(node)) {
        const t = node.text;
        if (t === "createRequire") report(node, "loader", "createRequire loads modules this check cannot see");
        if (!isValueReference(node)) return;
        const p = node.parent;
        const asObject = (ts.isPropertyAccessExpression(p) || ts.isElementAccessExpression(p)) && p.expression === node ? p : undefined;
        const member = asObject && memberName(asObject);
        if (t === "require") {
          if (!(ts.isCallExpression(p) && p.expression === node)) report(node, "loader", '`require` used other than as require("literal")');
        } else if (t === "process") {
          if (!asObject || !ts.isPropertyAccessExpression(asObject)) report(node, "process", "`process` used other than as process.<name>");
        } else if (t === "Bun" || t === "Deno") {
          const allowed = t === "Bun" ? BUN_MEMBERS : DENO_MEMBERS;
          if (!asObject || !ts.isPropertyAccessExpression(asObject)) {
            report(node, "runtime-global", `\`${t}\` used other than as ${t}.<name> (only src/runtime/ uses the runtime's APIs)`);
          } else if (!allowed.has(member!)) report(asObject, "runtime-global", `${t}.${member} outside src/runtime/ (allowed: ${[...allowed].join(", ")})`);
        } else if (GLOBAL_OBJECTS.has(t)) {
          if (!asObject || !ts.isPropertyAccessExpression(asObject)) report(node, "runtime-global", `\`${t}\` used other than as ${t}.<name>`);
          else if (GLOBAL_FORBIDDEN.has(member!)) report(asObject, "runtime-global", `${t}.${member} reaches around the rules of this check`);
        } else if (t === "eval" || t === "Function") {
          report(node, "code", `${t} runs code built from a string`);
        } else if (t === "Worker") {
          report(node, "code", "Worker runs code on another thread, outside src/runtime/");
        }
        return;
      }
      if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
        const name = memberName(node);
        if (name === "require") report(node, "loader", "`.require` loads modules this check cannot see");
        if (name === "constructor") report(node, "code", "`.constructor` reaches Function, which runs code built from a string");
        if (name && NATIVE_DOORS.has(name)) report(node, "process", `.${name} reaches native code or starts processes`);
        return;
      }
      if (ts.isImportSpecifier(node) && NATIVE_DOORS.has((node.propertyName ?? node.name).text)) {
        report(node, "process", `imports ${(node.propertyName ?? node.name).text}, which reaches native code or starts processes`);
      }
      if (ts.isBindingElement(node)) {
        const key = node.propertyName ?? node.name;
        const name = ts.isIdentifier(key) || ts.isStringLiteral(key) ? key.text : undefined;
        if (name && NATIVE_DOORS.has(name)) report(node, "process", `destructures ${name}, which reaches native code or starts processes`);
        if (name === "require" || name === "constructor") report(node, name === "require" ? "loader" : "code", `destructures ${name}`);
      }
    };

    const checkSpawnNames = (node: ts.Node) => {
      if ((ts.isIdentifier(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && SPAWN_NAMES.has(node.text)) {
        report(node, "spawn-call", `${JSON.stringify(node.text)} outside src/condor/: only the condor adapter starts processes (through Runtime.${node.text})`);
        return;
      }
      if (ts.isElementAccessExpression(node) && literalText(node.argumentExpression) === undefined && !ts.isNumericLiteral(node.argumentExpression)) {
        const why = mayHoldRuntime(node.expression);
        if (why) report(node, "spawn-call", `computed member access on a value that ${why}: could reach Runtime.spawn outside src/condor/`);
        return;
      }
      if (ts.isCallExpression(node)) {
        const callee = stripExpression(node.expression);
        const owner = ts.isPropertyAccessExpression(callee) || ts.isElementAccessExpression(callee) ? stripExpression(callee.expression) : undefined;
        const method = ts.isPropertyAccessExpression(callee) || ts.isElementAccessExpression(callee) ? memberName(callee) : undefined;
        if (owner && ts.isIdentifier(owner) && (owner.text === "Object" || owner.text === "Reflect") && (method === undefined || !NAMES_ONLY.has(method))) {
          for (const arg of node.arguments) {
            const why = mayHoldRuntime(ts.isSpreadElement(arg) ? arg.expression : arg);
            if (why) report(node, "spawn-call", `${owner.text} reflection on a value that ${why}: could reach Runtime.spawn outside src/condor/`);
          }
        }
      }
    };

    visit(sf);
    checkLengths(sf, rel, problems, longSeen);
  }
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
  }
  for (const key of Object.keys(LONG_FUNCTIONS)) {
    const [file, name] = key.split("#") as [string, string];
    if (!longSeen.has(key) && files.some((f) => toRel(root, f) === file)) {
      problems.push({ file, line: 0, rule: "length", message: `LONG_FUNCTIONS names ${name}, which is not in this file any more: remove the entry` });
    }
  }
  return problems.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
}

if (import.meta.main) {
  const root = process.argv[2] ?? join(import.meta.dir, "..");
  const problems = checkBoundaries(root);
  if (problems.length) {
    for (const p of problems) console.error(`${p.file}:${p.line}: [${p.rule}] ${p.message}`);
    console.error(`${problems.length} boundary problem(s); the rules are in scripts/check-boundaries.ts`);
    process.exit(1);
  }
  console.log(
    `boundaries ok: process APIs only in src/runtime/, spawn calls only in src/condor/, no shell anywhere, the two modes apart, core/ at the bottom, no function over ${MAX_FUNCTION_LINES} lines`,
  );
}
