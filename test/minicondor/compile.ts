/**
 * The emulator's tools as one compiled program, built once per change of its sources.
 *
 * Every condor_q, condor_submit or condor_chirp the sidecar, a job or a test runs is a new process.
 * From the sources each one costs Bun's start, the transpiling of src/ and the bash script's forks
 * (about 100 ms of CPU here); the compiled program, started by its bin script without a fork,
 * costs about half. The suite makes thousands of these calls, on two cores, so the half counts.
 *
 * `.build/minicondor` (git-ignored) is built from src/main.ts with `bun build --compile --bytecode`
 * when missing or older than a source or the repository's Bun, into a temporary name renamed into place, so test processes
 * that build at once never run half a file. The bin scripts use it only while nothing of
 * those is newer (a bash test, no process), else they run the sources, as they do when `$MINICONDOR_BUN` names
 * another Bun. Run by test/preload.ts before any test; `bun test/minicondor/compile.ts` by hand.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

const ROOT = import.meta.dir;
const SRC = join(ROOT, "src");
export const COMPILED = join(ROOT, ".build", "minicondor");

/** The repository's Bun (node_modules/.bin/bun), whose runtime the compiled program carries. */
const BUN = join(ROOT, "..", "..", "node_modules", ".bin", "bun");

/**
 * True when the compiled program is there and neither a source nor the repository's Bun is newer
 * than it (the bin scripts' test): a Bun installed since would otherwise go unused by the tools.
 */
export function compiledFresh(): boolean {
  if (!existsSync(COMPILED)) return false;
  const built = statSync(COMPILED).mtimeMs;
  const inputs = [...readdirSync(SRC).filter((f) => f.endsWith(".ts")).map((f) => join(SRC, f)), BUN];
  return inputs.every((f) => !existsSync(f) || statSync(f).mtimeMs <= built);
}

/** Builds the compiled program unless it is fresh; throws with Bun's output when the build fails. */
export function ensureCompiled(): void {
  if (compiledFresh()) return;
  mkdirSync(join(ROOT, ".build"), { recursive: true });
  const tmp = `${COMPILED}.${process.pid}.tmp`;
  const r = Bun.spawnSync([process.execPath, "build", "--compile", "--bytecode", join(SRC, "main.ts"), "--outfile", tmp], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`minicondor: bun build --compile failed:\n${r.stdout.toString()}${r.stderr.toString()}`);
  }
  renameSync(tmp, COMPILED);
}

if (import.meta.main) ensureCompiled();
