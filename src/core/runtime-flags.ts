/**
 * The flags Apptainer and SingularityCE register for the commands the job wrapper runs
 * (`exec`, `run`, `instance start`, `instance stop`), release by release, and the table the
 * runtimes print when they refuse one (docs/container-runtimes.md). Pure data and pure functions:
 * config load checks `Channels.SingularityOptions` against it, and the Apptainer shim of the
 * tests reads the same rows (test/minicondor/shims/runtime-flags.tsv, written from here).
 *
 * The rows were read from each release tag's `cmd/internal/cli/*.go` (every `cmdline.Flag` and
 * the `RegisterFlagForCmd` calls naming these commands, command groups expanded); how, and what
 * differs between releases, is in docs/container-runtimes.md#where-the-table-comes-from.
 */
import { RUNTIME_FLAGS_TSV, RUNTIME_RELEASES, type RuntimeFlavour } from "./runtime-flags-data.ts";

export { RUNTIME_RELEASES, type RuntimeFlavour };

export type RuntimeCommand = "exec" | "run" | "instance start" | "instance stop";
/** pflag's `Value.Type()` of the flag. */
export type FlagType = "bool" | "string" | "int" | "stringSlice" | "stringArray" | "stringToString";

export interface RuntimeFlag {
  name: string;
  /** One letter, or "". */
  shorthand: string;
  type: FlagType;
  /** pflag's DefValue; `@HOME@` and `@TMPDIR@` stand for values the runtime reads when it starts. */
  defValue: string;
  usage: string;
  /** Accepted but left out of the table (pflag hides a deprecated flag too). */
  hidden: boolean;
  /** The message pflag prints when a deprecated flag is used. */
  deprecated?: string;
}

const COMMAND_LETTER: Record<RuntimeCommand, string> = { exec: "e", run: "r", "instance start": "s", "instance stop": "t" };
export const RUNTIME_COMMANDS: readonly RuntimeCommand[] = ["exec", "run", "instance start", "instance stop"];

/** The first release with `--no-eval`: the wrapper's own minimum (docs/container-runtimes.md#supported-releases). */
export const NO_EVAL_FROM: Record<RuntimeFlavour, string> = { apptainer: "1.1.0", singularity: "3.10.0" };

/** Compares dotted release numbers ("1.10.0" > "1.9.3"); a missing part counts as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map((p) => parseInt(p, 10) || 0);
  const pb = b.split(".").map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

interface Row {
  flavour: RuntimeFlavour;
  from: string;
  to: string;
  commands: string;
  flag: RuntimeFlag;
}

function parseRows(tsv: string): Row[] {
  return tsv.split("\n").filter((l) => l !== "").map((line) => {
    const [flavour, from, to, commands, name, shorthand, type, defValue, usage, mark] = line.split("\t") as string[];
    const flag: RuntimeFlag = { name: name!, shorthand: shorthand!, type: type as FlagType, defValue: defValue!, usage: usage!, hidden: mark !== "" };
    if (mark!.startsWith("deprecated:")) flag.deprecated = mark!.slice("deprecated:".length);
    return { flavour: flavour as RuntimeFlavour, from: from!, to: to!, commands: commands!, flag };
  });
}

let rowsCache: Row[] | undefined;
function rows(): Row[] {
  return (rowsCache ??= parseRows(RUNTIME_FLAGS_TSV));
}

/** The release whose flags a version has: the newest known release not newer than it (undefined when older than all). */
export function releaseFor(flavour: RuntimeFlavour, version: string): string | undefined {
  const known = RUNTIME_RELEASES[flavour].filter((r) => compareVersions(r, version) <= 0);
  return known[known.length - 1];
}

/** The releases the wrapper runs without `OldRuntime` (those with `--no-eval`). */
export function supportedReleases(flavour: RuntimeFlavour): string[] {
  return RUNTIME_RELEASES[flavour].filter((r) => compareVersions(r, NO_EVAL_FROM[flavour]) >= 0);
}

