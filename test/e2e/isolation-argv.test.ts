// Secret values never reach a command line (docs/threat-model.md#3-secret-values-on-command-lines), end to end. strace follows the
// sidecar and everything it starts (condor tools, minicondor's schedd, the job's wrapper, the
// apptainer shim, the containers, probes and hooks, a host-image container) and records every
// execve while one pod runs with env from a secret and a configMap (env and envFrom), exec probes
// and hooks, a variable whose name is not a shell identifier, and a host-image container. No
// execve may carry a secret's or configMap's value; a literal value of the pod spec under a name
// that is not a shell identifier may (it can only travel as `env NAME=value`), and seeing it proves
// that the trace saw the commands that would carry the others.
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { configMapObject, dataEntry, type Json, makeCreateRequest, secretObject } from "../fixtures/pods.ts";
import { eventually, measureLoad, scaled, type Sidecar, sidecars } from "../helpers/sidecar.ts";
import { attachTrace, execsWith, straceCheck } from "../render/harness.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

const check = straceCheck();
if ("problem" in check) console.error(`SKIPPED: the argv audit needs strace: ${check.problem}`);

const tag = Math.random().toString(36).slice(2, 8);
const SECRET = { password: `sEcReT-password-${tag}`, token: `sEcReT-token-${tag}` };
const CONFIG = { level: `cOnFiG-level-${tag}` };
const LITERAL_ODD = `lIteRaL-odd-${tag}`;
const LITERAL_PLAIN = `lIteRaL-plain-${tag}`;

let sc: Sidecar;
let trace = "";
let final: Json;

const exec = (script: string) => ({ exec: { command: ["sh", "-c", script] } });
// Each probe that finds the values leaves a line in `file`, and a container ends once its probes
// have done so `n` times, not after a fixed time: the trace must hold several execs into the
// instance however slowly a busy machine runs them (and probes begin only once postStart has
// returned, docs/pod-to-job.md#probes-and-hooks). Under strace an exec takes seconds: the probes'
// own timeout (1 s by default) is not what this test is about.
const probe = (script: string, file: string) => ({ ...exec(`${script} && echo >> ${file}`), periodSeconds: 1, timeoutSeconds: 60, failureThreshold: 30 });
const probedTimes = (file: string, n: number) => `until [ -e ${file} ] && [ "$(wc -l < ${file})" -ge ${n} ]; do sleep 0.2; done`;
const env = [
  { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "db", key: "password" } } },
  { name: "LEVEL", valueFrom: { configMapKeyRef: { name: "cfg", key: "level" } } },
  { name: "PLAIN", value: LITERAL_PLAIN },
  { name: "DERIVED", value: "prefix-$(PASSWORD)" },
];
// Each container checks that the values arrived, by comparing digests (a value on its own
// command line would be the pod's own doing, and would spoil the audit).
const sum = (v: string) => new Bun.CryptoHasher("sha256").update(`${v}\n`).digest("hex");
const checks = `[ "$(printenv PASSWORD | sha256sum | cut -c1-64)" = ${sum(SECRET.password)} ] && ` +
  `[ "$(printenv token | sha256sum | cut -c1-64)" = ${sum(SECRET.token)} ] && ` +
  `[ "$(printenv LEVEL | sha256sum | cut -c1-64)" = ${sum(CONFIG.level)} ]`;

const { start } = sidecars();
beforeAll(async () => {
  sc = await start({ config: "Channels:\n  HostImage: true\n" });
  if ("problem" in check) return;
  const t = await attachTrace(check.strace, sc.proc.pid, join(sc.dir, "execve.trace"));
  const data = { secrets: [secretObject("db", SECRET)], configMaps: [configMapObject("cfg", CONFIG)] };
  const req = makeCreateRequest({
    metadata: { name: "argv-audit", uid: `a59e0000-0000-4000-8000-${tag.padStart(12, "0")}` },
    spec: {
      restartPolicy: "Never",
      containers: [
        {
          name: "main",
          image: "busybox:1.36",
          // bash: dash drops variables whose names are not identifiers before printenv sees them.
          command: ["bash", "-c", `${checks} && [ "$(printenv odd.name)" = ${LITERAL_ODD} ] && ${probedTimes("/tmp/probed", 3)}`],
          env: [...env, { name: "odd.name", value: LITERAL_ODD }],
          envFrom: [{ secretRef: { name: "db" } }],
          readinessProbe: probe(checks, "/tmp/probed"),
          livenessProbe: probe(checks, "/tmp/probed"),
          lifecycle: { postStart: exec(checks), preStop: exec(checks) },
          resources: {},
        },
        {
          name: "onhost",
          image: "host",
          // A host container runs, and is probed, in the sandbox: a relative file is the same for both.
          command: ["/bin/sh", "-c", `${checks} && ${probedTimes("onhost.probed", 2)}`],
          env,
          envFrom: [{ secretRef: { name: "db" } }],
          readinessProbe: probe(checks, "onhost.probed"),
          resources: {},
        },
      ],
    },
    container: [dataEntry("main", data), dataEntry("onhost", data)],
  });
  const r = await sc.call("POST", "/create", req);
  expect(r.status).toBe(200);
  const pod = { metadata: req.pod.metadata };
  final = await eventually(
    async () => {
      const s = JSON.parse((await sc.call("GET", "/status", [pod])).body)[0];
      return s?.containers?.length && s.containers.every((c: Json) => c.state.terminated) ? s : undefined;
    },
    240_000,
    "the audited pod to end",
  );
  trace = await t.stop();
}, 300_000);

