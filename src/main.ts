/**
 * The executable's one entry (main.bun.ts and main.deno.ts call it with their runtime): picks the
 * mode from the first argument. `operator` and `htcjob` are the HTCJob operator's
 * (docs/operator.md#running-it); anything else is the sidecar's flags. What the modes share at
 * start, and how a mode ends (exit codes, signals), is in mode-setup.ts.
 */
import { htcjobMode, operatorMode } from "./operator/main.ts";
import type { Runtime } from "./runtime/types.ts";
import { sidecarMode } from "./service/main.ts";
import { type Io, runMode } from "./mode-setup.ts";

export async function main(runtime: Runtime, argv: readonly string[], io: Io): Promise<void> {
  const [first, ...rest] = argv;
  if (first === "operator") return await runMode(runtime, io, () => operatorMode(runtime, rest, io));
  if (first === "htcjob") return await runMode(runtime, io, () => htcjobMode(runtime, rest, io));
  return await runMode(runtime, io, () => sidecarMode(runtime, argv, io));
}
