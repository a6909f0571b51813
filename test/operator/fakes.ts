/**
 * In-memory doubles for the controller's unit tests: an API server holding HTCJobs (get, merge
 * and JSON patch of finalizers, status), an HTCondor schedd holding clusters of several procs
 * (the searches by UID, token and Owner are evaluated on the ads), and the controller built on
 * them with a real store. The end-to-end tests use a real kube-apiserver and minicondor.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobId, RmOutcome } from "../../src/condor/parse.ts";
import type { JobAd } from "../../src/core/classad.ts";
import type { Condor, OwnedJob } from "../../src/condor/tools.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { htcjobConfig, parseConfig } from "../../src/config.ts";
import type { KubeClient, KubeObject } from "../../src/kube/client.ts";
import { KubeApiError } from "../../src/kube/errors.ts";
import type { EventRecorder } from "../../src/kube/events.ts";
import type { Logger } from "../../src/logger.ts";
import { type ControllerDeps, createController, type HTCJob } from "../../src/operator/controller.ts";
import { openHTCJobStore } from "../../src/operator/store.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { testPlanConfig } from "../fixtures/config.ts";

const notFound = (name: string) => new KubeApiError({ verb: "get", resource: "htcjobs.htc.cern.ch", name }, 404, "NotFound", `"${name}" not found`);

/** The API server's objects, by `namespace/name`; every call recorded. */
export class FakeKube {
  objects = new Map<string, HTCJob>();
  calls: { verb: string; key: string; body?: unknown }[] = [];
  /** Verbs that fail as an unreachable API server does. */
  failing = new Set<string>();
  rv = 1;

  put(o: HTCJob): HTCJob {
    const stored = structuredClone({ ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv++) } });
    this.objects.set(`${o.metadata.namespace}/${o.metadata.name}`, stored);
    return stored;
  }

  client(): KubeClient {
    return clientOf(this);
  }

  /** @internal the version counter, for clientOf. */
  bump(): string {
    return String(this.rv++);
  }
}

function clientOf(k: FakeKube): KubeClient {
  const check = (verb: string, key: string, body?: unknown) => {
    k.calls.push({ verb, key, body });
    if (k.failing.has(verb)) throw new SidecarError("unavailable", `fake ${verb}: the API server does not answer`);
  };
  return {
    server: "https://fake",
    async get<T extends KubeObject>(_r: unknown, ns: string | undefined, name: string) {
      check("get", `${ns}/${name}`);
      const o = k.objects.get(`${ns}/${name}`);
      if (!o) throw notFound(name);
      return structuredClone(o) as unknown as T;
    },
    async patch<T extends KubeObject>(_r: unknown, ns: string | undefined, name: string, patch: unknown, opts: { type: string; subresource?: string }) {
      const key = `${ns}/${name}`;
      check(opts.subresource === "status" ? "patchStatus" : "patch", key, patch);
      const o = k.objects.get(key);
      if (!o) throw notFound(name);
      if (opts.subresource === "status") o.status = { ...(o.status ?? {}), ...(patch as { status: object }).status };
      else if (opts.type === "merge") {
        const m = (patch as { metadata: { finalizers?: string[] } }).metadata;
        if (m.finalizers) o.metadata.finalizers = m.finalizers;
      } else {
        const ops = patch as { op: string; path: string }[];
        const i = Number(ops[1]!.path.split("/").pop());
        o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((_, j) => j !== i);
        if (o.metadata.deletionTimestamp && o.metadata.finalizers.length === 0) k.objects.delete(key);
      }
      o.metadata.resourceVersion = k.bump();
      return structuredClone(o) as unknown as T;
    },
    list: () => Promise.reject(new Error("fake: list not used")),
    create: () => Promise.reject(new Error("fake: create not used")),
    replace: () => Promise.reject(new Error("fake: replace not used")),
    delete: () => Promise.reject(new Error("fake: delete not used")),
    watch: () => {
      throw new Error("fake: watch not used");
    },
  } as unknown as KubeClient;
}

/** A schedd: clusters of procs with ads, the queue (own jobs only, as condor_q) and the history. */
export class FakeSchedd implements Condor {
  queued = new Map<string, JobAd>();
  left = new Map<string, JobAd>();
  calls: { tool: string; arg?: unknown }[] = [];
  failing = new Set<string>();
  /** The operator's HTCondor identity: condor_q shows only its jobs. */
  owner = "operator";
  nextCluster = 100;
  /** The JobStatus each queued ad had when last looked at (its EnteredCurrentStatus is when that changed). */
  private statusSeen = new Map<string, unknown>();
  /** What condor_submit does instead of queueing (e.g. throw). */
  onSubmit?: (file: string) => void;
  onTransfer?: (ids: readonly JobId[]) => void;

  constructor(private now: () => number) {}

  count(tool: string): number {
    return this.calls.filter((c) => c.tool === tool).length;
  }

