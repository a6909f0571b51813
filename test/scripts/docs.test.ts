// The documentation stays in step with the code: docs/configuration.md's tables are generated
// from the zod schema and the flag definitions (scripts/docs.ts), and every relative link of the
// README and docs/ points at a file and heading that exist.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  anchors,
  brokenLinks,
  configTable,
  CONFIGURATION_DOC,
  docFiles,
  fillMarkers,
  type FlagDoc,
  flagTable,
  generatedBlocks,
  slug,
} from "../../scripts/docs.ts";
import { FLAGS, USAGE } from "../../src/flags.ts";

const ROOT = join(import.meta.dir, "../..");
const HEADER = 2;
const rows = (table: string) => table.split("\n").slice(HEADER);

describe("configTable: one row per key, from the schema alone", () => {
  const cases: [string, z.ZodObject, string[]][] = [
    ["a string with its default", z.object({ A: z.string().default("./data").describe("where") }), ["| `A` | string | `./data` | where |"]],
    ["an empty default is quoted", z.object({ A: z.string().default("").describe("d") }), ['| `A` | string | `""` | d |']],
    ["a string YAML would read as a number is quoted", z.object({ A: z.string().default("1000").describe("d") }), ['| `A` | string | `"1000"` | d |']],
    ["a non-empty string", z.object({ A: z.string().min(1).default("x").describe("d") }), ["| `A` | string, not empty | `x` | d |"]],
    ["an integer with a minimum", z.object({ A: z.number().int().min(121).default(125).describe("d") }), ["| `A` | integer ≥ 121 | `125` | d |"]],
    ["a positive integer", z.object({ A: z.number().int().positive().default(8).describe("d") }), ["| `A` | integer > 0 | `8` | d |"]],
    ["a non-negative number", z.object({ A: z.number().nonnegative().default(2).describe("d") }), ["| `A` | number ≥ 0 | `2` | d |"]],
    ["a boolean", z.object({ A: z.boolean().default(true).describe("d") }), ["| `A` | boolean | `true` | d |"]],
    ["an enum", z.object({ A: z.enum(["auto", "never"]).default("auto").describe("d") }), ["| `A` | one of `auto`, `never` | `auto` | d |"]],
    ["a list", z.object({ A: z.array(z.number().int()).default([12, 13]).describe("d") }), ["| `A` | list of integers | `[12, 13]` | d |"]],
    ["a list of strings", z.object({ A: z.array(z.string()).default(["a", "b"]).describe("d") }), ['| `A` | list of strings | `["a", "b"]` | d |']],
    ["a record", z.object({ A: z.record(z.string(), z.string()).default({}).describe("d") }), ["| `A` | mapping of string → string | `{}` | d |"]],
    ["optional, no default", z.object({ A: z.string().optional().describe("d") }), ["| `A` | string |  | d |"]],
    ["a pipe in a description is escaped", z.object({ A: z.boolean().default(false).describe("a | b") }), ["| `A` | boolean | `false` | a \\| b |"]],
    [
      "a nested object: its own row, then its keys",
      z.object({ N: z.object({ X: z.number().int().default(3).describe("x"), Y: z.string().optional().describe("y") }).default({ X: 3 }).describe("n") }),
      ["| `N` | mapping |  | n |", "| `N.X` | integer | `3` | x |", "| `N.Y` | string |  | y |"],
    ],
  ];
  for (const [name, schema, expected] of cases) test(name, () => expect(rows(configTable(schema))).toEqual(expected));

  test("a key without a description is an error that names it", () => {
    expect(() => configTable(z.object({ A: z.string().default("") }))).toThrow("configuration key A has no description");
    const nested = z.object({ N: z.object({ X: z.number() }).describe("n") });
    expect(() => configTable(nested)).toThrow("configuration key N.X has no description");
  });
});

describe("flagTable", () => {
  const flags: Record<string, FlagDoc> = {
    port: { type: "string", group: "server", arg: "N", defaultText: "8000", description: "TCP port" },
    spool: { type: "string", group: "htcondor", arg: "MODE", defaultText: "`auto` (config `Spool`)", description: "a | b" },
    help: { type: "boolean", short: "h", group: "other", description: "usage" },
  };
  test("the flags of the groups asked for, spelled as typed", () => {
    expect(rows(flagTable(flags, ["server", "other"]))).toEqual(["| `--port N` | `8000` | TCP port |", "| `-h, --help` |  | usage |"]);
  });
  test("a default with its own code spans is kept as written; pipes are escaped", () => {
    expect(rows(flagTable(flags, ["htcondor"]))).toEqual(["| `--spool MODE` | `auto` (config `Spool`) | a \\| b |"]);
  });
  test("a flag without a description is an error that names it, whatever the group asked for", () => {
    expect(() => flagTable({ ...flags, debug: { type: "string", group: "htcondor", description: "" } }, ["server"])).toThrow("flag --debug has no description");
  });
});

describe("fillMarkers", () => {
  const B = "<!-- BEGIN GENERATED t: edit the source named here, then run npm run docs -->";
  const E = "<!-- END GENERATED t -->";
  test("replaces what is between the markers and nothing else", () => {
    expect(fillMarkers(`before\n${B}\nold\nlines\n${E}\nafter\n`, { t: "new" })).toBe(`before\n${B}\nnew\n${E}\nafter\n`);
  });
  test("missing markers are an error", () => expect(() => fillMarkers("no markers", { t: "x" })).toThrow("missing the markers of t"));
});

describe("the repository's documentation", () => {
  test(`${CONFIGURATION_DOC} matches the code (run npm run docs when this fails)`, () => {
    const text = readFileSync(join(ROOT, CONFIGURATION_DOC), "utf8");
    expect(text).toBe(fillMarkers(text, generatedBlocks()));
  });
  test("every flag is in --help too", () => {
    for (const name of Object.keys(FLAGS)) expect(USAGE).toContain(`--${name}`);
  });
  test("every relative link points at an existing file and heading", () => {
    expect(brokenLinks(docFiles(ROOT), (p) => existsSync(join(ROOT, p)))).toEqual([]);
  });
});

describe("link checking", () => {
  test("GitHub's anchors", () => {
    const table: [string, string][] = [
      ["Conventions of every tool", "conventions-of-every-tool"],
      ["condor_rm, condor_hold, condor_release", "condor_rm-condor_hold-condor_release"],
      ["7. Serve with node:http", "7-serve-with-nodehttp"],
      ["The job's environment", "the-jobs-environment"],
      ["GET /getLogs", "get-getlogs"],
      ["`condor_q` -json", "condor_q--json"],
    ];
    for (const [heading, anchor] of table) expect(slug(heading)).toBe(anchor);
  });
  test("headings in code blocks are not anchors; repeated headings get -1", () => {
    expect([...anchors('# A\n```sh\n# not a heading\n```\n## A\n<a id="x"></a>\n')]).toEqual(["a", "a-1", "x"]);
  });
  test("a missing file, a missing heading and a link out of the repository are found; links in code and URLs are not checked", () => {
    const files = {
      "README.md": "[a](docs/x.md) [b](docs/y.md#nope) [c](#top) [d](../outside.md) `[e](nowhere.md)` [f](https://example.org/x)\n",
      "docs/y.md": "# Y\n",
    };
    expect(brokenLinks(files, () => false)).toEqual([
      "README.md:1: docs/x.md: no file docs/x.md",
      "README.md:1: docs/y.md#nope: no heading #nope in docs/y.md",
      "README.md:1: #top: no heading #top in README.md",
      "README.md:1: ../outside.md: points outside the repository",
    ]);
  });
});
