// Flavors (docs/pod-to-job.md#flavors): job-level defaults a pod picks by annotation, by GPUs or
// by DefaultFlavor; checked from the config file's text through planJob to the submit file.
import { describe, expect, test } from "bun:test";
import { parseConfig, planConfig } from "../../src/config.ts";
import { expectConfigError } from "../fixtures/config.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import type { JobPlan } from "../../src/core/types.ts";
import { renderSubmit } from "../../src/render/submit.ts";
import { expectInvalid, type Json, makeCreateRequest } from "../fixtures/pods.ts";

const DIR = "/var/lib/htcondor-sidecar/pods/7c9e6679";

const SITE = `
Submit:
  Requirements: HasSingularity
  ExtraLines: {priority: 5}
  AccountingGroups: {physics: group_phys}
Flavors:
  big:
    Cpu: "3"
    Memory: 5Gi
    Requirements: Memory > 4096
    AccountingGroup: group_big
    ExtraLines: {"+SiteFlavor": '"big"'}
  gpu-a100:
    Cpu: 8
    Memory: 32Gi
    Gpus: 2
    Requirements: CUDACapability >= 8.0
  gpu-any:
    Gpus: 1
  small:
    Cpu: 500m
    Memory: 512Mi
DefaultFlavor: small
`;

function site(text = SITE) {
  return planConfig(parseConfig(text).config, false);
}

type Resources = Record<string, Record<string, string>>;

/** A pod of `containers` (name → resources), in `namespace`, with `annotations`. */
function pod(containers: Resources[] = [{}], annotations: Record<string, string> = {}, namespace = "default", init: Resources[] = []): Json {
  const c = (r: Resources, i: number, prefix: string) => ({ name: `${prefix}${i}`, image: "busybox", resources: r });
  const body = makeCreateRequest({
    metadata: { namespace, annotations },
    spec: { containers: containers.map((r, i) => c(r, i, "c")), initContainers: init.map((r, i) => c(r, i, "i")) },
  });
  return body;
}

function plan(body: Json, text = SITE): JobPlan {
  return planJob(parseCreateRequest(body), site(text));
}

describe("which flavor a pod gets", () => {
  test("the annotation names it", () => {
    const p = plan(pod([{}], { "htcondor-job.vk.io/flavor": "big" }));
    expect(p.resources).toEqual({ cpus: 3, memoryMiB: 5120, gpus: 0 });
  });
  test('the issue\'s example: big gives RequestCpus 3, RequestMemory 5120 and SiteFlavor = "big"', () => {
    const sub = renderSubmit(plan(pod([{}], { "htcondor-job.vk.io/flavor": "big" })), DIR);
    expect(sub).toContain("\nrequest_cpus = 3\n");
    expect(sub).toContain("\nrequest_memory = 5120M\n");
    expect(sub).toContain('\nMY.SiteFlavor = "big"\n');
  });
  test("a pod that requests GPUs gets the first flavor with Gpus, in the file's order", () => {
    const p = plan(pod([{ limits: { "nvidia.com/gpu": "1" } }]));
    expect(p.resources.cpus).toBe(8);
    expect(p.submit.requirements).toBe("(HasSingularity) && (CUDACapability >= 8.0)");
  });
  test('"first" is the file\'s order even for names JavaScript would sort first', () => {
    const text = "Flavors:\n  zeta: {Gpus: 1, Cpu: 2}\n  '10': {Gpus: 1, Cpu: 4}\n";
    expect(plan(pod([{ limits: { "nvidia.com/gpu": "1" } }]), text).resources.cpus).toBe(2);
  });
  test("otherwise DefaultFlavor", () => {
    expect(plan(pod()).resources).toEqual({ cpus: 1, memoryMiB: 512, gpus: 0 });
  });
  test("otherwise no flavor, as without Flavors", () => {
    const text = "Flavors:\n  big: {Cpu: 3}\n";
    expect(plan(pod(), text).resources).toEqual(plan(pod(), "").resources);
    expect(plan(pod([{ limits: { "nvidia.com/gpu": "1" } }]), text).resources).toEqual(plan(pod([{ limits: { "nvidia.com/gpu": "1" } }]), "").resources);
  });
  test("an unknown name is a 400 naming it, never the default (spec: the SLURM plugin falls back; we do not)", () => {
    const err = expectInvalid(() => plan(pod([{}], { "htcondor-job.vk.io/flavor": "bgi" })), 'metadata.annotations["htcondor-job.vk.io/flavor"]');
    expect(err.message).toContain('no flavor is named "bgi"; this site offers big, gpu-a100, gpu-any, small');
  });
});

