// The planner and the renderers together: a create request as interLink sends it
// (docs/interlink.md#post-create), planned with a site config, rendered into the submit file and
// the wrapper. The other golden files come from hand-built plans, so only these catch a plan the
// renderers refuse or misread.
import { describe, expect, test } from "bun:test";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import { renderSubmit } from "../../src/render/submit.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { richPlanConfig } from "../fixtures/config.ts";
import { richCreateRequest } from "../fixtures/pods.ts";
import { expectGolden, perPodPart, submitCommands as commands } from "./golden.ts";

/** The pod folder a job is submitted from (its initialdir). */
const DIR = "/var/lib/htcondor-sidecar/pods/7c9e6679";

const plan = () => planJob(parseCreateRequest(richCreateRequest()), richPlanConfig());

describe("planJob → renderSubmit / renderWrapper (the rich example and its site config)", () => {
  test("the submit file (golden)", () => expectGolden("planned-rich.sub", renderSubmit(plan(), DIR)));

  // The library is the same for every pod (wrapper-lib.bash): this golden is the plan part.
  test("the wrapper's plan section (golden)", () => expectGolden("planned-rich.plan.sh", perPodPart(renderWrapper(plan()))));

  // docs/htcondor.md#submit-file-rules: `+X` is written `MY.X`; the site's line comes first, then
  // the pod's.
  test("site ExtraLines and allowlisted submit-options with + reach the submit file as MY.", () => {
    const cmds = commands(renderSubmit(plan(), DIR));
    const tail = cmds.slice(cmds.findIndex(([k]) => k === "MY.SiteFlavour"));
    expect(tail).toEqual([
      ["MY.SiteFlavour", '"test"'],
      ["MY.SingularityImage", '"/cvmfs/img"'],
      ["request_walltime", "3600"],
    ]);
    expect(cmds.filter(([k]) => k.startsWith("+"))).toEqual([]);
  });

  test("no env value or secret of the request reaches either file", () => {
    const p = plan();
    const both = renderSubmit(p, DIR) + renderWrapper(p);
    for (const secret of ["admin", "p@ss w0rd", "eyJhbGciOiJSUzI1NiJ9", "hello $(POD_NAME)"]) expect(both).not.toContain(secret);
  });
});
