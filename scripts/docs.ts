/**
 * `npm run docs`: regenerates the tables of docs/configuration.md from the code, so that they
 * cannot drift from it: the configuration table from the zod schema (src/config.ts, each key's
 * `.describe()`), the flag tables from the flag definitions (src/flags.ts FLAGS). The text between
 * `<!-- BEGIN GENERATED <name> ... -->` and `<!-- END GENERATED <name> -->` is replaced; the rest
 * of the file is prose and stays as written.
 *
 *   bun scripts/docs.ts           rewrite docs/configuration.md
 *   bun scripts/docs.ts --check   exit 1 when it is out of date or a relative link in README.md
 *                                 or docs/ points at a file or heading that does not exist
 *
 * The functions are pure (test/scripts/docs.test.ts runs them on tables); only the bottom of this
 * file reads and writes files.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { z } from "zod";
import { FLAGS } from "../src/flags.ts";
import { Schema } from "../src/config.ts";

// ------------------------------------------------------------------------------ configuration

/** The subset of JSON Schema that z.toJSONSchema writes for the config schema. */
interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  anyOf?: JsonSchema[];
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
const code = (s: string) => `\`${s}\``;

/** Strings YAML would read as another type (or as nothing) are quoted. */
const plainYaml = (s: string) => /^[A-Za-z._/][\w./-]*$/.test(s) && !/^(true|false|yes|no|on|off|null)$/i.test(s);

/** A default as it would be written in SidecarConfig.yaml (JSON is valid YAML). */
function defaultText(v: unknown): string {
  if (v === undefined) return "";
  if (typeof v === "string") return code(plainYaml(v) ? v : JSON.stringify(v));
  if (Array.isArray(v)) return code(`[${v.map((x) => JSON.stringify(x)).join(", ")}]`);
  return code(JSON.stringify(v));
}

/** `a`, `a or b`, `a, b or c`. */
const either = (xs: string[]) => (xs.length < 2 ? (xs[0] ?? "") : `${xs.slice(0, -1).join(", ")} or ${xs.at(-1)}`);

function typeName(t: string | string[] | undefined): string {
  const one = (x: string) => ({ object: "mapping", array: "list" })[x] ?? x;
  if (Array.isArray(t)) return either(t.map(one));
  return t === undefined ? "any" : one(t);
}

function typeText(s: JsonSchema): string {
  if (s.enum) return `one of ${s.enum.map((e) => code(String(e))).join(", ")}`;
  if (s.anyOf) return either(s.anyOf.map(typeText));
  if (s.type === "integer" || s.type === "number") {
    if (s.exclusiveMinimum !== undefined) return `${s.type} > ${s.exclusiveMinimum}`;
    // z.number().int() alone is bounded by the safe integers, which says nothing to a reader.
    if (s.minimum !== undefined && s.minimum > Number.MIN_SAFE_INTEGER) return `${s.type} ≥ ${s.minimum}`;
    return s.type;
  }
  if (s.type === "string") return s.minLength ? "string, not empty" : "string";
  if (s.type === "array") {
    const items = s.items ?? {};
    return items.properties ? "list of mappings" : `list of ${typeName(items.type)}s`.replace("list of anys", "list");
  }
  if (s.type === "object" && !s.properties) {
    const values = typeof s.additionalProperties === "object" ? typeText(s.additionalProperties) : "any";
    return `mapping of string → ${values}`;
  }
  return typeName(s.type);
}

/**
 * The configuration table: one row per key, nested keys as `Parent.Child` right after their
 * parent. Throws, naming the key, when a key has no description.
 */
export function configTable(schema: z.ZodObject): string {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const rows: string[] = ["| key | type | default | meaning |", "|---|---|---|---|"];
  const walk = (props: Record<string, JsonSchema>, prefix: string) => {
    for (const [k, s] of Object.entries(props)) {
      const key = prefix + k;
      if (!s.description?.trim()) throw new Error(`configuration key ${key} has no description: add .describe() to it in src/config.ts`);
      const nested = s.type === "object" && s.properties;
      rows.push(`| ${code(key)} | ${cell(typeText(s))} | ${nested ? "" : cell(defaultText(s.default))} | ${cell(s.description.trim())} |`);
      if (nested) walk(s.properties!, `${key}.`);
    }
  };
  walk(json.properties ?? {}, "");
  return rows.join("\n");
}

// -------------------------------------------------------------------------------------- flags

export interface FlagDoc {
  type: "string" | "boolean";
  short?: string;
  group: string;
  arg?: string;
  defaultText?: string;
  description: string;
}

/**
 * One table of flags: those of `groups`, in definition order. Throws, naming the flag, when a
 * flag has no description.
 */
