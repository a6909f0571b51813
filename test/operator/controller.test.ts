// The HTCJob controller against an in-memory API server and schedd (test/operator/fakes.ts):
// the findings of a hostile review of the operator, each with the docs/operator.md section it checks.
import { afterEach, expect, test } from "bun:test";
import { htcjob, type World, world } from "./fakes.ts";

let w: World;
afterEach(() => w?.destroy());

test("a new HTCJob gets its finalizer, one cluster of its procs and a status (docs/operator.md#never-twice)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  await w.controller.reconcile("default/q");
  const o = w.kube.objects.get("default/q")!;
  expect(o.metadata.finalizers).toEqual(["htc.cern.ch/finalizer"]);
  expect(w.schedd.count("submit")).toBe(1);
  expect(o.status?.jobid).toEqual(["100.0", "100.1"]);
  await w.controller.reconcile("default/q");
  expect(w.schedd.count("submit")).toBe(1);
});

test("the namespace allowlist applies only before a submit: a config change does not call live procs 'Nothing was submitted' (docs/operator.md#running-it)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  await w.controller.reconcile("default/q");
  expect(w.schedd.queued.size).toBe(2);
  const ctl = w.restart({ namespaces: ["team-a"] });
  await ctl.reconcile("default/q");
  const st = w.kube.objects.get("default/q")!.status!;
  expect(st.conditions?.map((c) => c.reason)).not.toContain("NamespaceNotAllowed");
  expect(st.clusterId).toBe(100);
  // A new HTCJob in that namespace is still refused.
  w.kube.put(htcjob("r", "uid-2"));
  await ctl.reconcile("default/r");
  expect(w.kube.objects.get("default/r")!.status!.conditions?.[0]?.reason).toBe("NamespaceNotAllowed");
  expect(w.schedd.count("submit")).toBe(1);
});

test("condor_submit refusing the site's own lines (no htcopts) is retried with an Event, not a refusal for good (docs/operator.md#htcopts)", async () => {
  w = world();
  w.kube.put(htcjob("q", "uid-1"));
  const { SubmitRefused } = await import("../../src/condor/tools.ts");
  w.schedd.onSubmit = () => {
    throw new SubmitRefused("ERROR: on Line 20 of submit file: the site's accounting_group is unknown", false, 1);
  };
  await expect(w.controller.reconcile("default/q")).rejects.toThrow(/accounting_group/);
  expect(w.store.get("uid-1")?.phase).not.toBe("refused");
  expect(w.events.map((e) => e.reason)).toContain("SubmitFailed");
  expect(w.kube.objects.get("default/q")!.status?.failed ?? 0).toBe(0);
  w.schedd.onSubmit = undefined;
  await w.controller.reconcile("default/q");
  expect(w.kube.objects.get("default/q")!.status!.clusterId).toBe(100);
});

const submitted = async (name = "q", uid = "uid-1") => {
  w.kube.put(htcjob(name, uid));
  await w.controller.reconcile(`default/${name}`);
  return w.store.get(uid)!;
};

test("an operator limited to one namespace leaves another namespace's live HTCJobs alone (docs/operator.md#deleting)", async () => {
  w = world();
  await submitted();
  // Restarted with --namespace team-a: default/q is not in its cache, but it is alive.
  const ctl = w.restart({ watchedNamespace: "team-a", cached: (ns, name) => (ns === "team-a" ? w.kube.objects.get(`${ns}/${name}`) : undefined) });
  w.enqueued.length = 0;
  await ctl.follow();
  expect(w.enqueued).toEqual([]);
  expect(w.schedd.count("query")).toBe(1); // the search before the first submit; follow asked nothing
  await ctl.reconcile("default/q");
  expect(w.schedd.count("remove")).toBe(0);
  expect(w.store.get("uid-1")?.phase).toBe("submitted");
  expect(w.kube.calls.some((c) => c.verb === "get" && c.key === "default/q")).toBe(true);
});

test("an object gone from the API server has its procs removed once HTCondor answers; its name reused meanwhile leaks nothing (docs/operator.md#deleting)", async () => {
  w = world();
  await submitted();
  // The administrator removes the finalizer during an outage; the object goes.
  w.kube.objects.delete("default/q");
  w.schedd.failing.add("remove");
  await expect(w.controller.reconcile("default/q")).rejects.toThrow();
  // The user creates the same name again.
  await submitted("q", "uid-2");
  expect(w.enqueued).toContain("uid:uid-1");
  w.schedd.failing.delete("remove");
  await w.controller.reconcile("uid:uid-1");
  expect(w.store.get("uid-1")?.phase).toBe("deleted");
  expect([...w.schedd.queued.keys()]).toEqual(["101.0", "101.1"]);
  // The follower asks only about the live one.
  w.enqueued.length = 0;
  await w.controller.follow();
  expect(w.schedd.calls.at(-1)?.arg).toBe("ClusterId == 101");
});