  /** The watch's count (condor/watch.ts): the caller's own jobs that match, and the schedd's clock. */
  async totals(constraint: string): Promise<{ jobs: number; serverTime: number | undefined }> {
    this.call("totals", constraint);
    return { jobs: this.mine().filter((ad) => matches(constraint, ad, this.seconds())).length, serverTime: this.seconds() };
  }

  private seconds(): number {
    return Math.floor(this.now() / 1000);
  }

  /**
   * The caller's queued ads, each with the EnteredCurrentStatus the schedd would give it: the
   * time a test's change of its JobStatus was first seen (tests set JobStatus on the ad).
   */
  private mine(): JobAd[] {
    const out: JobAd[] = [];
    for (const [id, ad] of this.queued) {
      if (this.statusSeen.get(id) !== ad.JobStatus) {
        this.statusSeen.set(id, ad.JobStatus);
        ad.EnteredCurrentStatus = this.seconds();
      }
      if (ad.Owner === this.owner) out.push(ad);
    }
    return out;
  }

  private call(tool: string, arg?: unknown) {
    this.calls.push({ tool, arg });
    if (this.failing.has(tool)) throw new SidecarError("unavailable", `fake ${tool}: the schedd does not answer`);
  }

  /** Queues a cluster of `procs` with these attributes (as another submitter would). */
  queue(procs: number, attrs: JobAd): number {
    const c = this.nextCluster++;
    for (let p = 0; p < procs; p++) {
      const now = this.seconds();
      this.queued.set(`${c}.${p}`, { ClusterId: c, ProcId: p, JobStatus: 1, QDate: now, EnteredCurrentStatus: now, Owner: this.owner, ...attrs });
      this.statusSeen.set(`${c}.${p}`, 1);
    }
    return c;
  }

  end(id: string, final: JobAd): void {
    const ad = this.queued.get(id);
    if (!ad) throw new Error(`fake schedd: ${id} is not queued`);
    this.queued.delete(id);
    this.left.set(id, { ...ad, EnteredCurrentStatus: this.seconds(), ...final });
  }

  async submit(file: string, opts: { count: number }): Promise<JobId[]> {
    this.call("submit", file);
    this.onSubmit?.(file);
    const attrs: JobAd = {};
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const m = /^MY\.(\w+) = "(.*)"$/.exec(line);
      if (m) attrs[m[1]!] = m[2]!;
    }
    const c = this.queue(opts.count, attrs);
    return Array.from({ length: opts.count }, (_, proc) => ({ cluster: c, proc }));
  }

  async query(o: { constraint: string; attributes: readonly string[] }): Promise<JobAd[]> {
    this.call("query", o.constraint);
    // condor_q shows only the caller's own jobs; ServerTime is the schedd's clock when the ad is sent.
    const now = this.seconds();
    return this.mine().filter((ad) => matches(o.constraint, ad, now)).map((ad) => project({ ...ad, ServerTime: now }, o.attributes));
  }

  querySlices(): never {
    throw new Error("fake: querySlices not used");
  }

  async history(o: { ids?: readonly JobId[]; constraint?: string; attributes: readonly string[]; limit: number }): Promise<JobAd[]> {
    this.call("history", o.ids ?? o.constraint);
    const want = o.ids ? new Set(o.ids.map((i) => `${i.cluster}.${i.proc}`)) : undefined;
    // condor_history shows every owner's jobs.
    return [...this.left.entries()].filter(([k, ad]) => (want ? want.has(k) : matches(o.constraint!, ad, this.seconds()))).map(([, ad]) =>
      project(ad, o.attributes)
    );
  }

  async remove(jobs: readonly OwnedJob[]): Promise<Map<string, RmOutcome>> {
    this.call("remove", jobs.map((j) => `${j.id.cluster}.${j.id.proc}`));
    const out = new Map<string, RmOutcome>();
    for (const j of jobs) {
      const id = `${j.id.cluster}.${j.id.proc}`;
      // As the schedd does: the constraint decides, a job it does not select is not found.
      if (!this.queued.has(id) || !matches(j.constraint, this.queued.get(id)!, this.seconds())) out.set(id, "not_found");
      else {
        this.end(id, { JobStatus: 3 });
        out.set(id, "removed");
      }
    }
    return out;
  }

  async transferData(jobs: readonly OwnedJob[]): Promise<void> {
    this.call("transferData", jobs.map((j) => `${j.id.cluster}.${j.id.proc}`));
    this.onTransfer?.(jobs.map((j) => j.id));
  }

  tail(): never {
    throw new Error("fake: tail not used");
  }
  machines(): never {
    throw new Error("fake: machines not used");
  }
}

/**
 * The constraints the operator writes, evaluated as the schedd would for these values: names,
 * whole numbers, strings, `time()`, `== != >= <= > <`, `!`, `&&`, `||` and parentheses. A
 * comparison with an attribute the ad lacks is false (UNDEFINED is not true).
 */
