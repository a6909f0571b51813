// condor_q with a -name that does not resolve (docs/htcondor.md#a-schedd-name-without--is-a-host-name):
// queue.cpp prints "Error: unknown host <name>", an empty line on stdout and its advice wrapped by
// print_wrapped_text at 78 columns, and exits 1 before asking anything. minicondor's names that
// do not resolve are those under .invalid (RFC 6761).
import { afterAll, expect, test } from "bun:test";
import { cleanup, createHome, runTool } from "./src/testkit.ts";
import { wrappedText } from "./src/common.ts";
import { measureLoad, scaled, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

const home = createHome({ scheddIdleExitMs: 1500 });
afterAll(() => cleanup(home, true), TEARDOWN_TIMEOUT_MS);

test("condor_q -name nosuchhost.invalid: unknown host, in condor_q's words", async () => {
  expect(await runTool(home, "condor_q", ["-name", "nosuchhost.invalid", "-af", "ClusterId"], { env: { MINICONDOR_ALLOW_ROOT: "1" } })).toEqual({
    code: 1,
    stdout: "\n",
    stderr: "Error: unknown host nosuchhost.invalid\n" +
      "Extra Info: The name given with the -name should be the name of a \n" +
      'condor_schedd process. Normally it is either a hostname, or "name@hostname". \n' +
      "In either case, the hostname should be the Internet host name, but it appears \n" +
      "that it wasn't. \n",
  });
}, scaled(60_000));

test("a name with @ is not resolved: the collector is asked, and has no such schedd", async () => {
  const r = await runTool(home, "condor_q", ["-name", "sched@nosuchhost.invalid", "-af", "ClusterId"], { env: { MINICONDOR_ALLOW_ROOT: "1" } });
  expect(r).toEqual({ code: 1, stdout: "", stderr: "Error: Collector has no record of schedd/submitter\n" });
}, scaled(60_000));

test.each([
  ["short words", "a b c", 78, "a b c \n"],
  ["a word that would reach the last column starts a new line", "aaaa bbbb", 8, "aaaa \nbbbb \n"],
  ["tabs and runs of spaces are one separator", "a\t  b", 78, "a b \n"],
])("print_wrapped_text: %s", (_what, text, width, out) => {
  expect(wrappedText(text, width)).toBe(out);
}, scaled(60_000));