test("a status naming another cluster is never adopted; only what a search by UID finds among the operator's own jobs (docs/operator.md#never-twice)", async () => {
  w = world();
  // A sidecar pod's job: same schedd, same Owner.
  const victim = w.schedd.queue(1, { InterLinkPodUID: "pod-1" });
  const o = w.kube.put(htcjob("q", "uid-1"));
  o.status = { clusterId: victim, jobid: [`${victim}.0`] };
  await w.controller.reconcile("default/q");
  const rec = w.store.get("uid-1")!;
  expect(rec.cluster).not.toBe(victim);
  expect(w.schedd.count("submit")).toBe(1);
  // Deleting it removes its own procs only.
  const obj = w.kube.objects.get("default/q")!;
  obj.metadata.deletionTimestamp = "2024-05-01T10:01:00Z";
  await w.controller.reconcile("default/q");
  expect(w.schedd.queued.has(`${victim}.0`)).toBe(true);
  expect(w.schedd.calls.filter((c) => c.tool === "remove").flatMap((c) => c.arg as string[])).toEqual([`${rec.cluster}.0`, `${rec.cluster}.1`]);
});

test("a lost store: the cluster HTCondor holds for the UID is taken with HTCondor's proc count, and a delete removes it (docs/operator.md#the-store)", async () => {
  w = world();
  await submitted();
  const obj = w.kube.objects.get("default/q")!;
  obj.status = { ...obj.status, jobid: ["100.0"] };
  const { openHTCJobStore } = await import("../../src/operator/store.ts");
  const { bunRuntime } = await import("../../src/runtime/bun.ts");
  const { join } = await import("node:path");
  const fresh = openHTCJobStore(bunRuntime.openSqlite(join(w.dir, "new.db")));
  const ctl = w.restart({ store: fresh });
  await ctl.reconcile("default/q");
  expect(w.schedd.count("submit")).toBe(1);
  expect(fresh.get("uid-1")).toMatchObject({ cluster: 100, procs: 2 });
  // And with no record at all, a delete still removes what the search finds.
  const empty = openHTCJobStore(bunRuntime.openSqlite(join(w.dir, "empty.db")));
  const ctl2 = w.restart({ store: empty });
  obj.metadata.deletionTimestamp = "2024-05-01T10:01:00Z";
  await ctl2.reconcile("default/q");
  expect(w.schedd.queued.size).toBe(0);
  expect(w.kube.objects.has("default/q")).toBe(false);
  fresh.close();
  empty.close();
});

test("a store that never saw the submit (a second replica's, a lost one), no owner learned yet, the cluster finished: taken from the history, not submitted again (docs/operator.md#never-twice)", async () => {
  w = world();
  const rec = await submitted();
  for (const p of [0, 1]) w.schedd.end(`${rec.cluster}.${p}`, { JobStatus: 4, ExitCode: 0 });
  const { openHTCJobStore } = await import("../../src/operator/store.ts");
  const { bunRuntime } = await import("../../src/runtime/bun.ts");
  const { join } = await import("node:path");
  const other = openHTCJobStore(bunRuntime.openSqlite(join(w.dir, "other.db")));
  const ctl = w.restart({ store: other });
  await ctl.reconcile("default/q");
  expect(w.schedd.count("submit")).toBe(1);
  expect(other.get("uid-1")).toMatchObject({ cluster: rec.cluster, procs: 2 });
  other.close();
});

test("a submit whose answer was lost is settled by its token: a cluster with the UID but another token is not taken; the schedd's clock does not matter (docs/operator.md#never-twice)", async () => {
  w = world({ submitTimeoutMs: 0 });
  w.kube.put(htcjob("q", "uid-1"));
  let token = "";
  w.schedd.onSubmit = () => {
    token = w.store.get("uid-1")!.submitToken!;
    throw new Error("condor_submit timed out");
  };
  await expect(w.controller.reconcile("default/q")).rejects.toThrow(/timed out/);
  expect(token).toMatch(/^[0-9a-f-]{36}$/);
  // A job rewrote its attributes to this UID (another token); the real cluster landed with a QDate an hour behind.
  w.schedd.queue(1, { HTCJobUID: "uid-1", HTCJobOperatorId: "op-1", HTCJobSubmitToken: "forged" });
  const real = w.schedd.queue(2, { HTCJobUID: "uid-1", HTCJobOperatorId: "op-1", HTCJobSubmitToken: token, QDate: 0 });
  w.schedd.onSubmit = undefined;
  const ctl = w.restart();
  await ctl.reconcile("default/q");
  expect(w.store.get("uid-1")?.cluster).toBe(real);
  expect(w.schedd.count("submit")).toBe(1);
});