export function flagTable(flags: Record<string, FlagDoc>, groups: readonly string[]): string {
  const rows: string[] = ["| flag | default | meaning |", "|---|---|---|"];
  for (const [name, f] of Object.entries(flags)) {
    if (!f.description?.trim()) throw new Error(`flag --${name} has no description: add one to FLAGS in src/flags.ts`);
    if (!groups.includes(f.group)) continue;
    const spelled = `${f.short ? `-${f.short}, ` : ""}--${name}${f.arg ? ` ${f.arg}` : ""}`;
    const dflt = f.defaultText === undefined ? "" : /`/.test(f.defaultText) ? f.defaultText : code(f.defaultText);
    rows.push(`| ${code(spelled)} | ${cell(dflt)} | ${cell(f.description.trim())} |`);
  }
  return rows.join("\n");
}

// ------------------------------------------------------------------------------------ markers

const begin = (name: string) => `<!-- BEGIN GENERATED ${name}: edit the source named here, then run npm run docs -->`;
const end = (name: string) => `<!-- END GENERATED ${name} -->`;

/** The generated blocks of docs/configuration.md, by marker name. */
export function generatedBlocks(): Record<string, string> {
  const flags = FLAGS as unknown as Record<string, FlagDoc>;
  return {
    "config (src/config.ts)": configTable(Schema),
    "server flags (src/flags.ts)": flagTable(flags, ["server", "other"]),
    "htcondor flags (src/flags.ts)": flagTable(flags, ["htcondor"]),
  };
}

/** Replaces the text between each block's markers; throws when a marker pair is missing. */
export function fillMarkers(text: string, blocks: Record<string, string>): string {
  let out = text;
  for (const [name, content] of Object.entries(blocks)) {
    const b = out.indexOf(begin(name));
    const e = out.indexOf(end(name));
    if (b < 0 || e < b) throw new Error(`missing the markers of ${name}:\n${begin(name)}\n${end(name)}`);
    out = `${out.slice(0, b + begin(name).length)}\n${content}\n${out.slice(e)}`;
  }
  return out;
}

// -------------------------------------------------------------------------------------- links

/** GitHub's anchor for a heading: the rendered text, lower-cased, punctuation dropped, spaces → `-`. */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`/g, "")
    .replace(/\*\*/g, "");
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** Lines outside fenced code blocks. */
function prose(text: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (m) {
      if (fence === undefined) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = undefined;
      out.push("");
      continue;
    }
    out.push(fence === undefined ? line : "");
  }
  return out;
}

/** The anchors of a markdown file: its headings (duplicates get -1, -2 …) and explicit ids. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  }
  return out;
}

/**
 * Every relative link of the given markdown files that points at a missing file or heading.
 * `files` maps repository paths to their text (the markdown files to check, and the ones they
 * link to); `exists` answers for any other path.
 */
export function brokenLinks(files: Record<string, string>, exists: (path: string) => boolean): string[] {
  const problems: string[] = [];
  for (const [from, text] of Object.entries(files)) {
    if (!from.endsWith(".md")) continue;
    prose(text).forEach((line, i) => {
      const outsideCode = line.replace(/`[^`]*`/g, "");
      for (const m of outsideCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
        const path = pathPart === "" ? from : normalize(join(dirname(from), decodeURIComponent(pathPart)));
        const where = `${from}:${i + 1}: ${target}`;
        if (path.startsWith("..")) {
          problems.push(`${where}: points outside the repository`);
          continue;
        }
        const known = path in files;
        if (!known && !exists(path)) {
          problems.push(`${where}: no file ${path}`);
          continue;
        }
        if (anchor === undefined || anchor === "") continue;
        if (!path.endsWith(".md")) continue;
        if (!known) {
          problems.push(`${where}: ${path} was not read, so its headings cannot be checked`);
          continue;
        }
        if (!anchors(files[path]!).has(anchor)) problems.push(`${where}: no heading #${anchor} in ${path}`);
      }
    });
  }
  return problems;
}

// --------------------------------------------------------------------------------------- main

/** The repository's own documentation: README.md and every markdown file under docs/. */
export function docFiles(root: string): Record<string, string> {
  const out: Record<string, string> = { "README.md": readFileSync(join(root, "README.md"), "utf8") };
  for (const f of readdirSync(join(root, "docs")).sort()) {
    if (f.endsWith(".md")) out[`docs/${f}`] = readFileSync(join(root, "docs", f), "utf8");
  }
  return out;
}

export const CONFIGURATION_DOC = "docs/configuration.md";

if (import.meta.main) {
  const root = join(import.meta.dir, "..");
  const path = join(root, CONFIGURATION_DOC);
  const current = readFileSync(path, "utf8");
  const wanted = fillMarkers(current, generatedBlocks());
  if (process.argv.includes("--check")) {
    const problems = brokenLinks(docFiles(root), (p) => existsSync(join(root, p)));
    if (wanted !== current) problems.unshift(`${CONFIGURATION_DOC} is out of date: run npm run docs`);
    for (const p of problems) console.error(p);
    process.exit(problems.length ? 1 : 0);
  }
  if (wanted !== current) {
    writeFileSync(path, wanted);
    console.log(`wrote ${CONFIGURATION_DOC}`);
  } else {
    console.log(`${CONFIGURATION_DOC} is up to date`);
  }
}
