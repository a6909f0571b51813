/**
 * shellcheck on the job wrapper: the library (src/render/wrapper-lib.bash) on its own, and the
 * job.sh rendered from each golden plan, since the library alone reads variables and calls
 * functions that only the plan defines. Run by .ci/run; exits 1 on any finding.
 *
 *   bun test/render/shellcheck.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { htcjobConfig, parseConfig } from "../../src/config.ts";
import { planHTCJob } from "../../src/operator/htcjob-plan.ts";
import { richPlanConfig } from "../fixtures/config.ts";
import { richCreateRequest } from "../fixtures/pods.ts";
import { jobScriptPlan, minimalPlan, richPlan } from "./plans.ts";

const LIBRARY = join(import.meta.dir, "../../src/render/wrapper-lib.bash");
const shellcheck = Bun.which("shellcheck");
if (!shellcheck) {
  console.error("shellcheck is not installed (Debian package: shellcheck)");
  process.exit(1);
}

const HTCJOB = {
  namespace: "default",
  name: "queue",
  uid: "5f0c9a2e-1b7d-4c11-9d3e-0a8e6c2b7f41",
  generation: 1,
  spec: { queue: 3, script: { image: "centos", command: "bash", source: "echo $1\n" } },
};

const dir = mkdtempSync(join(tmpdir(), "shellcheck-"));
try {
  const scripts: [string, string][] = [
    ["minimal.sh", renderWrapper(minimalPlan)],
    ["rich.sh", renderWrapper(richPlan)],
    ["rich-dummy.sh", renderWrapper({ ...richPlan, dummy: true })],
    ["jobscript.sh", renderWrapper(jobScriptPlan)],
    ["planned-rich.sh", renderWrapper(planJob(parseCreateRequest(richCreateRequest()), richPlanConfig()))],
    // An HTCJob's procs read their ProcId from the wrapper's arguments (docs/pod-to-job.md#an-htcjobs-procs).
    ["htcjob.sh", renderWrapper(planHTCJob(HTCJOB, richPlanConfig(), htcjobConfig(parseConfig("").config)))],
  ];
  const files = [LIBRARY];
  for (const [name, text] of scripts) {
    const path = join(dir, name);
    writeFileSync(path, text);
    files.push(path);
  }
  // Notes included: the library is small enough to keep free of every finding, or to say why not.
  const r = Bun.spawnSync([shellcheck, "--severity=style", "--format=gcc", ...files], { stdout: "pipe", stderr: "pipe" });
  const out = (r.stdout.toString() + r.stderr.toString()).trim();
  if (r.exitCode !== 0) {
    console.error(out || `shellcheck exited with ${r.exitCode}`);
    process.exit(1);
  }
  console.log(`shellcheck ok: ${files.map((f) => f.split("/").pop()).join(", ")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
