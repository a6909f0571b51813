// Before any test file: the emulator's tools compiled once for the run (test/minicondor/compile.ts).
import { ensureCompiled } from "./minicondor/compile.ts";

ensureCompiled();