/**
 * The flags a command accepts in a release, sorted by name as pflag lists them, with the
 * `-h, --help` cobra adds to every command. Empty for a version older than every known release.
 */
export function commandFlags(flavour: RuntimeFlavour, version: string, command: RuntimeCommand): RuntimeFlag[] {
  const release = releaseFor(flavour, version);
  if (release === undefined) return [];
  const letter = COMMAND_LETTER[command];
  const flags = rows()
    .filter((r) => r.flavour === flavour && r.commands.includes(letter) && compareVersions(r.from, release) <= 0 && compareVersions(release, r.to) <= 0)
    .map((r) => r.flag);
  const name = command.split(" ").pop()!;
  flags.push({ name: "help", shorthand: "h", type: "bool", defValue: "false", usage: `help for ${name}`, hidden: false });
  return flags.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The flag a config entry names: `--name` or `-x` (a lone letter), or undefined. */
export function findFlag(flags: readonly RuntimeFlag[], entry: string): RuntimeFlag | undefined {
  if (/^--[^-=]/.test(entry)) return flags.find((f) => f.name === entry.slice(2));
  if (/^-[^-=]$/.test(entry)) return flags.find((f) => f.shorthand === entry.slice(1));
  return undefined;
}

/** What `@HOME@` and `@TMPDIR@` stand for when a table is printed. */
export interface UsageEnv {
  home: string;
  tmpdir: string;
}

/** Go's %q of a plain string (the defaults here hold no control characters). */
function goQuote(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** pflag's UnquoteUsage: a `name` in back quotes, else a name for the type. */
function varName(f: RuntimeFlag): [string, string] {
  const m = /`([^`]*)`/.exec(f.usage);
  if (m) return [m[1]!, f.usage.replace(/`/g, "")];
  const byType: Record<FlagType, string> = {
    bool: "",
    string: "string",
    int: "int",
    stringSlice: "strings",
    stringArray: "stringArray",
    stringToString: "stringToString",
  };
  return [byType[f.type], f.usage];
}

function isZeroDefault(f: RuntimeFlag, def: string): boolean {
  switch (f.type) {
    case "bool":
      return def === "false" || def === "";
    case "int":
      return def === "0";
    case "string":
      return def === "";
    case "stringSlice":
    case "stringArray":
      return def === "[]";
    default:
      // stringToString: pflag compares its string form, "[]" for an empty map, which is not a zero.
      return def === "false" || def === "<nil>" || def === "" || def === "0";
  }
}

/** pflag's wrapN: the first at most i (+ slop) characters of s cut at a space, and the rest. */
function wrapN(i: number, slop: number, s: string): [string, string] {
  if (i + slop > s.length) return [s, ""];
  const head = s.slice(0, i);
  const w = Math.max(head.lastIndexOf(" "), head.lastIndexOf("\t"), head.lastIndexOf("\n"));
  if (w <= 0) return [s, ""];
  const nl = head.lastIndexOf("\n");
  if (nl > 0 && nl < w) return [s.slice(0, nl), s.slice(nl + 1)];
  return [s.slice(0, w), s.slice(w + 1)];
}

/** pflag's wrap: s at indent i (the first line already indented) in w columns (0: no wrapping). */
function wrap(i: number, w: number, s: string): string {
  if (w === 0) return s.replaceAll("\n", "\n" + " ".repeat(i));
  let width = w - i;
  let r = "";
  if (width < 24) {
    i = 16;
    width = w - i;
    r += "\n" + " ".repeat(i);
  }
  if (width < 24) return s.replaceAll("\n", r);
  const slop = 5;
  width -= slop;
  let [l, rest] = wrapN(width, slop, s);
  r += l.replaceAll("\n", "\n" + " ".repeat(i));
  while (rest !== "") {
    [l, rest] = wrapN(width, slop, rest);
    r += "\n" + " ".repeat(i) + l.replaceAll("\n", "\n" + " ".repeat(i));
  }
  return r;
}

