/** Golden files: compare, or rewrite them with UPDATE_GOLDEN=1. */
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const GOLDEN_DIR = join(import.meta.dir, "golden");

export function expectGolden(name: string, actual: string): void {
  const path = join(GOLDEN_DIR, name);
  if (process.env.UPDATE_GOLDEN === "1") {
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path)) throw new Error(`Golden file ${path} is missing: run the tests with UPDATE_GOLDEN=1`);
  expect(actual).toBe(readFileSync(path, "utf8"));
}
