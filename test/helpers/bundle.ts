/**
 * The sidecar's sources as one bundled file for the tests, built once per change of the sources.
 *
 * The e2e tests start a sidecar for nearly every test, and the operator's tests start operators
 * again and again. From src/ each start transpiles every module: about 0.55 CPU-seconds and 560 ms
 * to listening here; the bundle starts in about 0.35 CPU-seconds and 410 ms. What it runs is what
 * ships: the executable is `bun build --compile` of the same entry (scripts/build.ts).
 *
 * `test/.build/sidecar/main.bun.js` (git-ignored, with its source map, so that stack traces name
 * src/ files) is built from src/main.bun.ts when missing or older than a file of src/, the lock file
 * or the repository's Bun; into a folder of its own, then renamed into place, so test processes that
 * build at once never run half a file. Run by test/preload.ts before any test, and by
 * `sidecarEntry()` for what runs outside `bun test` (the benchmark).
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const OUT = join(ROOT, "test", ".build", "sidecar");
export const BUNDLE = join(OUT, "main.bun.js");

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/** True when the bundle is there and nothing it is made of is newer. */
export function bundleFresh(): boolean {
  if (!existsSync(BUNDLE)) return false;
  const built = statSync(BUNDLE).mtimeMs;
  const inputs = [...filesUnder(join(ROOT, "src")), join(ROOT, "package-lock.json"), join(ROOT, "node_modules", ".bin", "bun")];
  return inputs.every((f) => !existsSync(f) || statSync(f).mtimeMs <= built);
}

/** Builds the bundle unless it is fresh; throws with Bun's output when the build fails. */
export function ensureBundled(): void {
  if (bundleFresh()) return;
  const tmp = `${OUT}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  const r = Bun.spawnSync(
    [process.execPath, "build", "--target=bun", "--format=esm", "--sourcemap=linked", join(ROOT, "src", "main.bun.ts"), "--outdir", tmp],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`the sidecar's test bundle: bun build failed:\n${r.stdout.toString()}${r.stderr.toString()}`);
  }
  mkdirSync(OUT, { recursive: true });
  // The map first: a bundle in place always finds a map at least as new as itself.
  renameSync(join(tmp, "main.bun.js.map"), `${BUNDLE}.map`);
  renameSync(join(tmp, "main.bun.js"), BUNDLE);
  rmSync(tmp, { recursive: true, force: true });
}

let checked = false;
/** The file that runs the sidecar's sources on Bun: the bundle, built first if stale (checked once per process). */
export function sidecarEntry(): string {
  if (!checked) ensureBundled();
  checked = true;
  return BUNDLE;
}

if (import.meta.main) ensureBundled();
