// Several schedds (docs/schedds.md): the configuration's rules, what the ping counts, the metrics'
// schedd label, and condor_history's answer for a schedd that is down
// (docs/htcondor.md#several-schedds-in-one-pool).
import { describe, expect, test } from "bun:test";
import { parseConfig } from "../../src/config.ts";
import { createCondor } from "../../src/condor/tools.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { createSidecarMetrics } from "../../src/core/metrics.ts";
import { condorAccess, parseCli } from "../../src/flags.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import type { Runtime, SpawnResult } from "../../src/runtime/types.ts";
import { scheddJid, sumResources } from "../../src/service/schedds.ts";

describe("Schedds in SidecarConfig.yaml", () => {
  test("absent: an empty list, so a configuration from before loads as it did", () => {
    expect(parseConfig("Spool: never\n").config.Schedds).toEqual([]);
  });

  test("an entry's defaults", () => {
    expect(parseConfig('Schedds:\n  - Name: "a@h"\n').config.Schedds).toEqual([{ Name: "a@h", Pool: "", Weight: 1, ExtraLines: {} }]);
  });

  test.each([
    [
      "two entries naming one schedd (names compare without case)",
      'Schedds:\n  - Name: "a@h"\n  - Name: "A@H"\n',
      'Schedds.1.Name: names the same schedd as Schedds.0 ("A@H")',
    ],
    ["a weight of 0", 'Schedds:\n  - Name: "a@h"\n    Weight: 0\n', "Schedds.0.Weight:"],
    ["an unknown key", 'Schedds:\n  - Name: "a@h"\n    Wieght: 2\n', "Schedds.0.Wieght: unknown key"],
    [
      "a line Submit.ExtraLines also sets",
      'Submit:\n  ExtraLines:\n    accounting_group: "x"\nSchedds:\n  - Name: "a@h"\n    ExtraLines:\n      Accounting_Group: "y"\n',
      "Schedds.0.ExtraLines.Accounting_Group: is also set by Submit.ExtraLines",
    ],
  ])("refused: %s", (_what, text, message) => {
    expect(() => parseConfig(text)).toThrow(message);
  });
});

describe("the ping over several schedds", () => {
  const res = (cpu: number, memMi: number, gpus: number) => ({
    cpu: String(cpu),
    memory: `${memMi}Mi`,
    pods: "1000",
    accelerators: [{ resourceType: "nvidia.com/gpu", available: String(gpus) }],
  });

  test("the resources of the schedds that answer, each pool once, within the node's caps", () => {
    expect(sumResources([{ pool: "a", resources: res(8, 100, 1) }, { pool: "a", resources: res(8, 100, 1) }, { pool: "b", resources: res(4, 50, 0) }], {}))
      .toEqual(res(12, 150, 1));
    expect(sumResources([{ pool: "a", resources: res(8, 100, 1) }, { pool: "b", resources: res(4, 50, 2) }], { Cpu: "10", Gpus: 2 })).toEqual(res(10, 150, 2));
    expect(sumResources([{ pool: "a" }], {})).toBeUndefined();
  });

  test("a PodJID names the schedd, as a GlobalJobId begins", () => {
    expect(scheddJid("second@h", "1.0")).toBe("second@h#1.0");
    expect(scheddJid("second@h", "")).toBe("");
  });
});

describe("metrics with several schedds (docs/metrics.md)", () => {
  const view = (schedds?: { name: string; up: boolean }[]) => () => ({
    pods: {},
    failures: { schedd: 0, collector: 0 },
    threshold: 3,
    snapshotAgeSeconds: 0,
    schedds,
    rss: 1,
    startTime: 1,
  });

  test("each condor metric gains the schedd label; one up gauge per schedd", () => {
    const m = createSidecarMetrics(view([{ name: "a@h", up: true }, { name: "b@h", up: false }]));
    m.command("condor_q", "ok", 0.2, "a@h");
    const t = m.render();
    expect(t).toContain('htcondor_sidecar_condor_commands_total{tool="condor_q",outcome="ok",schedd="a@h"} 1');
    expect(t).toContain('htcondor_sidecar_condor_command_duration_seconds_count{tool="condor_q",schedd="a@h"} 1');
    expect(t).toContain('htcondor_sidecar_schedd_up{schedd="a@h"} 1\nhtcondor_sidecar_schedd_up{schedd="b@h"} 0');
  });

  test("one schedd: the series as before, no up gauge per schedd", () => {
    const m = createSidecarMetrics(view());
    m.command("condor_q", "ok", 0.2);
    const t = m.render();
    expect(t).toContain('htcondor_sidecar_condor_commands_total{tool="condor_q",outcome="ok"} 1');
    expect(t).not.toMatch(/^htcondor_sidecar_schedd_up\{/m);
  });
});

describe("condor_history of a schedd that is down (docs/htcondor.md#several-schedds-in-one-pool)", () => {
  test("exit 0 with no ads but its line on stderr is a failure, never 'no such job'", async () => {
    const runtime = {
      spawn: (): Promise<SpawnResult> =>
        Promise.resolve({
          code: 0,
          signal: null,
          stdout: "",
          stdoutBytes: new Uint8Array(),
          stderr: "Unable to locate remote schedd (name=second@localhost, pool=).\n",
          timedOut: false,
          durationMs: 1,
        }),
    } as unknown as Runtime;
    const cli = parseCli(["--schedd-name", "second@localhost"]);
    if (cli.kind !== "run") throw new Error("not a run");
    const condor = createCondor({
      runtime,
      bin: "/b",
      access: condorAccess(cli.options, "localhost"),
      baseEnv: {},
      submitTimeoutMs: 1000,
      queryTimeoutMs: 1000,
      log: memoryLogger(),
    });
    const err = await condor.history({ ids: [{ cluster: 1, proc: 0 }], attributes: ["JobStatus"], limit: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SidecarError);
    expect((err as SidecarError).message).toContain("Unable to locate remote schedd (name=second@localhost, pool=).");
  });
});
