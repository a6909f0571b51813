// docs/threat-model.md#8-a-pods-name-read-as-an-option: a name that comes from a pod never reaches a tool's command line where the tool would
// read it as an option (docs/threat-model.md#8-a-pods-name-read-as-an-option). condor_submit reads
// an argument that starts with `-` as an option, and an unknown one prints its usage and exits 1
// (docs/htcondor.md#condor_submit-options): a batch file named after a pod UID such as `-rf` used to
// fail every pod of the batch with a 503. Here the real sidecar runs against minicondor, over HTTP,
// with pods whose UID and strings read like options; every tool call the sidecar made is then
// checked against the options it means to give (src/condor/tools.ts).
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configMapObject, dataEntry, type Json, makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, type HttpResult, jobsByUid, measureLoad, scaled, type Sidecar, sidecars } from "../helpers/sidecar.ts";

// Each test's own timeout scales with the load measured now (test/helpers/sidecar.ts, scaled).
await measureLoad();

/** What the table drives through every call: option spellings of the tools (`-name x`: one argument with a space). */
const NAMES = ["-rf", "--version", "-append", "-name x"];

let n = 0;
const uid = () => `a25a0000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const isUid = (s: string) => /^[A-Za-z0-9-]{1,128}$/.test(s);

const { start } = sidecars();

/**
 * The options the sidecar gives each tool (src/condor/tools.ts, toolArgs) and how many values each
 * takes; the tests start the sidecar without --schedd-name and --debug.
 */
const OPTIONS: Record<string, Record<string, number>> = {
  condor_submit: { "-terse": 0, "-spool": 0 },
  condor_q: { "-json": 0, "-totals": 0, "-attributes": 1, "-constraint": 1 },
  condor_history: { "-json": 0, "-attributes": 1, "-constraint": 1, "-limit": 1, "-scanlimit": 1 },
  condor_rm: { "-totals": 0, "-reason": 1, "-constraint": 1 },
  condor_transfer_data: { "-constraint": 1 },
  condor_tail: { "-no-stdout": 0, "-maxbytes": 1 },
  condor_status: { "-json": 0, "-attributes": 1 },
  // The wrapper's, in the job: `set_job_attr <attr> "<state line>"` (src/render/wrapper-lib.bash, chirp_attr).
  condor_chirp: {},
};

/**
 * Every tool call the sidecar made (minicondor's calls.log), read as the tool reads it: the
 * arguments that are neither one of the sidecar's options nor an option's value. None may start
 * with `-` (the tool would take it for an option) or carry one of `names`.
 */
function misread(sc: Sidecar, names: readonly string[]): string[] {
  const problems: string[] = [];
  const calls = sc.calls();
  for (const { tool, argv } of calls) {
    const options = OPTIONS[tool];
    if (!options) {
      problems.push(`${tool}: not a tool the sidecar runs`);
      continue;
    }
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      if (a in options) i += options[a]!;
      else if (a.startsWith("-")) problems.push(`${tool} ${JSON.stringify(argv)}: ${JSON.stringify(a)} reads as an option`);
      else if (names.some((name) => a.includes(name))) problems.push(`${tool} ${JSON.stringify(argv)}: ${JSON.stringify(a)} carries a pod's name`);
    }
  }
  expect(calls.length).toBeGreaterThan(0);
  return problems;
}

/** Whether the sidecar has written the pod's job.sub, which it does right before it hands the pod to the submitter. */
const queued = (sc: Sidecar, req: Json) =>
  eventually(() => (existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid, "job.sub")) ? true : undefined), 30_000, `${req.pod.metadata.name} queued`);

/**
 * Creates `lead` and holds its condor_submit back (minicondor's gate fault) until `first` and then
 * `rest` wait behind it: once it ends they go as one batch, `first` first
 * (docs/htcondor.md#submitting-many-pods-at-once). Answers in the order lead, first, rest.
 */