describe("flavor amounts are job-level defaults", () => {
  const big = { "htcondor-job.vk.io/flavor": "big" };
  test("three containers with big get 3 CPUs, not 9", () => {
    expect(plan(pod([{}, {}, {}], big)).resources.cpus).toBe(3);
  });
  test("a container that sets cpu keeps the containers' sum for cpu; memory still comes from the flavor", () => {
    const p = plan(pod([{ requests: { cpu: "2" } }, {}], big));
    // 2 + the site default for the container that sets none (1).
    expect(p.resources.cpus).toBe(3);
    expect(plan(pod([{ requests: { cpu: "1" } }], big)).resources).toEqual({ cpus: 1, memoryMiB: 5120, gpus: 0 });
  });
  test("an init container that sets memory counts as the pod setting it", () => {
    // max(main: the 1Gi default, init: 1Gi), not the flavor's 5Gi.
    expect(plan(pod([{}], big, "default", [{ limits: { memory: "1Gi" } }])).resources.memoryMiB).toBe(1024);
  });
  test("GPUs from the flavor alone give --nv to the main containers, not the init containers", () => {
    const p = plan(pod([{}, {}], { "htcondor-job.vk.io/flavor": "gpu-any" }, "default", [{}]));
    expect(p.resources.gpus).toBe(1);
    expect(p.containers.map((c) => c.gpus)).toEqual([1, 1]);
    expect(p.initContainers.map((c) => c.gpus)).toEqual([0]);
  });
  test("GPUs from limits keep the per-container rule", () => {
    const p = plan(pod([{ limits: { "nvidia.com/gpu": "1" } }, {}], { "htcondor-job.vk.io/flavor": "gpu-a100" }));
    expect(p.resources.gpus).toBe(1);
    expect(p.containers.map((c) => c.gpus)).toEqual([1, 0]);
  });
});

describe("flavor policy", () => {
  const big = { "htcondor-job.vk.io/flavor": "big" };
  test("ExtraLines come after Submit.ExtraLines", () => {
    expect(plan(pod([{}], big)).submit.lines).toEqual([["priority", "5"], ["+SiteFlavor", '"big"']]);
  });
  test("AccountingGroup applies where Submit.AccountingGroups names no group for the namespace", () => {
    expect(plan(pod([{}], big, "default")).submit.accountingGroup).toBe("group_big");
  });
  test("a pod cannot leave its namespace's group by picking a flavor", () => {
    expect(plan(pod([{}], big, "physics")).submit.accountingGroup).toBe("group_phys");
  });
  test("Requirements are ANDed with Submit.Requirements", () => {
    expect(plan(pod([{}], big)).submit.requirements).toBe("(HasSingularity) && (Memory > 4096)");
    expect(plan(pod([{}], big), "Flavors:\n  big: {Requirements: HasGPU}\n").submit.requirements).toBe("HasGPU");
  });
});

describe("the Flavors map is checked at start, with the key's path", () => {
  const bad: [string, string][] = [
    ["Flavors:\n  Big: {Cpu: 1}\n", "SidecarConfig.yaml: Flavors.Big: a flavor name must be a DNS label"],
    ["Flavors:\n  big: {Cpus: 1}\n", "SidecarConfig.yaml: Flavors.big.Cpus: unknown key"],
    ["Flavors:\n  big: {Cpu: lots}\n", "SidecarConfig.yaml: Flavors.big.Cpu: is not a Kubernetes quantity"],
    ["Flavors:\n  big: {Memory: 5GB}\n", "SidecarConfig.yaml: Flavors.big.Memory: is not a Kubernetes quantity"],
    ["Flavors:\n  big: {Gpus: 1.5}\n", "SidecarConfig.yaml: Flavors.big.Gpus: "],
    ['Flavors:\n  big: {Requirements: "a \\\\"}\n', "SidecarConfig.yaml: Flavors.big.Requirements: must not end in '\\'"],
    ["Flavors:\n  big: {AccountingGroup: '\"g\"'}\n", "SidecarConfig.yaml: Flavors.big.AccountingGroup: must be a plain value"],
    ['Flavors:\n  big: {ExtraLines: {"+InterLinkPodUID": "1"}}\n', "SidecarConfig.yaml: Flavors.big.ExtraLines.+InterLinkPodUID: it is set by the sidecar"],
    [
      "Submit: {ExtraLines: {Priority: 1}}\nFlavors:\n  big: {ExtraLines: {priority: 2}}\n",
      "SidecarConfig.yaml: Flavors.big.ExtraLines.priority: is also set by Submit.ExtraLines",
    ],
    [
      'Submit: {ExtraLines: {"+Site": 1}}\nFlavors:\n  big: {ExtraLines: {"MY.Site": 2}}\n',
      "SidecarConfig.yaml: Flavors.big.ExtraLines.MY.Site: is also set by Submit.ExtraLines",
    ],
    ["Flavors:\n  big: {Cpu: 1}\nDefaultFlavor: huge\n", 'SidecarConfig.yaml: DefaultFlavor: no flavor is named "huge"'],
    ["Flavors: [big]\n", "SidecarConfig.yaml: Flavors: "],
  ];
  for (const [text, prefix] of bad) {
    test(JSON.stringify(text), () => {
      expectConfigError(text, prefix);
    });
  }
});
