// interLink's jobScript (docs/interlink.md#the-create-request) as the planner takes it: a
// deliberate code channel, off unless the site turns it on (docs/threat-model.md#deliberate-code-channels),
// shipped as a 0700 file that the job runs instead of the containers (docs/pod-to-job.md#the-job-script).
import { describe, expect, test } from "bun:test";
import { JOB_SCRIPT_FILE, scriptCanReceive } from "../../src/core/job-script.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import { BASH_OWN_VARIABLES, type JobPlan, type PlanConfig } from "../../src/core/types.ts";
import { renderSubmit } from "../../src/render/submit.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { richPlanConfig, testPlanConfig } from "../fixtures/config.ts";
import { dataEntry, expectInvalid, type Json, makeCreateRequest, richCreateRequest, secretObject } from "../fixtures/pods.ts";

const SCRIPT = "#!/bin/bash\n# pasted by a JobScriptTemplate: {{.Pod.Name}} → web-1; $(rm -rf ~) 'quotes' \"too\"\necho from the script\n";
const ON: Partial<PlanConfig> = { allowJobScript: true };

function plan(req: Json, cfg: Partial<PlanConfig> = ON): JobPlan {
  return planJob(parseCreateRequest(req), testPlanConfig(cfg));
}

describe("the channel", () => {
  test("off by default: a create with a script is refused, naming the setting that turns it on", () => {
    const err = expectInvalid(() => plan(makeCreateRequest({ jobScript: SCRIPT }), {}), 'pod "default/web-1": jobScript: interLink sent a job script');
    expect(err.message).toContain("set Channels.JobScript: true in the sidecar's SidecarConfig.yaml");
    // The reason never shows the script: a template can paste the pod's data into it.
    expect(err.message).not.toContain("from the script");
  });

  test("no script, an empty one (what Go's omitempty leaves out) or a blank one: the containers run, channel on or off", () => {
    for (const jobScript of [undefined, "", " \n\t"]) {
      for (const cfg of [{}, ON]) {
        const p = plan(makeCreateRequest(jobScript === undefined ? {} : { jobScript }), cfg);
        expect([jobScript, p.jobScript, p.files.map((f) => f.path)]).toEqual([jobScript, undefined, ["env/c.main.env"]]);
      }
    }
  });
});

describe("with the channel on", () => {
  test("the script is a 0700 secret file of the pod, byte for byte, shipped with the job, and the wrapper runs it", () => {
    const p = plan(makeCreateRequest({ jobScript: SCRIPT }));
    expect(p.jobScript).toBe(JOB_SCRIPT_FILE);
    const file = p.files.find((f) => f.path === JOB_SCRIPT_FILE)!;
    expect({ ...file, content: new TextDecoder().decode(file.content) }).toEqual({ path: "job-script.sh", content: SCRIPT, mode: 0o700, secret: true });
    expect(p.transferInput).toEqual(["env", "job-script.sh"]);
  });

  test("containers are still planned: env files and volume data ship for the script to use", () => {
    const req = makeCreateRequest({
      jobScript: SCRIPT,
      spec: {
        volumes: [{ name: "creds", secret: { secretName: "db" } }],
        containers: [{
          name: "main",
          image: "busybox",
          resources: {},
          env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "db", key: "pw" } } }],
          volumeMounts: [{ name: "creds", mountPath: "/creds" }],
        }],
      },
      container: [dataEntry("main", { secrets: [secretObject("db", { pw: "s3cr3t" })] })],
    });
    const p = plan(req);
    expect(p.files.map((f) => f.path).sort()).toEqual(["env/c.main.env", "job-script.sh", "volumes/creds/pw"]);
    expect(p.containers[0]!.env).toContainEqual(["PW", "s3cr3t"]);
    expect(p.transferInput).toEqual(["env", "volumes", "job-script.sh"]);
  });

  test("a pod without an offloaded container has nothing to report the script with: refused", () => {
    const req = makeCreateRequest({ jobScript: SCRIPT, spec: { containers: [], initContainers: [{ name: "init", image: "busybox", resources: {} }] } });
    expectInvalid(() => plan(req), "jobScript: the pod has no offloaded container to report the job script's state and output");
  });

  test("warnings say what does not apply: names only a command line could carry, probes and hooks, restarts", () => {
    const req = makeCreateRequest({
      jobScript: SCRIPT,
      spec: {
        restartPolicy: "OnFailure",
        containers: [
          {
            name: "main",
            image: "busybox",
            command: ["true"],
            resources: {},
            env: [{ name: "odd.name", value: "1" }, { name: "SECONDS", value: "2" }, { name: "FINE", value: "3" }],
          },
          { name: "web", image: "busybox", resources: {}, readinessProbe: { tcpSocket: { port: 80 } } },
        ],
      },
    });
    const w = plan(req).warnings.filter((x) => x.startsWith("jobScript: "));
    expect(w).toEqual([
      `jobScript: the job runs interLink's job script instead of the containers; its output is the log of container "main"`,
      `jobScript: env "odd.name", "SECONDS" of container "main" cannot reach the job script: only a command line could carry such names`,
      `jobScript: probes and lifecycle hooks do not run with a job script (containers "web")`,
      "jobScript: the job script runs once: restartPolicy OnFailure does not restart it",
    ]);
  });

  test("the names the script can receive are those an environment carries (the wrapper's script_env keeps the same)", () => {
    for (const n of ["PATH", "TOKEN", "_X", "a1"]) expect([n, scriptCanReceive(n)]).toEqual([n, true]);
    for (const n of ["odd.name", "1A", "a-b", "SECONDS", "SHLVL", "BASH_ENV", "_"]) expect([n, scriptCanReceive(n)]).toEqual([n, false]);
    for (const n of ["UID", "PPID", "RANDOM"]) expect(BASH_OWN_VARIABLES.test(n) && !scriptCanReceive(n)).toBe(true);
  });

  test("the rich example: the script's text reaches neither the submit file nor the wrapper; the submit file ships it", () => {
    const p = planJob(parseCreateRequest({ ...richCreateRequest(), jobScript: SCRIPT }), richPlanConfig(ON));
    const sub = renderSubmit(p, "/var/lib/htcondor-sidecar/pods/x");
    const wrapper = renderWrapper(p);
    for (const text of ["from the script", "{{.Pod.Name}}", "rm -rf ~"]) {
      expect(sub).not.toContain(text);
      expect(wrapper).not.toContain(text);
    }
    expect(sub).toMatch(/^transfer_input_files = .*\bjob-script\.sh\b/m);
    expect(wrapper).toContain("\nJOB_SCRIPT='job-script.sh'");
  });
});
