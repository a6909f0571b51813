// A burst of pings costs HTCondor one condor_status and one condor_q, not one per ping
// (docs/status.md#the-ping): 200 parallel pings were measured starting 200 of each, which
// starved the machine until the calls timed out and the ping answered 503.
import { describe, expect, test } from "bun:test";
import { eventually, runningTools, type Sidecar, sidecars } from "../helpers/sidecar.ts";

const PINGS = 200;
const { start } = sidecars();

/** Tool calls minicondor logged (one line per call that ended). */
const calls = (s: Sidecar, tool: string) => s.calls(tool).length;

describe("parallel pings share their HTCondor queries (docs/status.md#the-ping)", () => {
  test(`${PINGS} parallel pings with nothing followed start one condor_status and one condor_q`, async () => {
    const s = await start();
    const before = { status: calls(s, "condor_status"), q: calls(s, "condor_q") };
    const answers = await Promise.all(Array.from({ length: PINGS }, () => s.call("GET", "/status", [])));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body).status).toBe("ok");
    }
    // A condor_q still running when the pings answered is logged when it ends: waited for, until
    // none of the home's condor_status or condor_q runs any more.
    await eventually(
      () => (calls(s, "condor_q") > before.q && runningTools(s.home, "condor_status") + runningTools(s.home, "condor_q") === 0 ? true : undefined),
      30_000,
      "the pings' condor_status and condor_q to end",
    );
    expect(calls(s, "condor_status") - before.status).toBe(1);
    expect(calls(s, "condor_q") - before.q).toBe(1);
  }, 120_000);
});
