// SidecarConfig.yaml: defaults, validation messages naming the key, warnings for unknown keys.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, planConfig } from "../src/config.ts";
import { expectConfigError } from "./fixtures/config.ts";
import { parseCreateRequest } from "../src/core/pod.ts";
import { planJob } from "../src/core/plan.ts";
import { renderSubmit } from "../src/render/submit.ts";
import { makeCreateRequest } from "./fixtures/pods.ts";

/** The pod folder a job is submitted from (its initialdir). */
const DIR = "/var/lib/htcondor-sidecar/pods/7c9e6679";

describe("parseConfig", () => {
  test("an empty file is all defaults", () => {
    const { config, warnings } = parseConfig("");
    expect(config.DataRootFolder).toBe("./data");
    expect(config.ExportPodData).toBe(true);
    expect(config.CommandPrefix).toBe("");
    expect(config.BodyLimit).toBe(64 * 1024 * 1024);
    expect(config.KeepAliveTimeoutSeconds).toBeGreaterThan(120);
    expect(config.Channels.HostImage).toBe(false);
    expect(config.Channels.PreExec).toBe(true);
    expect(config.Channels.JobScript).toBe(false);
    expect(warnings).toEqual([]);
  });
  test("the shipped SidecarConfig.yaml is valid and has no unknown keys", () => {
    const text = readFileSync(join(import.meta.dir, "../SidecarConfig.yaml"), "utf8");
    expect(parseConfig(text).warnings).toEqual([]);
  });
  test("unknown keys warn, at any depth", () => {
    const { warnings } = parseConfig("Foo: 1\nRestart:\n  MaxRestarts: 2\n  Bar: 3\n");
    expect(warnings).toEqual(["SidecarConfig.yaml: unknown key Foo (ignored)", "SidecarConfig.yaml: unknown key Restart.Bar (ignored)"]);
  });
  const bad: [string, string][] = [
    ["ExportPodData: maybe", "SidecarConfig.yaml: ExportPodData: "],
    ["Restart: {MaxRestarts: -1}", "SidecarConfig.yaml: Restart.MaxRestarts: "],
    ['SidecarId: "two words"', "SidecarConfig.yaml: SidecarId: must be 1-64"],
    ["KeepAliveTimeoutSeconds: 60", "SidecarConfig.yaml: KeepAliveTimeoutSeconds: must exceed interLink's 120 s"],
    ["Spool: sometimes", "SidecarConfig.yaml: Spool: "],
    ["- a\n- b", "SidecarConfig.yaml: must be a mapping"],
    ["DataRootFolder: [", "SidecarConfig.yaml: not valid YAML"],
    ["Channels: {SubmitOptions: request_disk}", "SidecarConfig.yaml: Channels.SubmitOptions: "],
    ["DefaultResources: {Memory: lots}", "SidecarConfig.yaml: DefaultResources.Memory: is not a Kubernetes quantity"],
    // Submit lines are checked by the submit renderer's own rule when the file loads, not at the
    // first create (docs/htcondor.md#submit-file-rules).
    ['Submit: {ExtraLines: {"+InterLinkPodUID": \'"x"\'}}', "SidecarConfig.yaml: Submit.ExtraLines.+InterLinkPodUID: it is set by the sidecar"],
    ['Submit: {ExtraLines: {"MY.InterLinkSidecarId": \'"x"\'}}', "SidecarConfig.yaml: Submit.ExtraLines.MY.InterLinkSidecarId: it is set by the sidecar"],
    ["Submit: {ExtraLines: {executable: /bin/sh}}", "SidecarConfig.yaml: Submit.ExtraLines.executable: it is set by the sidecar"],
    ['Submit: {ExtraLines: {"my key": 1}}', "SidecarConfig.yaml: Submit.ExtraLines.my key: not a submit command name"],
    ['Submit: {ExtraLines: {"+a.b": 1}}', "SidecarConfig.yaml: Submit.ExtraLines.+a.b: not a job attribute name"],
    ['Submit: {ExtraLines: {priority: "1\\nqueue 5"}}', "SidecarConfig.yaml: Submit.ExtraLines.priority: the value must not contain a line break or NUL"],
    // condor_submit would join the next line of the submit file onto this one (docs/threat-model.md#6-a-submit-value-ending-in--continues-onto-the-next-line).
    ['Submit: {ExtraLines: {rank: "1 \\\\ "}}', "SidecarConfig.yaml: Submit.ExtraLines.rank: the value must not end in '\\'"],
    ["Channels: {SubmitOptions: [priority, queue]}", "SidecarConfig.yaml: Channels.SubmitOptions.1: it is set by the sidecar"],
    // A users' allowlist never admits a command that makes condor_submit read or upload files of
    // the submit host (docs/threat-model.md#what-a-site-must-configure): the HTCJob original lost
    // its keytab that way.
    ["Channels: {SubmitOptions: [x509userproxy]}", "SidecarConfig.yaml: Channels.SubmitOptions.0: it names files or credentials of the submit host"],
    ["Channels: {SubmitOptions: [+PublicInputFiles]}", "SidecarConfig.yaml: Channels.SubmitOptions.0: it names files or credentials of the submit host"],
    ["HTCJob: {SubmitOptions: [transfer_plugins]}", "SidecarConfig.yaml: HTCJob.SubmitOptions.0: it names files or credentials of the submit host"],
    ["HTCJob: {SubmitOptions: [Output_Destination]}", "SidecarConfig.yaml: HTCJob.SubmitOptions.0: it names files or credentials of the submit host"],
    ["HTCJob: {SubmitOptions: [MY.ScitokensFile]}", "SidecarConfig.yaml: HTCJob.SubmitOptions.0: it names files or credentials of the submit host"],
  ];
  for (const [text, prefix] of bad) {
    test(`invalid: ${text.split("\n")[0]}`, () => {
      expectConfigError(text, prefix);
    });
  }
  // docs/container-runtimes.md#singularity-options: an entry no supported release registers for
  // the command the wrapper passes it to is refused when the file loads (docs/container-runtimes.md: --pid on
  // instance start); one that only some releases register loads with a warning naming them.
  const refusedOptions: [string, string][] = [
    ["--pid", "instance start"],
    ["-p", "instance start"],
    ["--sharens", "instance start"],
    ["--no-pid", "instance start"],
    ["--runscript-timeout", "instance start"],
    ["--no-such-flag", "instance start"],
    ["--bind=x", "instance start"],
    ["--force", "instance start"],
  ];
  for (const [flag, where] of refusedOptions) {
    test(`invalid: Channels.SingularityOptions [${flag}]`, () => {
      expectConfigError(
        `Channels: {SingularityOptions: [--writable-tmpfs, "${flag}"]}`,
        `SidecarConfig.yaml: Channels.SingularityOptions.1: no supported Apptainer or SingularityCE release accepts flag "${flag}" on ${where}`,
      );
    });
  }
  const optionWarnings: [string, string[]][] = [
    ["--writable-tmpfs", []],
    ["-B", []],
    ["--env", []],
    ["--pwd", []],
    ["--home", []],
    ["--no-home", []],
    ["--nv", []],
    ["--underlay", ['flag "--underlay" is refused by instance start of Apptainer 1.1.0-1.1.9; instance start of SingularityCE 3.10.0-4.5.1']],
    ["--oci", ['flag "--oci" is refused by instance start of Apptainer 1.1.0-1.5.3; instance start of SingularityCE 3.10.0-3.11.5']],
  ];
  for (const [flag, warnings] of optionWarnings) {
    test(`Channels.SingularityOptions [${flag}] loads${warnings.length ? " with a warning" : ""}`, () => {
      const { config, warnings: got } = parseConfig(`Channels: {SingularityOptions: ["${flag}"]}`);
      expect(config.Channels.SingularityOptions).toEqual([flag]);
      expect(got).toEqual(warnings.map((w) => `SidecarConfig.yaml: Channels.SingularityOptions: ${w}`));
    });
  }
  test('the shipped example ExtraLines ({"+ProjectName": \'"physics"\'}) loads and renders as MY.ProjectName', () => {
    const { config } = parseConfig(`Submit:\n  ExtraLines: {"+ProjectName": '"physics"'}\nChannels:\n  SubmitOptions: [+SingularityImage, priority]\n`);
    const p = planConfig(config, false);
    expect(p.extraSubmitLines).toEqual([["+ProjectName", '"physics"']]);
    const plan = planJob(parseCreateRequest(makeCreateRequest()), p);
    expect(renderSubmit(plan, DIR)).toContain('\nMY.ProjectName = "physics"\n');
  });
  test("planConfig maps the file onto the job-shaping settings", () => {
    const { config } = parseConfig("CommandPrefix: 'module load x'\nSubmit:\n  ExtraLines: {priority: 5}\n  AccountingGroups: {physics: group_phys}\n");
    const p = planConfig(config, true);
    expect(p.commandPrefix).toBe("module load x");
    expect(p.extraSubmitLines).toEqual([["priority", "5"]]);
    expect(p.accountingGroups).toEqual({ physics: "group_phys" });
    expect(p.dummyJob).toBe(true);
    expect(p.sharedFilesystem).toBe(false);
    expect(planConfig(parseConfig("SharedFilesystem: true").config, false).sharedFilesystem).toBe(true);
    expect(p.allowJobScript).toBe(false);
    expect(planConfig(parseConfig("Channels:\n  JobScript: true").config, false).allowJobScript).toBe(true);
  });
});