function matches(constraint: string, ad: JobAd, now: number): boolean {
  const tokens = constraint.match(/"(?:[^"\\]|\\.)*"|-?\d+|time\(\)|[A-Za-z_]\w*|==|!=|>=|<=|&&|\|\||[<>!()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const value = (): unknown => {
    const t = tokens[i++];
    if (t === undefined) throw new Error(`fake schedd: the constraint ${JSON.stringify(constraint)} ends early`);
    if (t.startsWith('"')) return JSON.parse(t);
    if (/^-?\d+$/.test(t)) return Number(t);
    if (t === "time()") return now;
    if (/^[A-Za-z_]/.test(t)) return ad[t];
    throw new Error(`fake schedd: cannot read ${JSON.stringify(t)} in ${JSON.stringify(constraint)}`);
  };
  const compare = (): boolean => {
    if (peek() === "!") {
      i++;
      return !compare();
    }
    if (peek() === "(") {
      i++;
      const v = or();
      if (tokens[i++] !== ")") throw new Error(`fake schedd: unbalanced ${JSON.stringify(constraint)}`);
      return v;
    }
    const a = value();
    const op = tokens[i++]!;
    const b = value();
    if (a === undefined || b === undefined) return false;
    switch (op) {
      case "==":
        return a === b;
      case "!=":
        return a !== b;
      case ">=":
        return (a as number) >= (b as number);
      case "<=":
        return (a as number) <= (b as number);
      case ">":
        return (a as number) > (b as number);
      case "<":
        return (a as number) < (b as number);
    }
    throw new Error(`fake schedd: cannot read the operator ${JSON.stringify(op)} in ${JSON.stringify(constraint)}`);
  };
  const and = (): boolean => {
    let v = compare();
    while (peek() === "&&") {
      i++;
      v = compare() && v;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (peek() === "||") {
      i++;
      v = and() || v;
    }
    return v;
  };
  const v = or();
  if (i !== tokens.length) throw new Error(`fake schedd: cannot read ${JSON.stringify(constraint)} past ${JSON.stringify(tokens[i])}`);
  return v;
}

function project(ad: JobAd, attributes: readonly string[]): JobAd {
  return Object.fromEntries(Object.entries(ad).filter(([k]) => attributes.includes(k)));
}

export const SPEC = { queue: 2, script: { image: "centos", command: "bash", source: "echo $1\n" } };

export function htcjob(name: string, uid: string, extra: Partial<HTCJob["metadata"]> = {}, ns = "default"): HTCJob {
  return { apiVersion: "htc.cern.ch/v1alpha1", kind: "HTCJob", metadata: { name, namespace: ns, uid, generation: 1, ...extra }, spec: SPEC };
}

export interface World {
  kube: FakeKube;
  schedd: FakeSchedd;
  events: { reason: string; message: string; uid?: string }[];
  logs: string[];
  clock: { t: number };
  enqueued: string[];
  dir: string;
  deps: ControllerDeps;
  store: ReturnType<typeof openHTCJobStore>;
  controller: ReturnType<typeof createController>;
  /** A new controller on the same store, API server and schedd (a restart, or a new term). */
  restart(over?: Partial<ControllerDeps>): ReturnType<typeof createController>;
  destroy(): void;
}

export function world(over: Partial<ControllerDeps> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), "op-unit-"));
  const clock = { t: Date.parse("2024-05-01T10:00:00Z") };
  const kube = new FakeKube();
  const schedd = new FakeSchedd(() => clock.t);
  const events: World["events"] = [];
  const logs: string[] = [];
  const enqueued: string[] = [];
  const store = openHTCJobStore(bunRuntime.openSqlite(join(dir, "htcjobs.db")));
  const recorder: EventRecorder = {
    record: async (about, _type, reason, message) => void events.push({ reason, message, uid: about.metadata.uid }),
  } as EventRecorder;
  const log: Logger = {
    debug: () => {},
    info: (m: string) => void logs.push(`info ${m}`),
    warn: (m: string, f?: object) => void logs.push(`warn ${m} ${JSON.stringify(f ?? {})}`),
    error: (m: string, f?: object) => void logs.push(`error ${m} ${JSON.stringify(f ?? {})}`),
  } as unknown as Logger;
  const deps: ControllerDeps = {
    client: kube.client(),
    cached: (ns, name) => kube.objects.get(`${ns}/${name}`),
    cachedAll: () => [...kube.objects.values()],
    enqueue: (key) => void enqueued.push(key),
    store,
    condor: schedd,
    events: recorder,
    planConfig: testPlanConfig(),
    htcjob: { ...htcjobConfig(parseConfig("").config), operatorId: "op-1" },
    namespaces: [],
    dataRoot: dir,
    spool: false,
    terminalHoldCodes: [34, 46],
    lostAfterMs: 60_000,
    log,
    now: () => clock.t,
    ...over,
  };
  const w: World = {
    kube,
    schedd,
    events,
    logs,
    clock,
    enqueued,
    dir,
    deps,
    store,
    controller: createController(deps),
    restart(more = {}) {
      w.deps = { ...w.deps, ...more };
      w.controller = createController(w.deps);
      return w.controller;
    },
    destroy: () => rmSync(dir, { recursive: true, force: true }),
  };
  return w;
}
