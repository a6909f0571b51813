// `kubectl logs -f` held open on a queued pod (docs/interlink.md#get-getlogs): the follow polls
// every second for as long as the client stays, so whatever a poll adds to the request's abort
// signal must be gone by the next poll. A follow held for a day is 86,400 polls.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, planConfig } from "../../src/config.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { createService } from "../../src/service/index.ts";
import { certificateNotAfter } from "../../src/mode-setup.ts";
import { openStore } from "../../src/store/store.ts";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { fakeCondor } from "../helpers/fake-condor.ts";

const dir = mkdtempSync(join(tmpdir(), "log-follow-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An abort signal that counts the abort listeners registered on it and not removed yet. */
function countedSignal(): { controller: AbortController; listeners: () => number } {
  const controller = new AbortController();
  const s = controller.signal;
  const live = new Set<unknown>();
  const add = s.addEventListener.bind(s);
  const remove = s.removeEventListener.bind(s);
  s.addEventListener = ((...a: Parameters<typeof add>) => {
    if (a[0] === "abort") live.add(a[1]);
    add(...a);
  }) as typeof add;
  s.removeEventListener = ((...a: Parameters<typeof remove>) => {
    if (a[0] === "abort") live.delete(a[1]);
    remove(...a);
  }) as typeof remove;
  return { controller, listeners: () => live.size };
}

test("a follow held open keeps a constant number of listeners on its abort signal, one poll after another", async () => {
  const dataRoot = join(dir, "data");
  mkdirSync(join(dataRoot, "pods"), { recursive: true });
  const { config } = parseConfig("");
  const condor = fakeCondor({ readSubmitFile: (path) => readFileSync(path, "utf8"), now: () => Date.now() });
  const service = createService({
    store: openStore(bunRuntime.openSqlite(join(dataRoot, "state.db"))),
    condor,
    config,
    planConfig: planConfig(config, false),
    dataRoot,
    spool: false,
    credentials: [],
    certificateExpiry: certificateNotAfter,
    log: memoryLogger(),
    now: () => Date.now(),
    version: "test",
    timer: () => () => {},
  });
  const req = makeCreateRequest({
    metadata: { name: "held", uid: "7777aaaa-0000-4000-8000-000000000001" },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"], resources: {} }] },
  });
  await service.create(parseCreateRequest(req));
  const { controller, listeners } = countedSignal();
  const opts = { Tail: 0, Bytes: 0, Timestamps: false, Follow: true, Previous: false, SinceSeconds: 0, SinceTime: null };
  const uid = req.pod.metadata!.uid!;
  const body = await service.logs({ Namespace: "default", PodUID: uid, PodName: "held", ContainerName: "main", Opts: opts }, controller.signal);
  expect(typeof body).not.toBe("string");
  const read = (body as ReadableStream<Uint8Array>).getReader().read();
  // The job stays idle: each poll of the follow asks the schedd once (a refresh of the view).
  const polls = () => condor.count("query");
  const waitPolls = async (n: number) => {
    for (const start = polls(); polls() < start + n;) await new Promise((r) => setTimeout(r, 20));
  };
  await waitPolls(1);
  const after1 = listeners();
  await waitPolls(4);
  const after5 = listeners();
  controller.abort();
  await read;
  expect(after5).toBe(after1);
  expect(after1).toBeLessThanOrEqual(1);
}, 30_000);
