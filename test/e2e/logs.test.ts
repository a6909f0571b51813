// getLogs end to end (docs/interlink.md#get-getlogs, docs/interlink.md#check-25,
// docs/interlink.md#check-26, docs/interlink.md#check-27): real HTTP to a running sidecar, real
// jobs on minicondor, logs written by the generated wrapper.
import { beforeAll, describe, expect, test } from "bun:test";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, LOG_OPTS, type LogOpts, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars, startSidecar } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let sc: Sidecar;
let n = 0;
const uid = () => `1111bbbb-0000-4000-8000-${String(++n).padStart(12, "0")}`;

/** getLogs with interLink's options, `opts` over them. */
const logs = (pod: Json, container: string, opts: LogOpts = {}) => sc.logs(pod, container, { ...LOG_OPTS, ...opts });

function pod(name: string, script: string, spec: Json = {}) {
  return makeCreateRequest({
    metadata: { name, uid: uid() },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }], ...spec },
  });
}

const statusOf = (p: Json) => sc.statusOf(p);
const running = (p: Json) => eventually(async () => ((await statusOf(p))?.containers[0].state.running ? true : undefined), 60_000, "running");
const done = (p: Json) =>
  eventually(async () => ((await statusOf(p))?.containers.every((c: Json) => c.state.terminated) ? true : undefined), 90_000, "terminated");

const { start } = sidecars();
beforeAll(async () => {
  sc = await start();
}, scaled(SETUP_TIMEOUT_MS));

describe("finished pod", () => {
  let p: Json;
  beforeAll(async () => {
    p = pod("finished", "echo one; echo two >&2; sleep 1.2; echo three; printf 'no newline'");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await done(p.pod);
  }, 120_000);

  test("check-25 whole log: stdout and stderr interleaved, internal stamps removed", async () => {
    const r = await logs(p.pod, "main");
    expect(r.status).toBe(200);
    expect(r.body).toBe("one\ntwo\nthree\nno newline\n");
  }, scaled(60_000));
  test("Tail", async () => expect((await logs(p.pod, "main", { Tail: 2 })).body).toBe("three\nno newline\n"), scaled(60_000));
  test("Bytes", async () => expect((await logs(p.pod, "main", { Bytes: 6 })).body).toBe("one\ntw"), scaled(60_000));
  test("Timestamps: RFC 3339 prefix like the kubelet's", async () => {
    const lines = (await logs(p.pod, "main", { Timestamps: true })).body.trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z /);
  }, scaled(60_000));
  test("SinceTime keeps the newer lines", async () => {
    const stamped = (await logs(p.pod, "main", { Timestamps: true })).body.trimEnd().split("\n");
    const third = stamped[2]!.split(" ")[0]!;
    expect((await logs(p.pod, "main", { SinceTime: third })).body).toBe("three\nno newline\n");
  }, scaled(60_000));
  test("SinceSeconds: a large window keeps all, a tiny one nothing", async () => {
    expect((await logs(p.pod, "main", { SinceSeconds: 3600 })).body).toBe("one\ntwo\nthree\nno newline\n");
    await Bun.sleep(1100);
    expect((await logs(p.pod, "main", { SinceSeconds: 1 })).body).toBe("");
  }, scaled(60_000));
  test("Previous with no restart: empty, still 200", async () => {
    const r = await logs(p.pod, "main", { Previous: true });
    expect(r.status).toBe(200);
    expect(r.body).toBe("");
  }, scaled(60_000));
  test("Follow on a finished pod returns the log and ends", async () => {
    const r = await logs(p.pod, "main", { Follow: true });
    expect(r.body).toBe("one\ntwo\nthree\nno newline\n");
  }, scaled(60_000));
});

