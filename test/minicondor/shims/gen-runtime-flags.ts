/**
 * Writes runtime-flags.tsv, the shim's copy of the flag rows of src/core/runtime-flags.ts
 * (docs/container-runtimes.md): `bun test/minicondor/shims/gen-runtime-flags.ts`.
 * test/minicondor/shims.test.ts fails when the file is out of date.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { RUNTIME_FLAGS_TSV, RUNTIME_RELEASES } from "../../../src/core/runtime-flags-data.ts";

/** The file's text: one `#releases` line per flavour, then the rows. */
export function shimFlagsFile(): string {
  const head = Object.entries(RUNTIME_RELEASES).map(([flavour, releases]) => `#releases\t${flavour}\t${releases.join(" ")}\n`).join("");
  return head + RUNTIME_FLAGS_TSV.replace(/^\n/, "");
}

export const SHIM_FLAGS_PATH = join(import.meta.dir, "runtime-flags.tsv");

if (import.meta.main) writeFileSync(SHIM_FLAGS_PATH, shimFlagsFile());
