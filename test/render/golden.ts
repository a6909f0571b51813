/** Golden files: compare, or rewrite them with UPDATE_GOLDEN=1; and reading a rendered submit file back. */
import { expect } from "bun:test";
import { WRAPPER_LIB } from "../../src/render/wrapper.ts";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const GOLDEN_DIR = join(import.meta.dir, "golden");

export function expectGolden(name: string, actual: string, dir = GOLDEN_DIR): void {
  const path = join(dir, name);
  if (process.env.UPDATE_GOLDEN === "1") {
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path)) throw new Error(`Golden file ${path} is missing: run the tests with UPDATE_GOLDEN=1`);
  expect(actual).toBe(readFileSync(path, "utf8"));
}

/** The commands of a rendered submit file as [key, value] (comments, blank lines and queue dropped). */
export function submitCommands(text: string): [string, string][] {
  return text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#") && l !== "queue 1")
    .map((l) => {
      const i = l.indexOf(" = ");
      return [l.slice(0, i), l.slice(i + 3)];
    });
}

/** Where {@link perPodPart} leaves the library out. */
export const LIBRARY_MARK = "# ---- src/render/wrapper-lib.bash (the constant library) goes here ----\n";

/**
 * The part of a rendered wrapper that depends on the plan: the library, the same for every pod
 * and checked by shellcheck as a file of its own, is replaced by one line. It must appear once.
 */
export function perPodPart(script: string): string {
  const at = script.indexOf(WRAPPER_LIB);
  expect(at).toBeGreaterThan(0);
  expect(script.indexOf(WRAPPER_LIB, at + 1)).toBe(-1);
  return script.slice(0, at) + LIBRARY_MARK + script.slice(at + WRAPPER_LIB.length);
}