async function burst(sc: Sidecar, lead: Json, first: Json, rest: Json[]): Promise<HttpResult[]> {
  const gate = `gate-${++n}`;
  writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ tools: { condor_submit: `gate:${gate}` } }));
  const answers = [sc.call("POST", "/create", lead)];
  await queued(sc, lead);
  answers.push(sc.call("POST", "/create", first));
  await queued(sc, first);
  answers.push(...rest.map((r) => sc.call("POST", "/create", r)));
  await Promise.all(rest.map((r) => queued(sc, r)));
  writeFileSync(join(sc.home, "faults.json"), "{}");
  writeFileSync(join(sc.home, gate), "");
  return Promise.all(answers);
}

const jid = (a: HttpResult) => JSON.parse(a.body).PodJID as string;
const cluster = (a: HttpResult) => jid(a).split(".")[0];

describe("a pod UID that starts with '-' (docs/htcondor.md#condor_submit-options)", () => {
  test("a burst whose first pod has UID -rf: all nine pods answer 200, each with a job of its own", async () => {
    const sc = await start({ args: ["--dummy-job"], env: { MINICONDOR_CPUS: "10" } });
    const pod = (name: string, id = uid()) =>
      makeCreateRequest({ metadata: { name, uid: id }, spec: { containers: [{ name: "main", image: "busybox", command: ["true"], resources: {} }] } });
    const first = pod("dash-rf", "-rf");
    const rest = Array.from({ length: 8 }, (_, i) => pod(`beside-${i}`));
    const [lead, ...answers] = await burst(sc, pod("lead"), first, rest);
    expect(lead!.status).toBe(200);
    expect(answers.map((a) => `${a.status} ${a.status === 200 ? "" : a.body}`)).toEqual(answers.map(() => "200 "));
    // One batch, behind the lead's submit: the case that failed.
    expect(new Set(answers.map(cluster)).size).toBe(1);
    expect(cluster(answers[0]!)).not.toBe(cluster(lead!));
    expect(misread(sc, ["-rf"])).toEqual([]);
    const jobs = jobsByUid(sc);
    [first, ...rest].forEach((r, i) => expect(jobs.get(r.pod.metadata.uid)).toEqual([jid(answers[i]!)]));
  }, scaled(120_000));
});

