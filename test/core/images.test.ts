// ImageOverrides (docs/pod-to-job.md#image-overrides): canonical references, prefixes, targets,
// and what the planner gives the runtime and the status.
import { describe, expect, test } from "bun:test";
import { parseConfig, planConfig } from "../../src/config.ts";
import { expectConfigError } from "../fixtures/config.ts";
import { canonicalImage, type ImageOverride, overrideImage, parseImageOverride } from "../../src/core/images.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { makeCreateRequest } from "../fixtures/pods.ts";

describe("canonicalImage", () => {
  const table: [string, string | undefined][] = [
    ["python:3.12-slim", "docker.io/library/python:3.12-slim"],
    ["docker.io/library/python:3.12-slim", "docker.io/library/python:3.12-slim"],
    ["docker://python:3.12-slim", "docker.io/library/python:3.12-slim"],
    ["index.docker.io/library/python:3.12-slim", "docker.io/library/python:3.12-slim"],
    ["python", "docker.io/library/python:latest"],
    ["jupyter/base-notebook", "docker.io/jupyter/base-notebook:latest"],
    ["ghcr.io/org/app:1.0", "ghcr.io/org/app:1.0"],
    ["localhost/app", "localhost/app:latest"],
    ["registry.local:5000/team/app", "registry.local:5000/team/app:latest"],
    ["busybox@sha256:" + "a".repeat(64), "docker.io/library/busybox@sha256:" + "a".repeat(64)],
    ["busybox:1.36@sha256:" + "b".repeat(64), "docker.io/library/busybox:1.36@sha256:" + "b".repeat(64)],
    ["Python:3", undefined],
    ["/cvmfs/unpacked.cern.ch/x", undefined],
    ["oras://ghcr.io/org/app:1", undefined],
    ["image.sif", undefined],
    ["busybox@sha256:short", undefined],
    ["", undefined],
  ];
  for (const [ref, want] of table) test(`${JSON.stringify(ref)} → ${want}`, () => expect(canonicalImage(ref)).toBe(want));
});

function overrides(entries: Record<string, string>): ImageOverride[] {
  return Object.entries(entries).map(([k, v]) => {
    const o = parseImageOverride(k, v);
    if ("problem" in o) throw new Error(o.problem);
    return o;
  });
}

describe("overrideImage", () => {
  const site = overrides({
    "python:3.12-slim": "/cvmfs/images/python-3.12.sif",
    "ghcr.io/org/*": "/cvmfs/unpacked.cern.ch/ghcr.io/org/*",
    "ghcr.io/org/special/*": "/cvmfs/special/*",
    "docker.io/*": "mirror.site.org/hub/*",
  });
  const table: [string, string | undefined][] = [
    ["python:3.12-slim", "/cvmfs/images/python-3.12.sif"],
    ["docker://docker.io/library/python:3.12-slim", "/cvmfs/images/python-3.12.sif"],
    ["ghcr.io/org/app:1.0", "/cvmfs/unpacked.cern.ch/ghcr.io/org/app:1.0"],
    ["ghcr.io/org/app", "/cvmfs/unpacked.cern.ch/ghcr.io/org/app:latest"],
    ["ghcr.io/org/special/x:2", "/cvmfs/special/x:2"],
    ["busybox:1.36", "mirror.site.org/hub/library/busybox:1.36"],
    ["ghcr.io/other/app:1", undefined],
    ["/abs/image.sif", undefined],
  ];
  for (const [image, want] of table) test(`${image} → ${want}`, () => expect(overrideImage(image, site)).toBe(want));
});

describe("ImageOverrides in the config file", () => {
  const bad: [string, string][] = [
    ['"Not a ref!": /x.sif', "SidecarConfig.yaml: ImageOverrides.Not a ref!: is not an image reference"],
    ["python: host", "SidecarConfig.yaml: ImageOverrides.python: the target is the host image: an override must not turn a container into a host command"],
    [
      'python: "host:site"',
      "SidecarConfig.yaml: ImageOverrides.python: the target is the host image: an override must not turn a container into a host command",
    ],
    ['"ghcr.io/org/*": /cvmfs/x.sif', "SidecarConfig.yaml: ImageOverrides.ghcr.io/org/*: a trailing '*' maps a prefix and must end both"],
    ['python: "/a b.sif"', "SidecarConfig.yaml: ImageOverrides.python: the target must not contain spaces"],
    ["python: relative.sif", "SidecarConfig.yaml: ImageOverrides.python: the target is neither an absolute path"],
    ['"*": "/cvmfs/*"', "SidecarConfig.yaml: ImageOverrides.*: is not the start of an image reference"],
  ];
  for (const [entry, prefix] of bad) {
    test(entry, () => {
      expectConfigError(`ImageOverrides:\n  ${entry}\n`, prefix);
    });
  }
});

describe("the planner", () => {
  const cfg = planConfig(
    parseConfig('ImageOverrides:\n  "python:3.12-slim": /cvmfs/images/python-3.12.sif\n  "ghcr.io/org/*": "registry.site/org/*"\n').config,
    false,
  );
  function plan(image: string, annotations: Record<string, string> = {}) {
    const body = makeCreateRequest({ metadata: { annotations }, spec: { containers: [{ name: "main", image }] } });
    return planJob(parseCreateRequest(body), cfg);
  }
  test("the runtime gets the target, the status the pod's image, and the wrapper never the original", () => {
    const p = plan("python:3.12-slim");
    expect(p.containers[0]!.image).toEqual({ kind: "container", uri: "/cvmfs/images/python-3.12.sif" });
    expect(p.containers[0]!.statusImage).toBe("docker://python:3.12-slim");
    expect(renderWrapper(p)).not.toContain("python:3.12-slim");
  });
  test("a reference target goes to the runtime as docker://", () => {
    expect(plan("ghcr.io/org/app:1").containers[0]!.image).toEqual({ kind: "container", uri: "docker://registry.site/org/app:1" });
  });
  test("the image-root annotation never prefixes an override's target", () => {
    const p = plan("python:3.12-slim", { "htcondor-job.vk.io/image-root": "/cvmfs/other" });
    expect(p.containers[0]!.image).toEqual({ kind: "container", uri: "/cvmfs/images/python-3.12.sif" });
  });
  test("an image no entry covers is planned as before, with no status image of its own", () => {
    const p = plan("busybox:1.36");
    expect(p.containers[0]!.image).toEqual({ kind: "container", uri: "docker://busybox:1.36" });
    expect(p.containers[0]!.statusImage).toBeUndefined();
  });
});
