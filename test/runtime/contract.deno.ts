// The runtime contract on Deno: `deno test -A test/runtime/contract.deno.ts`.
import { denoRuntime } from "../../src/runtime/deno.ts";
import { contractCases } from "./contract.ts";

for (const c of contractCases) Deno.test(`deno: ${c.name}`, () => c.run(denoRuntime));
