/** Entry point on Deno: the same sources, the Deno runtime adapter. */
import { denoRuntime } from "./runtime/deno.ts";
import { main } from "./main.ts";

const enc = new TextEncoder();
await main(denoRuntime, Deno.args, {
  out: (line) => void Deno.stdout.writeSync(enc.encode(`${line}\n`)),
  err: (line) => void Deno.stderr.writeSync(enc.encode(`${line}\n`)),
});
