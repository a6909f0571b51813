// What stays of a pod after a delete (docs/logs.md#the-wrappers-log): its wrapper log, which says
// why a container did not start (docs/status.md#why-a-container-did-not-start), and nothing else,
// until its tombstone expires; a pod deleted while its job runs has none.
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, type Sidecar, startSidecar, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let sc: Sidecar | undefined;
const images = mkdtempSync(join(tmpdir(), "kept-log-images-"));
afterAll(async () => {
  await sc?.destroy();
  rmSync(images, { recursive: true, force: true });
}, TEARDOWN_TIMEOUT_MS);

let n = 0;
function pod(name: string, image: string, script = "echo never") {
  const uid = `4444eeee-0000-4000-8000-${String(++n).padStart(12, "0")}`;
  return makeCreateRequest({
    metadata: { name, uid },
    spec: { containers: [{ name: "main", image, command: ["sh", "-c", script], resources: {} }] },
  });
}

const statusOf = (p: Json): Promise<Json | undefined> => sc!.statusOf(p.pod);
const folder = (p: Json) => join(sc!.dataRoot, "pods", p.pod.metadata.uid);
/** Every path in a pod folder, relative; undefined when there is no folder. */
const tree = (p: Json) => existsSync(folder(p)) ? (readdirSync(folder(p), { recursive: true }) as string[]).sort() : undefined;

/** Ends a pod whose image the runtime cannot open: StartError, with the runtime's FATAL line. */
async function failedStart(name: string): Promise<Json> {
  const p = pod(name, `ghcr.io/missing/${name}:1`);
  expect((await sc!.call("POST", "/create", p)).status).toBe(200);
  const st = await eventually(
    async () => {
      const s = await statusOf(p);
      return s?.containers?.[0]?.state?.terminated ? s : undefined;
    },
    90_000,
    `${name} to end`,
  );
  expect(st.containers[0].state.terminated.reason).toBe("StartError");
  expect(st.containers[0].state.terminated.message).toStartWith(`FATAL:   could not open image ${images}/nowhere/${name}:1:`);
  return p;
}

/** Moves a tombstone's last change back by more than a day, with the sidecar stopped. */
function ageTombstone(uid: string): void {
  const db = new Database(join(sc!.dataRoot, "state.db"));
  const r = db.run("UPDATE pods SET updated_at = updated_at - ? WHERE uid = ? AND phase = 'deleted'", [25 * 3600 * 1000, uid]);
  db.close();
  expect(r.changes).toBe(1);
}

const config = () => `ImageOverrides:\n  "ghcr.io/missing/*": "${images}/nowhere/*"\n`;

test("after a delete only podstate/wrapper.log stays, until the tombstone expires or the store is lost", async () => {
  sc = await startSidecar({ config: config() });
  const a = await failedStart("fails-a");
  const b = await failedStart("fails-b");
  const running = pod("running", "busybox", "sleep 300");
  expect((await sc.call("POST", "/create", running)).status).toBe(200);
  await eventually(async () => (await statusOf(running))?.containers?.[0]?.state?.running ? true : undefined, 60_000, "the pod to run");
  // What a finished pod's folder holds: env files, the wrapper, the logs, the state files.
  expect(tree(a)).toEqual(expect.arrayContaining(["env", "job.sh", "podstate/wrapper.log", "podstate/c.main"]));

  for (const p of [a, b, running]) expect((await sc.call("POST", "/delete", p.pod)).status).toBe(200);
  for (const p of [a, b]) {
    expect(tree(p)).toEqual(["podstate", "podstate/wrapper.log"]);
    const log = readFileSync(join(folder(p), "podstate/wrapper.log"), "utf8");
    expect(log).toContain("instance start failed");
    expect(log).toContain(`FATAL:   could not open image ${images}/nowhere/${p.pod.metadata.name}:1:`);
  }
  // Removed while running: its output never came back, there is nothing to keep.
  expect(tree(running)).toBeUndefined();
  // Deleted is deleted: no status, no logs.
  expect(await statusOf(a)).toBeUndefined();

  // The tombstone of a expires (a day, moved back while the sidecar is stopped): its log goes.
  expect(await sc.stop()).toBe(0);
  ageTombstone(a.pod.metadata.uid);
  sc = await startSidecar({ dir: sc.dir, config: config() });
  await eventually(() => (tree(a) === undefined ? true : undefined), 30_000, "the expired tombstone's log to go");
  expect(tree(b)).toEqual(["podstate", "podstate/wrapper.log"]);
  // A late create for b is still turned away.
  expect((await sc.call("POST", "/create", b)).status).toBe(409);

  // A lost store loses b's tombstone: its kept log goes with it, and its job (in the history,
  // labelled with b's UID) is not adopted back.
  expect(await sc.stop()).toBe(0);
  for (const f of ["state.db", "state.db-wal", "state.db-shm"]) rmSync(join(sc.dataRoot, f), { force: true });
  sc = await startSidecar({ dir: sc.dir, config: config() });
  await eventually(() => (tree(b) === undefined ? true : undefined), 30_000, "the kept log of b to go");
  expect(await statusOf(b)).toBeUndefined();
  expect(sc.log()).toContain("removed the kept wrapper log of a pod deleted before the store was lost");
}, 300_000);

// A spooled job's output comes back only through condor_transfer_data, which runs for a job that
// completed and never for a delete (docs/htcondor.md#condor_transfer_data).
test("spooled: the fetched wrapper.log stays after a delete; a job removed while running has none", async () => {
  await sc?.destroy();
  sc = await startSidecar({ config: config(), args: ["--spool", "always"] });
  const failed = await failedStart("spooled-fails");
  const running = pod("spooled-running", "busybox", "sleep 300");
  expect((await sc.call("POST", "/create", running)).status).toBe(200);
  await eventually(async () => (await statusOf(running))?.containers?.[0]?.state?.running ? true : undefined, 60_000, "the pod to run");
  for (const p of [failed, running]) expect((await sc.call("POST", "/delete", p.pod)).status).toBe(200);
  expect(tree(failed)).toEqual(["podstate", "podstate/wrapper.log"]);
  expect(readFileSync(join(folder(failed), "podstate/wrapper.log"), "utf8")).toContain("FATAL:   could not open image");
  expect(tree(running)).toBeUndefined();
}, 300_000);