describe("argv audit (strace -f -e trace=execve)", () => {
  test.skipIf("problem" in check)("the pod ran, its values arrived, probes and hooks ran", () => {
    for (const c of final.containers) expect([c.name, c.state.terminated]).toMatchObject([c.name, { exitCode: 0, reason: "Completed" }]);
    // The trace covers the job: the runtime's instance start, execs into it (the main process, the
    // postStart hook, three probes), the host container (its process and two probes).
    expect(execsWith(trace, "instance").length).toBeGreaterThan(3);
    expect(execsWith(trace, "instance://").length).toBeGreaterThan(3);
    expect(execsWith(trace, "exec_with_env").length).toBeGreaterThanOrEqual(2);
  }, scaled(60_000));

  test.skipIf("problem" in check)("no execve carries a value from a secret or a configMap, nor a literal one with an identifier name", () => {
    const found = Object.fromEntries(
      [...Object.values(SECRET), ...Object.values(CONFIG), LITERAL_PLAIN].map((v) => [v, execsWith(trace, v)]),
    );
    expect(found).toEqual(Object.fromEntries([...Object.values(SECRET), ...Object.values(CONFIG), LITERAL_PLAIN].map((v) => [v, []])));
  }, scaled(60_000));

  // The one value that may: the pod spec's own literal, under a name no environment can carry.
  test.skipIf("problem" in check)("a literal value under a name that is not a shell identifier travels as env NAME=value", () => {
    expect(execsWith(trace, `odd.name=${LITERAL_ODD}`).length).toBeGreaterThan(0);
  }, scaled(60_000));
});

// What cannot travel in an environment travels on a command line: a name that is not a shell
// identifier (inside the container: env NAME=value), and for a host container also a variable bash
// keeps for itself. Its value must then be the pod spec's own literal: one from a secret or a
// configMap (directly, through envFrom, or through $(VAR)) is refused at create, naming the variable
// and never quoting the value (docs/interlink.md#post-create, 400 with a one-line reason).
describe("names that could only travel on a command line", () => {
  const data = {
    secrets: [secretObject("db", { password: SECRET.password, "odd.key": SECRET.token })],
    configMaps: [configMapObject("cfg", { "log.level": CONFIG.level })],
  };
  const create = (c: Json) =>
    sc.call(
      "POST",
      "/create",
      makeCreateRequest({
        metadata: { name: "refused", uid: `a59e0001-0000-4000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, "0")}` },
        spec: { restartPolicy: "Never", containers: [{ name: "main", image: "busybox:1.36", command: ["true"], resources: {}, ...c }] },
        container: [dataEntry("main", data)],
      }),
    );
  const table: [string, Json, RegExp][] = [
    [
      "secretKeyRef under a name that is not an identifier",
      { env: [{ name: "db.password", valueFrom: { secretKeyRef: { name: "db", key: "password" } } }] },
      /env\[0\].*"db\.password".*secret or configMap, so its name must be a shell identifier/,
    ],
    [
      "configMapKeyRef under such a name",
      { env: [{ name: "log-level", valueFrom: { configMapKeyRef: { name: "cfg", key: "log.level" } } }] },
      /env\[0\].*"log-level"/,
    ],
    ["envFrom a secret with such a key", { envFrom: [{ secretRef: { name: "db" } }] }, /envFrom\[0\].*"odd\.key"/],
    ["envFrom a configMap with such a key", { envFrom: [{ configMapRef: { name: "cfg" } }] }, /envFrom\[0\].*"log\.level"/],
    ["a literal that expands a secret, under such a name", {
      env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "db", key: "password" } } }, { name: "x.y", value: "$(PW)" }],
    }, /env\[1\].*"x\.y"/],
    ["a host container: a variable bash keeps for itself, from a secret", {
      image: "host",
      command: ["/bin/true"],
      env: [{ name: "SECONDS", valueFrom: { secretKeyRef: { name: "db", key: "password" } } }],
    }, /"SECONDS".*may not be one bash keeps for itself/],
  ];
  for (const [what, c, why] of table) {
    test(`${what}: 400, naming the variable, without its value`, async () => {
      const r = await create(c);
      expect([r.status, r.body]).toEqual([400, expect.stringMatching(why)]);
      for (const v of [SECRET.password, SECRET.token, CONFIG.level]) expect(r.body).not.toContain(v);
      expect(r.body.trim().split("\n")).toHaveLength(1);
    }, scaled(60_000));
  }

  test("literal values under such names, and the same names never delivered (no command), are accepted", async () => {
    for (
      const c of [
        { env: [{ name: "x.y", value: "literal" }] },
        { image: "host", command: ["/bin/true"], env: [{ name: "SECONDS", value: "42" }] },
        { command: undefined, args: ["true"], envFrom: [{ configMapRef: { name: "cfg" } }] },
      ]
    ) {
      const r = await create(c);
      expect([JSON.stringify(c), r.status]).toEqual([JSON.stringify(c), 200]);
    }
  }, scaled(60_000));
});
