/**
 * Fails when process-spawning APIs leak out of their layers (DESIGN.md "Data flows one way"):
 * only src/runtime/ may import or reference them, and only src/condor/ may call runtime.spawn.
 * The sidecar never runs a shell and never builds a command line from a string.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const SPAWN_APIS = [/\bnode:child_process\b/, /\bchild_process\b/, /\bBun\.spawn(Sync)?\b/, /\bDeno\.Command\b/, /\bDeno\.run\b/, /\bexecSync\b/, /\bexecFile\b/];
const SPAWN_CALLS = [/\.spawn\(/, /\.spawnStream\(/];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const root = join(import.meta.dir, "..");
const problems: string[] = [];
for (const file of walk(join(root, "src"))) {
  const rel = relative(root, file);
  const text = readFileSync(file, "utf8");
  if (!rel.startsWith("src/runtime/") && SPAWN_APIS.some((re) => re.test(text))) problems.push(`${rel}: uses a process-spawning API outside src/runtime/`);
  if (!rel.startsWith("src/runtime/") && !rel.startsWith("src/condor/") && SPAWN_CALLS.some((re) => re.test(text))) {
    problems.push(`${rel}: calls runtime.spawn outside src/condor/`);
  }
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("boundaries ok: process APIs only in src/runtime/, spawn calls only in src/condor/");
