/** Entry point on Bun (and of the compiled single executable). */
import { bunRuntime } from "./runtime/bun.ts";
import { main } from "./main.ts";

await main(bunRuntime, process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
