// Several schedds (docs/schedds.md): the configuration's rules, what the ping counts, the metrics'
// schedd label, and condor_history's answer for a schedd that is down
// (docs/htcondor.md#several-schedds-in-one-pool).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../src/config.ts";
import { createCondor } from "../../src/condor/tools.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { createSidecarMetrics } from "../../src/core/metrics.ts";
import { condorAccess, parseCli } from "../../src/flags.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import type { Runtime, SpawnResult } from "../../src/runtime/types.ts";
import { claimDataRoot, type Member, sameSchedd } from "../../src/service/schedd-setup.ts";
import { sumResources } from "../../src/service/schedds.ts";
import type { Prepared } from "../../src/mode-setup.ts";

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

// docs/configuration.md#spool-auto-is-the-schedd-on-this-host: `auto` spools when the schedd is on another
// host, and the host is what HTCondor takes from a daemon's name: after the last "@"
// (get_host_part), the whole name without one.
describe("Spool auto: whether a schedd is on this host", () => {
  const remote = (name: string, localHost = "node1.example.org") => {
    const cli = parseCli(["--schedd-name", name]);
    if (cli.kind !== "run") throw new Error(cli.kind);
    return condorAccess(cli.options, localHost).remoteSchedd;
  };
  test.each([
    ["peer@localhost", false],
    ["second@localhost", false],
    ["x@LOCALHOST", false],
    ["localhost", false],
    ["x@127.0.0.1", false],
    ["x@node1", false],
    ["x@node1.example.org", false],
    ["node1.example.org", false],
    ["Node1", false],
    ["<127.0.0.1:9618?addrs=127.0.0.1-9618&sock=schedd_1_1>", false],
    ["x@ap1.example.org", true],
    ["ap1.example.org", true],
    ["node1@ap1.example.org", true],
    ["<10.0.0.5:9618?addrs=10.0.0.5-9618>", true],
    ["x@node10", true],
  ])("%s: remote %p", (name, expected) => {
    expect(remote(name)).toBe(expected);
  });
  test("a --schedd-host is a host as before", () => {
    const cli = parseCli(["--schedd-host", "localhost:9618"]);
    if (cli.kind !== "run") throw new Error(cli.kind);
    expect(condorAccess(cli.options, "node1").remoteSchedd).toBe(false);
  });
});

// docs/schedds.md#each-data-folder-holds-one-schedds-pods
describe("the data folder's schedd", () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  /** Members as start-up makes them, the first keeping `root` (DataRootFolder). */
  const membersOf = (names: string[]): Member[] => {
    const root = mkdtempSync(join(tmpdir(), "sidecar-claim-"));
    dirs.push(root);
    const prepared = { dataRoot: root } as Prepared;
    return names.map((name, i) => ({ name, prepared, root: i === 0 ? root : join(root, "schedds", name), label: `--schedd-name ${name}`, jidPrefix: "" }));
  };
  const claim = (m: Member) => readFileSync(join(m.root, "schedd"), "utf8");

  test("written with one schedd too, for HTCondor's default schedd as for a named one; an empty folder is the first entry's", () => {
    for (const names of [[""], ["ap1"], ["ap1", "second@ap1"]]) {
      const ms = membersOf(names);
      claimDataRoot(ms[0]!, ms, 0, "node1");
      expect(claim(ms[0]!)).toBe(`${names[0]}\n`);
      // and checked at the next start
      claimDataRoot(ms[0]!, ms, 3, "node1");
    }
  });

  test("a folder from before the file, with pods: the configured schedd's when there is one, refused with a list", () => {
    const one = membersOf(["ap1"]);
    claimDataRoot(one[0]!, one, 3, "node1");
    expect(claim(one[0]!)).toBe("ap1\n");
    const list = membersOf(["ap1", "second@ap1"]);
    expect(() => claimDataRoot(list[0]!, list, 3, "node1")).toThrow(
      /holds 3 pods of a version that did not record their schedd, which the list cannot tell: start once as before, with that schedd alone/,
    );
    expect(existsSync(join(list[0]!.root, "schedd"))).toBe(false);
  });

  test.each([
    [
      "the new schedd first",
      "",
      ["second@localhost", "localhost"],
      'keep "localhost" (the schedd of the data folder) first in Schedds and add "second@localhost" after it',
    ],
    ["the list reordered", "a@h\n", ["b@h", "a@h", "c@h"], 'keep "a@h" (the schedd of the data folder) first in Schedds and add "b@h", "c@h" after it'],
    [
      "the folder's schedd left out",
      "a@h\n",
      ["b@h", "c@h"],
      'holds the pods of schedd "a@h", not of schedd "b@h" (job ids are per schedd): list that schedd first',
    ],
    ["another --schedd-name", "a@h\n", ["b@h"], 'start with that schedd as before (--schedd-name a@h), or list it first in Schedds and "b@h" after it'],
    [
      "a name after HTCondor's default schedd",
      "",
      ["other.example.org"],
      'holds the pods of HTCondor\'s default schedd (no --schedd-name), not of schedd "other.example.org"',
    ],
    [
      "HTCondor's default schedd after a named one",
      "a@h\n",
      [""],
      'no --schedd-name: the data folder ${root} holds the pods of schedd "a@h", not of HTCondor\'s default schedd (no --schedd-name) (job ids are per schedd): start with that schedd as before (--schedd-name a@h); if both',
    ],
  ])("refused: %s", (_what, owner, names, message) => {
    const ms = membersOf(names);
    writeFileSync(join(ms[0]!.root, "schedd"), owner);
    expect(() => claimDataRoot(ms[0]!, ms, 0, "node1")).toThrow(message.replace("${root}", ms[0]!.root));
    expect(claim(ms[0]!)).toBe(owner);
  });

  test.each([
    ["a@h", "A@H", true],
    ["", "localhost", true],
    ["node1", "", true],
    ["", "node1.example.org", true],
    ["", "second@node1", false],
    ["", "other.example.org", false],
    ["", "<127.0.0.1:9618>", false],
    ["a@h", "b@h", false],
  ])("%p and %p name one schedd: %p", (a, b, same) => {
    expect(sameSchedd(a, b, "node1.example.org")).toBe(same);
  });
});
