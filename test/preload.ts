// Before any test file: the emulator's tools compiled once for the run (test/minicondor/compile.ts),
// and the sidecar's sources bundled (test/helpers/bundle.ts), each only when its sources changed.
import { ensureBundled } from "./helpers/bundle.ts";
import { ensureCompiled } from "./minicondor/compile.ts";

ensureCompiled();
ensureBundled();