describe("a 100 MB log", () => {
  test("is tailed and streamed from disk without loading it into memory", async () => {
    const p = pod("chatty", "echo small");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await done(p.pod);
    // The returned log file of the finished pod, grown to 100 MB (the wrapper writes ~2 MB/s, so
    // the file is written here rather than by the container).
    const file = `${sc.dataRoot}/pods/${p.pod.metadata.uid}/c.main.log`;
    const line = `2026-11-22T10:00:00.000000Z ${"x".repeat(100)}\n`;
    const block = line.repeat(10_000);
    const fd = require("node:fs").openSync(file, "w");
    for (let i = 0; i < Math.ceil((100 * 1024 * 1024) / block.length); i++) require("node:fs").writeSync(fd, block);
    require("node:fs").writeSync(fd, "2026-11-22T10:00:01.000000Z the end\n");
    require("node:fs").closeSync(fd);
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(require("node:fs").readFileSync(`/proc/${sc.proc.pid}/status`, "utf8"))![1]) * 1024;
    const before = rss();
    const tail = await logs(p.pod, "main", { Tail: 2 });
    expect(tail.body).toBe(`${"x".repeat(100)}\nthe end\n`);
    expect((await logs(p.pod, "main", { Bytes: 5 })).body).toBe("xxxxx");
    // The whole log, streamed: count the bytes as they arrive.
    const whole = await sc.followLogs(p.pod, "main", {}, { discard: true });
    const bytes = whole.arrivals.reduce((sum, a) => sum + a.n, 0);
    expect(bytes).toBeGreaterThan(100 * 1024 * 1024 * (101 / 128));
    const grew = rss() - before;
    expect(grew).toBeLessThan(64 * 1024 * 1024);
  }, 120_000);
});

