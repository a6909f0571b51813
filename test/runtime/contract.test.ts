// The runtime contract on Bun (the same cases run on Deno: contract.deno.ts).
import { test } from "bun:test";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { contractCases } from "./contract.ts";

for (const c of contractCases) test(`bun: ${c.name}`, () => c.run(bunRuntime), 15_000);