describe("argv-like names through every tool call (docs/threat-model.md#8-a-pods-name-read-as-an-option)", () => {
  /**
   * A pod that carries `name` wherever a pod may: its UID (when Kubernetes' rule allows it), an
   * env name (not a shell identifier: it travels as `env -- NAME=value`), a volume's file and a
   * subPath (bound by the wrapper), the container's args, and an exec readiness probe. The
   * container runs bash, which, unlike dash, passes on variables whose names are not identifiers. The
   * container prints what it got (`name|file|subPath file|env count`) and then, when `stay`,
   * runs until deleted, so that its log is read live (condor_tail) and its delete removes it.
   */
  function namedPod(label: string, name: string, id: string, stay: boolean): Json {
    const script = `printf '%s|%s|%s|%s\\n' "$1" "$(cat "/data/$1")" "$(cat /etc/probe)" "$(env | grep -cxF -e "$1=v")"${stay ? "; exec sleep 600" : ""}`;
    return makeCreateRequest({
      metadata: { name: label, uid: id },
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          command: ["bash", "-c", script, "bash", name],
          env: [{ name, value: "v" }],
          volumeMounts: [{ name: "cfg", mountPath: "/data" }, { name: "cfg", mountPath: "/etc/probe", subPath: name }],
          // An explicit timeoutSeconds: Kubernetes' default of 1 s fails every exec through the
          // runtime on a busy machine, and the pod never becomes ready. Scaled as the helper's
          // deadlines are (scaled: by the sidecar starts measured in this run).
          readinessProbe: {
            exec: { command: ["sh", "-c", 'test -f "/data/$1"', "sh", name] },
            periodSeconds: 1,
            timeoutSeconds: Math.ceil(scaled(30_000) / 1000),
          },
          resources: {},
        }],
        volumes: [{ name: "cfg", configMap: { name: "cfg", items: [{ key: "payload", path: name }] } }],
      },
      container: [dataEntry("main", { configMaps: [configMapObject("cfg", { payload: "p" })] })],
    });
  }

  test.each(NAMES)("%p as a UID, env name, file, subPath and argument: create, status, logs and delete work", async (name) => {
    // Spooled: the output comes back with condor_transfer_data, whose ids are on its command line too.
    const sc = await start({ config: "Spool: always\n", env: { MINICONDOR_CPUS: "4" } });
    const named = namedPod("named", name, isUid(name) ? name : uid(), true);
    const rest = [namedPod("beside-1", name, uid(), false), namedPod("beside-2", name, uid(), false)];
    const [lead, ...answers] = await burst(sc, namedPod("lead", name, uid(), false), named, rest);
    expect([lead!, ...answers].map((a) => `${a.status} ${a.status === 200 ? "" : a.body}`)).toEqual([lead, ...answers].map(() => "200 "));
    expect(new Set(answers.map(cluster)).size).toBe(1);
    const line = `${name}|p|p|1\n`;
    // Running and ready (the probe found the file), its log read while it runs.
    await eventually(
      async () => {
        const s = await sc.statusOf(named.pod);
        return s.containers[0].state.running && s.containers[0].ready ? s : undefined;
      },
      scaled(60_000),
      "the named pod running and ready",
    );
    await eventually(async () => ((await sc.logs(named.pod)).body === line ? true : undefined), scaled(30_000), "the named pod's live log");
    for (const r of rest) {
      const s = await eventually(
        async () => {
          const st = await sc.statusOf(r.pod);
          return st.containers[0].state.terminated ? st : undefined;
        },
        scaled(60_000),
        `${r.pod.metadata.name} to end`,
      );
      expect(s.containers[0].state.terminated.exitCode).toBe(0);
      expect((await sc.logs(r.pod)).body).toBe(line);
    }
    const deleted = await sc.call("POST", "/delete", named.pod);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatch(/job \d+\.\d+ removed/);
    expect(misread(sc, [name])).toEqual([]);
    // The calls read above: every tool that takes a job id, a file or a pod's UID (in a constraint).
    const tools = new Set(sc.calls().map((c) => c.tool));
    for (const t of ["condor_submit", "condor_q", "condor_tail", "condor_transfer_data", "condor_rm", "condor_chirp"]) expect([...tools]).toContain(t);
  }, scaled(180_000));

  test.each(NAMES.filter((name) => !isUid(name)))("%p as a UID is refused with a 400, and nothing is left behind", async (name) => {
    const sc = await start({ args: ["--dummy-job"] });
    const r = await sc.call("POST", "/create", namedPod("spaced", name, name, false));
    expect(r.status).toBe(400);
    expect(r.body).toContain("metadata.uid");
    expect(existsSync(join(sc.dataRoot, "pods", name))).toBe(false);
    expect(sc.calls().length > 0 ? misread(sc, [name]) : []).toEqual([]);
  }, scaled(60_000));

  test.each(NAMES)("%p as a pod name, namespace, container name or image file is refused with a 400, and nothing is left behind", async (name) => {
    const sc = await start({ args: ["--dummy-job"] });
    const cases: [string, Json][] = [
      ["metadata.name", makeCreateRequest({ metadata: { name, uid: uid() } })],
      ["metadata.namespace", makeCreateRequest({ metadata: { namespace: name, uid: uid() } })],
      ["spec.containers[0].name", makeCreateRequest({ metadata: { uid: uid() }, spec: { containers: [{ name, image: "busybox", resources: {} }] } })],
      [
        "not an image reference",
        makeCreateRequest({ metadata: { uid: uid() }, spec: { containers: [{ name: "main", image: `${name}.sif`, resources: {} }] } }),
      ],
    ];
    for (const [why, req] of cases) {
      const r = await sc.call("POST", "/create", req);
      expect({ status: r.status, body: r.body }).toMatchObject({ status: 400, body: expect.stringContaining(why) });
      expect(existsSync(join(sc.dataRoot, "pods", req.pod.metadata.uid))).toBe(false);
    }
    // Nothing was submitted.
    expect(sc.calls().map((c) => c.tool)).not.toContain("condor_submit");
  }, scaled(60_000));
});