describe("running pod", () => {
  test("check-25 a running container's log comes through condor_tail; options apply", async () => {
    const p = pod("live", "for i in 1 2 3; do echo line $i; done; sleep 30");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const body = await eventually(
      async () => {
        const r = await logs(p.pod, "main");
        return r.body === "line 1\nline 2\nline 3\n" ? r.body : undefined;
      },
      20_000,
      "live log",
    );
    expect(body).toBe("line 1\nline 2\nline 3\n");
    expect((await logs(p.pod, "main", { Tail: 1 })).body).toBe("line 3\n");
    expect((await logs(p.pod, "main", { Timestamps: true })).body).toMatch(/^\d{4}-\d\d-\d\dT[^ ]+Z line 1\n/);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("check-26 Follow streams lines as they are written and ends when the container terminates", async () => {
    const p = pod("follow", "for i in 1 2 3 4; do echo tick $i; sleep 1; done");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const { status, body, arrivals } = await sc.followLogs(p.pod, "main", { Follow: true });
    expect(status).toBe(200);
    // (A container that did not run to its end would explain missing ticks: say so first.)
    await done(p.pod);
    expect((await statusOf(p.pod)).containers[0].state.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    expect(body).toBe("tick 1\ntick 2\ntick 3\ntick 4\n");
    // Streamed, not buffered until the end: the first bytes came well before the last.
    expect(arrivals.length).toBeGreaterThan(1);
    expect(arrivals[arrivals.length - 1]!.at - arrivals[0]!.at).toBeGreaterThan(1000);
  }, 90_000);

  test("check-26 tailing stops when the client disconnects", async () => {
    const p = pod("hangup", "while true; do echo x; sleep 0.5; done");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const tailsBefore = countTails();
    // Hung up at the first bytes.
    await new Promise<void>((resolve) => {
      let req: { destroy(): void } | undefined;
      sc.followLogs(p.pod, "main", { Follow: true }, {
        req: (r) => (req = r),
        data: () => {
          req?.destroy();
          resolve();
        },
      }).catch(() => {});
    });
    const after = countTails();
    await Bun.sleep(3000);
    // The sidecar stopped polling: no new condor_tail calls a few seconds after the hang-up.
    expect(countTails() - after).toBeLessThanOrEqual(1);
    expect(after).toBeGreaterThan(tailsBefore);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);
});

describe("running pod: every option (docs/interlink.md#get-getlogs, docs/interlink.md#check-25)", () => {
  test("docs/interlink.md#get-getlogs Bytes is a byte limit on a running pod: a multibyte character is cut, not replaced", async () => {
    const p = pod("live-bytes", "printf '\\303\\251 one\\n'; echo two; sleep 60");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    await eventually(async () => ((await logs(p.pod, "main")).body === "é one\ntwo\n" ? true : undefined), 20_000, "live log");
    // "é" is two bytes (c3 a9): one byte of it is one byte, never a 3-byte replacement character.
    expect([...(await sc.followLogs(p.pod, "main", { Bytes: 1 })).bytes]).toEqual([0xc3]);
    expect([...(await sc.followLogs(p.pod, "main", { Bytes: 3 })).bytes]).toEqual([0xc3, 0xa9, 0x20]);
    expect((await sc.followLogs(p.pod, "main", { Bytes: 9 })).body).toBe("é one\ntw");
    // Follow honours the same budget and then ends, though the container runs on.
    expect([...(await sc.followLogs(p.pod, "main", { Bytes: 1, Follow: true })).bytes]).toEqual([0xc3]);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("docs/interlink.md#get-getlogs SinceTime and SinceSeconds on a running pod", async () => {
    const p = pod("live-since", "echo early; sleep 5; echo late; sleep 60");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const stamped = await eventually(
      async () => {
        const lines = (await logs(p.pod, "main", { Timestamps: true })).body.trimEnd().split("\n");
        return lines.length === 2 ? lines : undefined;
      },
      30_000,
      "both lines",
    );
    const lateAt = stamped[1]!.split(" ")[0]!;
    expect((await logs(p.pod, "main", { SinceTime: lateAt })).body).toBe("late\n");
    expect((await logs(p.pod, "main", { SinceSeconds: 3600 })).body).toBe("early\nlate\n");
    // A window that starts ~2 s before "late" and so 3 s after "early".
    const seconds = Math.ceil((Date.now() - Date.parse(lateAt)) / 1000) + 2;
    expect((await logs(p.pod, "main", { SinceSeconds: seconds })).body).toBe("late\n");
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("docs/interlink.md#get-getlogs Previous on a running pod: the instance before the last restart", async () => {
    // /tmp is the job's own (sandbox/tmp): it survives a restart of the container.
    const p = pod("live-prev", "if [ -e /tmp/ran ]; then echo second run; sleep 60; fi; touch /tmp/ran; echo first run; exit 1", {
      restartPolicy: "OnFailure",
    });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await eventually(
      async () => {
        const c = (await statusOf(p.pod))?.containers[0];
        return c?.restartCount === 1 && c.state.running ? true : undefined;
      },
      60_000,
      "second run",
    );
    expect((await logs(p.pod, "main", { Previous: true })).body).toBe("first run\n");
    await eventually(async () => ((await logs(p.pod, "main")).body === "second run\n" ? true : undefined), 20_000, "current log");
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("docs/interlink.md#get-getlogs a running container that printed nothing yet: 200, empty body", async () => {
    const p = pod("live-quiet", "sleep 60");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const r = await logs(p.pod, "main");
    expect(r.status).toBe(200);
    expect(r.body).toBe("");
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);
});

describe("follow ends when the container terminates (docs/interlink.md#get-getlogs, docs/interlink.md#check-26)", () => {
  test("docs/interlink.md#get-getlogs a side container's follow ends when it ends, while its sibling runs on", async () => {
    const p = makeCreateRequest({
      metadata: { name: "two-ctr", uid: uid() },
      spec: {
        containers: [
          { name: "side", image: "busybox", command: ["sh", "-c", "echo s1; sleep 2; echo s2"], resources: {} },
          { name: "main", image: "busybox", command: ["sh", "-c", "sleep 90"], resources: {} },
        ],
      },
    });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await eventually(async () => ((await statusOf(p.pod))?.containers.some((c: Json) => c.state.running) ? true : undefined), 60_000, "running");
    const r = await sc.followLogs(p.pod, "side", { Follow: true });
    expect(r.status).toBe(200);
    expect(r.body).toBe("s1\ns2\n");
    // It ended with its container, not with the job.
    const main = (await statusOf(p.pod)).containers.find((c: Json) => c.name === "main");
    expect(main.state.running).toBeTruthy();
    await sc.call("POST", "/delete", p.pod);
  }, 150_000);

  test("docs/interlink.md#get-getlogs an init container's follow ends when it ends", async () => {
    const p = makeCreateRequest({
      metadata: { name: "init-ctr", uid: uid() },
      spec: {
        initContainers: [{ name: "setup", image: "busybox", command: ["sh", "-c", "echo i1; sleep 2; echo i2"], resources: {} }],
        containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "sleep 90"], resources: {} }],
      },
    });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    const r = await sc.followLogs(p.pod, "setup", { Follow: true });
    expect(r.status).toBe(200);
    expect(r.body).toBe("i1\ni2\n");
    const s = await statusOf(p.pod);
    expect(s.initContainers[0].state.terminated).toBeTruthy();
    expect(s.containers[0].state.terminated).toBeFalsy();
    await sc.call("POST", "/delete", p.pod);
  }, 150_000);

  test("docs/interlink.md#get-getlogs a restart ends the follow after the whole instance (as kubectl logs -f on a kubelet), never hangs", async () => {
    // Exits 1 and restarts (MaxRestarts 3, 1-2 s backoff): the job outlives each instance.
    const p = pod("crashloop", "echo first; sleep 3; echo last; exit 1", { restartPolicy: "Always" });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    const r = await sc.followLogs(p.pod, "main", { Follow: true });
    expect(r.status).toBe(200);
    // "last" is written just before the exit, then the log is rotated: it comes from the previous file.
    expect(r.body).toBe("first\nlast\n");
    const c = (await statusOf(p.pod)).containers[0];
    expect(c.state.terminated).toBeFalsy();
    await sc.call("POST", "/delete", p.pod);
  }, 150_000);

  test("docs/interlink.md#get-getlogs follow on a finished pod closes right after sending", async () => {
    const p = pod("follow-done", "echo a; echo b");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await done(p.pod);
    // Ten in a row: one poll interval (1 s) of waiting each would take 10 s.
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) expect((await sc.followLogs(p.pod, "main", { Follow: true })).body).toBe("a\nb\n");
    expect(Date.now() - t0).toBeLessThan(6000);
  }, 90_000);

  test("docs/interlink.md#get-getlogs follow keeps every line of a log that grows fast and past 16 MiB", async () => {
    const p = pod("torrent", "echo start; while [ ! -e /tmp/stop ]; do sleep 0.2; done; echo done");
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await running(p.pod);
    await eventually(async () => ((await logs(p.pod, "main")).body === "start\n" ? true : undefined), 20_000, "start");
    const box = sandboxOf(p.pod.metadata.uid);
    const fs = require("node:fs");
    let received = 0;
    const follow = sc.followLogs(p.pod, "main", { Follow: true }, { data: (t) => (received += t.length) });
    await eventually(() => (received > 0 ? true : undefined), 20_000, "first bytes");
    // The wrapper's logger writes ~2 MB/s; appending stamped lines to the job's log file as the
    // logger would reaches 20 MiB in ten seconds: about 2 MiB, far more than 64 KiB, between two
    // polls, and so far below 16 MiB that a slow poll on a busy machine still sees it all.
    const expected: string[] = ["start"];
    const pad = "y".repeat(100);
    const base = Date.now() * 1000;
    const fd = fs.openSync(`${box}/c.main.log`, "a");
    let k = 0;
    for (let chunk = 0; chunk < 40; chunk++) {
      let block = "";
      for (let i = 0; i < 4096; i++, k++) {
        const us = base + k;
        const text = `n=${k} ${pad}`;
        block += `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 23)}${String(us % 1000).padStart(3, "0")}Z ${text}\n`;
        expected.push(text);
      }
      fs.writeSync(fd, block);
      await Bun.sleep(250);
    }
    fs.closeSync(fd);
    expect(fs.statSync(`${box}/c.main.log`).size).toBeGreaterThan(16 * 1024 * 1024 + 1024 * 1024);
    fs.writeFileSync(`${box}/tmp/stop`, "");
    expected.push("done");
    const r = await follow;
    const got = r.body.split("\n");
    expect(got.pop()).toBe("");
    // Every line, once, in order (compared by count and ends first to keep a failure readable).
    // More than 16 MiB between two polls would skip lines (with a warning): not at this rate.
    expect(sc.log().split("\n").filter((l) => l.includes("log follow skipped lines"))).toEqual([]);
    expect(got.length).toBe(expected.length);
    expect(got.slice(-2)).toEqual(expected.slice(-2));
    expect(got.findIndex((l, i) => l !== expected[i])).toBe(-1);
    await sc.call("POST", "/delete", p.pod);
  }, 180_000);
});

describe("errors and edge cases", () => {
  test("check-27 unknown pod → 404 plain text", async () => {
    const r = await logs({ metadata: { namespace: "default", uid: "9999aaaa-0000-4000-8000-000000000000", name: "ghost" } }, "main");
    expect(r.status).toBe(404);
    expect(r.body).toMatch(/not known/);
  }, scaled(60_000));
  test("check-27 unknown container → 404 plain text", async () => {
    const p = pod("known", "true");
    await sc.call("POST", "/create", p);
    const r = await logs(p.pod, "nope");
    expect(r.status).toBe(404);
    expect(r.body).toMatch(/no container "nope"/);
  }, scaled(60_000));
  test("a known pod whose job has not started yet answers 200 with an empty body", async () => {
    const p = pod("quiet", "sleep 5");
    await sc.call("POST", "/create", p);
    const r = await logs(p.pod, "main");
    expect(r.status).toBe(200);
    expect(r.body).toBe("");
  }, scaled(60_000));
  test("Previous: the log of the instance before the last restart", async () => {
    const p = pod("restarts", "if [ -e /tmp/again ]; then echo second run; exit 0; fi; touch /tmp/again; echo first run; exit 1", {
      restartPolicy: "OnFailure",
    });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    await done(p.pod);
    expect((await logs(p.pod, "main", { Previous: true })).body).toBe("first run\n");
    expect((await logs(p.pod, "main")).body).toBe("second run\n");
    const s = await statusOf(p.pod);
    expect(s.containers[0].restartCount).toBe(1);
  }, 120_000);
});

describe("SharedFilesystem: the log files are read in the pod folder", () => {
  test("docs/interlink.md#get-getlogs follow reads the growing file, ends after the whole instance at a restart", async () => {
    const own = await startSidecar({ config: "SharedFilesystem: true", env: { MINICONDOR_SHARED_FS: "1" } });
    try {
      const p = pod("shared", "echo first; sleep 3; echo last; exit 1", { restartPolicy: "Always" });
      expect((await own.call("POST", "/create", p)).status).toBe(200);
      const st = async () => (await own.statusOf(p.pod))?.containers[0];
      await eventually(async () => ((await st())?.state.running ? true : undefined), 60_000, "running");
      const r = await own.followLogs(p.pod, "main", { Follow: true });
      expect(r.body).toBe("first\nlast\n");
      expect((await st()).state.terminated).toBeFalsy();
      // Read from the pod folder, never through condor_tail.
      expect(own.calls("condor_tail")).toEqual([]);
      await own.call("POST", "/delete", p.pod);
    } finally {
      await own.destroy();
    }
  }, 120_000);
});

describe("shutdown", () => {
  test("docs/interlink.md#get-getlogs the sidecar's shutdown closes follow streams", async () => {
    const own = await startSidecar();
    try {
      const p = pod("endless", "while true; do echo x; sleep 0.5; done");
      expect((await own.call("POST", "/create", p)).status).toBe(200);
      await eventually(
        async () => {
          const s = await own.statusOf(p.pod);
          return s?.containers[0].state.running ? true : undefined;
        },
        60_000,
        "running",
      );
      let got = false;
      const follow = own.followLogs(p.pod, "main", { Follow: true }, { data: () => (got = true) });
      await eventually(() => (got ? true : undefined), 20_000, "first bytes");
      await own.stop();
      // The stream ended (the sidecar did not wait for the job, which runs on).
      const r = await follow;
      expect(r.status).toBe(200);
      expect(r.body).toMatch(/^(x\n)+/);
    } finally {
      await own.destroy();
    }
  }, 120_000);
});

/** A running job's sandbox in minicondor (execute/dir_<n>/scratch), found by the pod UID. */
function sandboxOf(podUid: string): string {
  const fs = require("node:fs");
  const root = `${sc.home}/execute`;
  for (const d of fs.readdirSync(root)) {
    const box = `${root}/${d}/scratch`;
    try {
      if (fs.readFileSync(`${box}/podstate/wrapper.log`, "utf8").includes(podUid)) return box;
    } catch {
      // not a sandbox with a wrapper log yet: look at the next one
    }
  }
  throw new Error(`no sandbox for ${podUid}`);
}

function countTails(): number {
  return sc.calls("condor_tail").length;
}