/**
 * The flag table as pflag's FlagUsagesWrapped prints it for `cols` columns (the runtimes pass
 * $COLUMNS, else the terminal's width, else 80): hidden flags left out, one line per flag (more
 * when wrapped), each ending in a newline.
 */
export function flagUsages(flags: readonly RuntimeFlag[], cols: number, env: UsageEnv): string {
  const lines: [string, string][] = [];
  let maxlen = 0;
  for (const f of flags) {
    if (f.hidden) continue;
    let left = f.shorthand ? `  -${f.shorthand}, --${f.name}` : `      --${f.name}`;
    const [name, usage] = varName(f);
    if (name) left += " " + name;
    // The NUL pflag appends counts in its width.
    maxlen = Math.max(maxlen, left.length + 1);
    const def = f.defValue.replace("@HOME@", env.home).replace("@TMPDIR@", env.tmpdir);
    let right = usage;
    if (!isZeroDefault(f, def)) right += f.type === "string" ? ` (default ${goQuote(def)})` : ` (default ${def})`;
    lines.push([left, right]);
  }
  return lines.map(([left, right]) => `${left} ${" ".repeat(maxlen - left.length)} ${wrap(maxlen + 2, cols, right)}\n`).join("");
}

/**
 * The commands the wrapper hands a `singularity-options` flag to (planSingularityOptions routes
 * by it). Each container is an instance: `instance start` sets up its mounts, namespaces and
 * devices; its main process, probes and hooks are each an `exec`/`run instance://…`, which takes
 * its own environment, working directory and HOME and ignores mount options (the instance has
 * them). So environment and working directory reach every exec/run, the home flags the start
 * (the bind) and every exec/run (HOME), and the others the instance start.
 */
export function singularityOptionCommands(entry: string): RuntimeCommand[] {
  if (["--env", "--env-file", "--pwd"].includes(entry)) return ["exec", "run"];
  if (["--home", "-H", "--no-home"].includes(entry)) return ["instance start", "exec", "run"];
  return ["instance start"];
}

/** "1.1.0-1.2.5, 1.4.0-1.5.3": releases as stretches of consecutive known releases. */
function releaseRanges(flavour: RuntimeFlavour, releases: readonly string[]): string {
  const all = RUNTIME_RELEASES[flavour];
  const out: string[] = [];
  let start = -1;
  let last = -1;
  for (const r of releases) {
    const i = all.indexOf(r);
    if (start >= 0 && i === last + 1) {
      last = i;
      continue;
    }
    if (start >= 0) out.push(start === last ? all[start]! : `${all[start]}-${all[last]}`);
    start = last = i;
  }
  if (start >= 0) out.push(start === last ? all[start]! : `${all[start]}-${all[last]}`);
  return out.join(", ");
}

const FLAVOUR_NAME: Record<RuntimeFlavour, string> = { apptainer: "Apptainer", singularity: "SingularityCE" };

/**
 * Whether the supported runtimes accept a `Channels.SingularityOptions` entry on the commands the
 * wrapper passes it to (docs/container-runtimes.md#singularity-options): an error when none
 * does (every pod using it would fail to start), a warning naming the releases that refuse it
 * when only some do (the site knows which one its workers run).
 */
export function singularityOptionProblem(entry: string): { error: string } | { warning: string } | undefined {
  const refused: string[] = [];
  let accepted = 0;
  for (const command of singularityOptionCommands(entry)) {
    for (const flavour of ["apptainer", "singularity"] as const) {
      const without = supportedReleases(flavour).filter((r) => findFlag(commandFlags(flavour, r, command), entry) === undefined);
      accepted += supportedReleases(flavour).length - without.length;
      if (without.length) refused.push(`${command} of ${FLAVOUR_NAME[flavour]} ${releaseRanges(flavour, without)}`);
    }
  }
  if (!refused.length) return undefined;
  const where = singularityOptionCommands(entry).join(" and ");
  if (accepted === 0) return { error: `no supported Apptainer or SingularityCE release accepts flag "${entry}" on ${where}, where the wrapper passes it` };
  return { warning: `flag "${entry}" is refused by ${refused.join("; ")}` };
}
