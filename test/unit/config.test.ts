// SidecarConfig.yaml: defaults, validation messages naming the key, warnings for unknown keys.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, parseConfig, planConfig } from "../../src/config.ts";

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
    expect(warnings).toEqual([]);
  });
  test("the shipped SidecarConfig.yaml is valid and has no unknown keys", () => {
    const text = readFileSync(join(import.meta.dir, "../../SidecarConfig.yaml"), "utf8");
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
  ];
  for (const [text, prefix] of bad) {
    test(`invalid: ${text.split("\n")[0]}`, () => {
      let err: unknown;
      try {
        parseConfig(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message.startsWith(prefix)).toBe(true);
      expect((err as Error).message).not.toContain("\n");
    });
  }
  test("planConfig maps the file onto the job-shaping settings", () => {
    const { config } = parseConfig("CommandPrefix: 'module load x'\nSubmit:\n  ExtraLines: {priority: 5}\n  AccountingGroups: {physics: group_phys}\n");
    const p = planConfig(config, true);
    expect(p.commandPrefix).toBe("module load x");
    expect(p.extraSubmitLines).toEqual([["priority", "5"]]);
    expect(p.accountingGroups).toEqual({ physics: "group_phys" });
    expect(p.dummyJob).toBe(true);
  });
});