test("the procs' submit file asks for no chirp and carries the submit's token (docs/operator.md#never-twice)", async () => {
  w = world({ token: () => "tok-1" });
  await submitted();
  const { readFileSync } = await import("node:fs");
  const sub = readFileSync(`${w.store.get("uid-1")!.dir}/job.sub`, "utf8");
  expect(sub).not.toContain("want_io_proxy");
  expect(sub).toContain('MY.HTCJobSubmitToken = "tok-1"');
});

test("a new term writes no status before it has seen the procs: running procs are not set back to idle (docs/operator.md#status)", async () => {
  w = world();
  await submitted();
  for (const ad of w.schedd.queued.values()) ad.JobStatus = 2;
  await w.controller.follow();
  await w.controller.reconcile("default/q");
  expect(w.kube.objects.get("default/q")!.status!.running).toBe(2);
  const patches = w.kube.calls.filter((c) => c.verb === "patchStatus").length;
  const ctl = w.restart();
  await ctl.reconcile("default/q");
  expect(w.kube.objects.get("default/q")!.status!.running).toBe(2);
  expect(w.kube.calls.filter((c) => c.verb === "patchStatus").length).toBe(patches);
});

test("a term that ended is not submitted in: the leading signal is checked right before condor_submit (docs/operator.md#only-one-submits)", async () => {
  const ended = new AbortController();
  ended.abort();
  w = world({ leading: ended.signal });
  w.kube.put(htcjob("q", "uid-1"));
  await expect(w.controller.reconcile("default/q")).rejects.toThrow(/no longer leads/);
  expect(w.schedd.count("submit")).toBe(0);
});

test("spooled output counts as fetched only once the proc's state file came back (docs/operator.md#following-the-procs)", async () => {
  w = world({ spool: true });
  const rec = await submitted();
  for (const id of ["100.0", "100.1"]) Object.assign(w.schedd.queued.get(id)!, { JobStatus: 4, ExitCode: 0 });
  await w.controller.follow();
  expect(w.schedd.count("transferData")).toBe(1);
  expect(w.store.get("uid-1")!.fetched).toEqual([false, false]);
  expect(w.store.get("uid-1")!.phase).toBe("submitted");
  const { mkdirSync, writeFileSync } = await import("node:fs");
  w.schedd.onTransfer = (ids) => {
    for (const i of ids) {
      mkdirSync(`${rec.dir}/procs/${i.proc}/podstate`, { recursive: true });
      writeFileSync(`${rec.dir}/procs/${i.proc}/podstate/c.htcjob`, "0 terminated Completed\n");
    }
  };
  await w.controller.follow();
  expect(w.store.get("uid-1")!.fetched).toEqual([true, true]);
  expect(w.store.get("uid-1")!.phase).toBe("finished");
});

test("a proc held with a terminal code is removed only after HoldGraceSeconds (docs/operator.md#following-the-procs)", async () => {
  w = world({ holdGraceMs: 60_000 });
  await submitted();
  Object.assign(w.schedd.queued.get("100.0")!, { JobStatus: 5, HoldReasonCode: 46, HoldReason: "allowed_job_duration" });
  await w.controller.follow();
  expect(w.schedd.count("remove")).toBe(0);
  expect(w.controller.views.get("uid-1")?.[0]?.state).toBe("held");
  w.clock.t += 61_000;
  await w.controller.follow();
  expect(w.schedd.count("remove")).toBe(1);
  expect(w.store.get("uid-1")!.outcomes[0]?.state).toBe("failed");
});

test("a spec edited after the submit is not applied, and the status and a Warning say so (docs/operator.md#status)", async () => {
  w = world();
  await submitted();
  await w.controller.follow();
  const o = w.kube.objects.get("default/q")!;
  o.metadata.generation = 2;
  o.spec = { ...(o.spec as object), queue: 5 };
  await w.controller.reconcile("default/q");
  const st = w.kube.objects.get("default/q")!.status!;
  expect(st.observedGeneration).toBe(2);
  expect(st.conditions?.find((c) => c.type === "Submitted")).toMatchObject({ status: "True", reason: "SpecNotApplied", observedGeneration: 1 });
  expect(w.events.filter((e) => e.reason === "SpecNotApplied")).toHaveLength(1);
  await w.controller.reconcile("default/q");
  expect(w.events.filter((e) => e.reason === "SpecNotApplied")).toHaveLength(1);
  expect(w.schedd.count("submit")).toBe(1);
});
