/**
 * Runs generated wrappers with real bash and minicondor's apptainer shim, as an execution point
 * would: `env -i` (no PATH), `_CONDOR_SCRATCH_DIR`, the files of the plan in the sandbox.
 *
 * Every scenario is queued when this file loads and they run side by side, a few at a time; each
 * test awaits its own.
 */
import { shQuote } from "../../src/render/sh.ts";
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ContainerPlan, JobPlan, MountPlan } from "../../src/core/types.ts";
import type { StateLine } from "../../src/core/state-line.ts";
import { parseStateLine } from "../../src/core/state-line.ts";
import { WRAPPER_LIB } from "../../src/render/wrapper.ts";
import { basePlan, container, initContainer, withEnvFiles } from "./plans.ts";
import {
  BASH,
  cleanup,
  logText,
  materialize,
  readLog,
  readState,
  type RunOptions,
  type RunResult,
  runWrapper,
  SHIM,
  type ShimCall,
  shimCalls,
  tempDir,
  wrapperLog,
} from "./harness.ts";
import { slot } from "./pool.ts";

// Generous: on a loaded machine the shim (and bash) can be very slow.
setDefaultTimeout(150_000);

const enc = new TextEncoder();
const HOSTILE = `'"$ \`$(touch marker)\` \n é`;
const TS_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z /;

const shared: MountPlan = { source: { kind: "sandbox", path: "emptydir/shared" }, target: "/shared", readOnly: false };

function plan(over: Partial<JobPlan>): JobPlan {
  return withEnvFiles(
    basePlan({
      runtime: { pinned: SHIM, searchPath: [], noHome: true, oldRuntime: "warn" },
      emptyDirs: ["shared"],
      backoffInitialSeconds: 0,
      backoffMaxSeconds: 0,
      terminationGracePeriodSeconds: 5,
      ...over,
    }),
  );
}

function sh(name: string, script: string, over: Partial<ContainerPlan> = {}): ContainerPlan {
  return container(name, { command: ["bash", "-c", script], mounts: [shared], ...over });
}

interface Outcome extends RunResult {
  dir: string;
  /** Every distinct state line seen per container key while the job ran. */
  seen: Map<string, string[]>;
}

/** Queues a scenario now (started in file order, a few at a time: ./pool.ts); resolves when its wrapper exits. */
function scenario(p: JobPlan, opts: RunOptions & { prepare?: (dir: string) => void; dummySeconds?: number } = {}): Promise<Outcome> {
  return slot(() => runScenario(p, opts));
}

function runScenario(p: JobPlan, opts: RunOptions & { prepare?: (dir: string) => void; dummySeconds?: number }): Promise<Outcome> {
  const dir = materialize(p, { dummySeconds: opts.dummySeconds });
  opts.prepare?.(dir);
  const seen = new Map<string, string[]>();
  const keys = [...p.initContainers, ...p.containers].map((c) => `${c.init ? "i" : "c"}.${c.name}`);
  const snapshot = () => {
    for (const k of keys) {
      const f = join(dir, "podstate", k);
      if (!existsSync(f)) continue;
      const line = readFileSync(f, "utf8").trim();
      const list = seen.get(k) ?? [];
      if (list.at(-1) !== line) list.push(line);
      seen.set(k, list);
    }
  };
  return runWrapper(dir, { ...opts, onTick: snapshot }).then((r) => {
    snapshot();
    return { ...r, dir, seen };
  });
}

function states(o: Outcome, key: string): StateLine[] {
  return (o.seen.get(key) ?? []).map((l) => parseStateLine(l)!).filter(Boolean);
}

function file(o: Outcome, rel: string): string {
  return readFileSync(join(o.dir, rel), "utf8");
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/**
 * A fake condor_chirp that records its arguments (NUL-separated, one call per line); with `fail`,
 * it then fails as condor_chirp does when it cannot reach the starter.
 */
function fakeCondor(fail = false): string {
  const root = tempDir("fake-condor-");
  mkdirSync(join(root, "bin"));
  mkdirSync(join(root, "libexec"));
  writeFileSync(
    join(root, "libexec/condor_chirp"),
    `#!/bin/bash\n[[ -n $PATH ]] || exit 99\nprintf '%s\\0' "$@" >>"${root}/chirp.calls"\necho >>"${root}/chirp.calls"\n` +
      (fail ? "echo 'cannot connect to the starter' >&2\nexit 1\n" : ""),
    { mode: 0o755 },
  );
  writeFileSync(join(root, "chirp.config"), "fake");
  return root;
}

/** The job environment that makes the wrapper use a fake condor from fakeCondor(). */
function chirpEnv(root: string): Record<string, string> {
  return { _CONDOR_BIN: join(root, "bin"), _CONDOR_CHIRP_CONFIG: join(root, "chirp.config") };
}

/** The calls a fake condor_chirp recorded: each its arguments, or ["MARK", text] for a line a test wrote. */
function chirpCalls(root: string): string[][] {
  const p = join(root, "chirp.calls");
  if (!existsSync(p)) return [];
  return readFileSync(p, "utf8").split("\n").filter(Boolean).map((l) => (l.startsWith("MARK ") ? ["MARK", l.slice(5)] : l.split("\0").slice(0, -1)));
}
const condor = fakeCondor();

const basics = scenario(
  plan({
    podIP: "10.0.0.7",
    commandPrefix: "echo prefix >> order.txt",
    preExec: ["echo pre-exec >> order.txt"],
    backgroundCommands: ["exec sleep 600"],
    files: [
      { path: "volumes/config/app.yaml", content: enc.encode("level: debug\n"), mode: 0o644, secret: false },
      { path: "volumes/creds/token", content: enc.encode("s3cr3t"), mode: 0o600, secret: true },
      // 0600 on the submit side (docs/threat-model.md#secrets); the pod's 0440 in the sandbox.
      { path: "volumes/creds/cert", content: enc.encode("cert"), mode: 0o600, podMode: 0o440, secret: true },
    ],
    transferInput: ["volumes"],
    initContainers: [
      initContainer("one", 0, { command: ["bash", "-c", "sleep 0.3; echo one >> /shared/order; echo init one"], mounts: [shared] }),
      initContainer("two", 1, { command: ["bash", "-c", "echo two >> /shared/order"], mounts: [shared] }),
    ],
    containers: [
      sh(
        "a",
        [
          'printf "%s" "$HOSTILE" > /shared/env.a',
          'printf "%s\\0" "$0" "$@" > /shared/args.a',
          "env > /shared/env-all.a",
          "touch /shared/a-started",
          "for i in $(seq 600); do [ -e /shared/b-started ] && break; sleep 0.1; done",
          "[ -e /shared/b-started ] && echo saw-b > /shared/concurrent",
          "cat /etc/app/app.yaml > /shared/config.a",
          "{ echo x >> /etc/app/app.yaml; } 2>/dev/null && echo writable > /shared/ro.a",
          "echo tmp-a > /tmp/from-a",
          "echo line one; echo to stderr >&2; printf 'no newline at end'",
          "exit 3",
        ].join("\n"),
        {
          args: ["argv0", HOSTILE, "x  y", ""],
          env: [["HOSTILE", HOSTILE], ["EMPTY", ""], ["OMP_NUM_THREADS", "4"]],
          mounts: [shared, { source: { kind: "sandbox", path: "volumes/config" }, target: "/etc/app", readOnly: true }],
        },
      ),
      sh(
        "b",
        "touch /shared/b-started; for i in $(seq 600); do [ -e /tmp/from-a ] && break; sleep 0.1; done; " +
          "cat /tmp/from-a > /shared/tmp.b; echo b; exit 5",
        { index: 1 },
      ),
      // args only: the image's entrypoint (python3 in minicondor's image table) runs with them.
      container("c", {
        index: 2,
        image: { kind: "container", uri: "docker://python:3.12" },
        args: ["-c", "import sys; open('/shared/run.c', 'w').write('run-args ' + sys.argv[1] + '\\n')", "zero"],
        mounts: [shared],
      }),
    ],
  }),
  { env: chirpEnv(condor) },
);

// After an eviction HTCondor runs the whole job again, on another slot, and the job ad still holds
// the last states the previous run chirped (often "terminated"): the fresh states are chirped at
// setup, before anything of the pod runs (the CommandPrefix marks that moment in the call list),
// the init container's and the waiting containers' alike.
const rerunCondor = fakeCondor();
const rerun = scenario(
  plan({
    commandPrefix: `echo 'MARK prefix' >> ${shQuote(join(rerunCondor, "chirp.calls"))}`,
    initContainers: [initContainer("prep", 0, { command: ["true"] })],
    containers: [sh("main", "true"), sh("side", "true", { index: 1 })],
  }),
  { env: chirpEnv(rerunCondor) },
);

// A condor_chirp that fails on every call (the starter unreachable) from the first, setup's, on.
const chirpFailsCondor = fakeCondor(true);
const chirpFails = scenario(plan({ containers: [sh("main", "echo ran")] }), { env: chirpEnv(chirpFailsCondor) });

const initFails = scenario(
  plan({
    initContainers: [
      initContainer("ok", 0, { command: ["true"] }),
      initContainer("bad", 1, { command: ["bash", "-c", "echo failing; exit 7"] }),
      initContainer("never", 2, { command: ["bash", "-c", "touch /shared/never"], mounts: [shared] }),
    ],
    containers: [sh("main", "touch /shared/main-ran")],
  }),
);

const preExecFails = scenario(
  plan({ preExec: ["echo about to fail; exit 4"], containers: [sh("main", "touch /shared/main-ran")] }),
);

const restarts = scenario(
  plan({
    restartPolicy: "OnFailure",
    backoffInitialSeconds: 1,
    backoffMaxSeconds: 2,
    containers: [
      sh("flaky", 'n=$(cat /shared/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /shared/n; echo "run $n"; [ $n -ge 3 ] && exit 0; exit $((10+n))'),
    ],
  }),
);

const capped = scenario(
  plan({ restartPolicy: "Always", maxRestarts: 2, containers: [sh("crash", "echo crash; exit 2")] }),
);

const always = scenario(
  plan({
    restartPolicy: "Always",
    restartAfterSuccess: true,
    maxRestarts: 1,
    containers: [sh("done", "echo ok")],
  }),
);

// Run 1 turns unhealthy once its postStart has made it healthy (waiting for the hook's file, not
// for a time), run 2 stays healthy and ends. The hook is slower than failureThreshold probe periods:
// a kubelet probes only after postStart has returned (docs/pod-to-job.md#probes-and-hooks), so run 2
// is never killed, however slowly the hook runs on a busy machine.
const liveness = scenario(
  plan({
    restartPolicy: "OnFailure",
    containers: [
      sh(
        "live",
        'n=$(cat /shared/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /shared/n; echo "run $n"; ' +
          "until [ -e /tmp/healthy ]; do sleep 0.1; done; if [ $n -eq 1 ]; then rm -f /tmp/healthy; exec sleep 30; fi; sleep 1.5; exit 0",
        {
          postStart: { kind: "exec", command: ["bash", "-c", "sleep 2.5; touch /tmp/healthy"] },
          livenessProbe: {
            handler: { kind: "exec", command: ["test", "-e", "/tmp/healthy"] },
            initialDelaySeconds: 0,
            periodSeconds: 1,
            timeoutSeconds: 2,
            successThreshold: 1,
            failureThreshold: 2,
          },
        },
      ),
    ],
  }),
);

let server: ReturnType<typeof Bun.serve> | undefined;
/** The /tick requests of the periodSeconds scenario: when each came and when it was answered (Date.now()). */
const ticks: { start: number; end?: number }[] = [];
let tickedDir: string | undefined;
function httpServer(): number {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: async (req) => {
      const u = new URL(req.url);
      if (u.pathname === "/tick") {
        const tick: { start: number; end?: number } = { start: Date.now() };
        ticks.push(tick);
        if (ticks.length >= 4 && ticks.filter((t) => t.end !== undefined).length >= 3 && tickedDir) {
          writeFileSync(join(tickedDir, "emptydir/shared/ticked"), "");
        }
        await Bun.sleep(4000);
        tick.end = Date.now();
        return new Response("ok");
      }
      if (u.pathname === "/ok") return new Response("ok", { status: req.headers.get("x-probe") === "it's me" ? 200 : 418 });
      if (u.pathname === "/redirect") return new Response("", { status: 302, headers: { location: "/ok" } });
      return new Response("no", { status: 500 });
    },
  });
  return server.port!;
}
const port = httpServer();

const probes = scenario(
  plan({
    containers: [
      sh("ready", "sleep 2.5", {
        startupProbe: {
          handler: { kind: "tcpSocket", host: "127.0.0.1", port },
          initialDelaySeconds: 0,
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 3,
        },
        readinessProbe: {
          handler: { kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port, path: "/ok", headers: [["X-Probe", "it's me"]] },
          initialDelaySeconds: 0,
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 1,
        },
      }),
      sh("never", "sleep 2.5", {
        index: 1,
        readinessProbe: {
          handler: { kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port, path: "/bad", headers: [] },
          initialDelaySeconds: 0,
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 1,
        },
      }),
      sh("nostart", "sleep 30", {
        index: 2,
        startupProbe: {
          handler: { kind: "tcpSocket", host: "127.0.0.1", port: 1 },
          initialDelaySeconds: 0,
          periodSeconds: 1,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 2,
        },
      }),
    ],
  }),
);

const GRACE = 3;
const sigterm = scenario(
  plan({
    terminationGracePeriodSeconds: GRACE,
    containers: [
      sh("polite", "echo up; exec sleep 60", {
        preStop: { kind: "exec", command: ["bash", "-c", "echo prestop > /shared/prestop"] },
      }),
      sh("stubborn", "trap '' TERM; echo up; sleep 60 & wait; sleep 60", { index: 1 }),
    ],
  }),
  // SIGTERM once both containers are up (before that, a TERM would beat the container's own trap).
  { termWhen: (dir) => logText(dir, "polite").includes("up") && logText(dir, "stubborn").includes("up") },
);

const deadline = scenario(
  plan({ activeDeadlineSeconds: 2, containers: [sh("long", "exec sleep 600")] }),
);

const dummy = scenario(plan({ dummy: true, containers: [sh("main", "exit 9"), sh("side", "exit 9", { index: 1 })] }), {
  // Long enough for the 50 ms snapshots to see "running" on a loaded machine.
  dummySeconds: 3,
});

const noRuntime = scenario(
  plan({
    runtime: { pinned: "/nonexistent/apptainer", searchPath: [], noHome: true, oldRuntime: "warn" },
    initContainers: [initContainer("init", 0, { command: ["true"] })],
    containers: [sh("main", "true")],
  }),
);

const tooOldRefuse = scenario(
  plan({ runtime: { pinned: SHIM, searchPath: [], noHome: true, oldRuntime: "refuse" }, containers: [sh("main", "true")] }),
  { env: { MINICONDOR_APPTAINER_VERSION: "1.0.3" } },
);

const tooOldWarn = scenario(plan({ containers: [sh("main", "echo ran-anyway")] }), {
  env: { MINICONDOR_APPTAINER_VERSION: "1.0.3" },
});

// The runtime found on the search path when nothing is pinned (the shim's directory).
const searched = scenario(
  plan({
    runtime: { searchPath: [join(SHIM, "..")], noHome: true, oldRuntime: "warn" },
    containers: [sh("main", "echo found")],
  }),
);

// The site's CommandPrefix puts the runtime on PATH (as `module load apptainer` would).
const prefixed = scenario(
  plan({
    commandPrefix: `export PATH=${shQuote(join(SHIM, ".."))}:$PATH`,
    runtime: { searchPath: [], noHome: true, oldRuntime: "warn" },
    containers: [sh("main", "echo via-prefix")],
  }),
);

// A runtime whose `instance start` fails with the given output and exit code; every other call
// goes to the shim. The outputs are the real CLIs' formats (docs/status.md#why-a-container-did-not-start).
function failingStart(output: string, exitCode: number): string {
  const dir = tempDir("failing-start-");
  const rt = join(dir, "apptainer");
  writeFileSync(
    rt,
    `#!/bin/bash\nif [[ \${1:-} == instance && \${2:-} == start ]]; then\n  printf '%s' ${shQuote(output)} >&2\n  exit ${exitCode}\nfi\n` +
      `exec ${shQuote(SHIM)} "$@"\n`,
    { mode: 0o755 },
  );
  return rt;
}

// cmd/internal/cli/apptainer.go (every release 1.1 to 1.5; singularity.go alike in SingularityCE
// 3.10 to 4.x): a flag error prints the error, the command's flag table, then the help hint, and
// exits 1.
const USAGE_ERROR = 'Error for command "start": unknown flag: --pid\n\n' +
  "Options for start command:\n\n" +
  "      --add-caps string        a comma separated capability list to add\n" +
  "      --allow-setuid           allow setuid binaries in container (root only)\n" +
  "      --cleanenv               clean environment before running container\n" +
  "  -h, --help                   help for start\n" +
  "      --no-eval                do not shell evaluate env vars or OCI container CMD/ENTRYPOINT/ARGS\n" +
  "\nRun 'apptainer --help' for more detailed usage information.\n";

// As Apptainer 1.3 printed it for an instance whose container could not be created
// (apptainer/apptainer#2189): the instance's own lines, then its parent's vaguer FATAL.
const CREATION_FAILED = "INFO:    Using cached SIF image\n" +
  "ERROR:   container cleanup failed: no instance found with name a1\n" +
  "FATAL:   container creation failed: while applying cgroups config: Interactive authentication required.\n\n" +
  "FATAL:   while executing starter: failed to start instance: while running /usr/libexec/apptainer/bin/starter: exit status 255\n";

function startFails(output: string, exitCode: number): Promise<Outcome> {
  return scenario(
    plan({
      runtime: { pinned: failingStart(output, exitCode), searchPath: [], noHome: true, oldRuntime: "warn" },
      containers: [sh("main", "touch /shared/main-ran")],
    }),
  );
}

const usageError = startFails(USAGE_ERROR, 1);
const creationFailed = startFails(CREATION_FAILED, 255);
const onlyErrorLines = startFails("INFO:    starting\nERROR:   first problem\nERROR:   second problem\nsome trailing note\n", 255);
const noPrefix = startFails("something went wrong\nthe last words\n\n", 3);

const host = scenario(
  plan({
    containers: [
      container("site", {
        image: { kind: "host", site: "T2_XY" },
        command: ["./site.sh"],
        args: ["extra arg"],
        env: [["FROM_POD", HOSTILE]],
      }),
    ],
  }),
  {
    prepare: (dir) =>
      writeFileSync(
        join(dir, "site.sh"),
        '#!/bin/bash\nprintf "%s\\0" "$@" > host.args\nprintf "%s" "$FROM_POD" > host.env\necho "$PATH" > host.path\n',
        { mode: 0o755 },
      ),
  },
);

// The hook waits for what the container wrote to its /tmp and answers there: only a hook that
// runs inside the running container (its mount namespace) can see it.
const postStartOk = scenario(
  plan({
    containers: [
      sh(
        "hooked",
        't="main-$$-$RANDOM"; echo "$t" > /shared/token; echo "$t" > /tmp/token.tmp && mv /tmp/token.tmp /tmp/token; ' +
          "for i in $(seq 300); do [ -e /tmp/hooked ] && break; sleep 0.1; done; cat /tmp/hooked > /shared/hooked",
        {
          postStart: {
            kind: "exec",
            command: [
              "bash",
              "-c",
              "for i in $(seq 300); do [ -e /tmp/token ] && break; sleep 0.1; done; " +
              "{ cat /tmp/token; echo hook; } > /tmp/hooked.tmp && mv /tmp/hooked.tmp /tmp/hooked",
            ],
          },
        },
      ),
    ],
  }),
);

const postStartFails = scenario(
  plan({
    containers: [
      sh("doomed", "echo up; exec sleep 600", { postStart: { kind: "exec", command: ["bash", "-c", "echo hook failing; exit 3"] } }),
    ],
  }),
);

// SIGTERM (condor_rm, a vacate) while an init container still runs; the grace period is long, so
// a prompt stop cannot be the SIGKILL at its end.
const INIT_GRACE = 30;
const termDuringInit = scenario(
  plan({
    terminationGracePeriodSeconds: INIT_GRACE,
    initContainers: [
      initContainer("slow", 0, { command: ["bash", "-c", "echo up; exec sleep 60"] }),
      initContainer("after", 1, { command: ["bash", "-c", "touch /shared/after-ran"], mounts: [shared] }),
    ],
    containers: [sh("main", "touch /shared/main-ran"), sh("side", "touch /shared/side-ran", { index: 1 })],
  }),
  { termWhen: (dir) => logText(dir, "slow", true).includes("up") },
);

// The runtime's cache: HTCondor points APPTAINER_CACHEDIR/SINGULARITY_CACHEDIR at the scratch dir
// (test/minicondor/fixtures/multi.txt env-out); config apptainerCacheDir overrides both.
const SLOT_CACHE = "/slot/scratch";
const CACHE_DIR = join(tempDir("cache-"), "it's the cache");
const cachedCalls = join(tempDir("shim-calls-"), "calls");
const cached = scenario(
  plan({
    runtime: { pinned: SHIM, searchPath: [], noHome: true, cacheDir: CACHE_DIR, oldRuntime: "warn" },
    containers: [sh("main", "env > /shared/env")],
  }),
  { env: { MINICONDOR_SHIM_LOG: cachedCalls, APPTAINER_CACHEDIR: SLOT_CACHE, SINGULARITY_CACHEDIR: SLOT_CACHE } },
);
const uncachedCalls = join(tempDir("shim-calls-"), "calls");
const uncached = scenario(plan({ containers: [sh("main", "true")] }), { env: { MINICONDOR_SHIM_LOG: uncachedCalls } });

const gpuCalls = join(tempDir("shim-calls-"), "calls");
const gpus = scenario(
  plan({
    initContainers: [initContainer("prep", 0, { command: ["true"], gpus: 1, amdGpus: 1 })],
    containers: [
      sh("nvidia", "true", { gpus: 1 }),
      sh("amd", "true", { index: 1, gpus: 2, amdGpus: 2 }),
      sh("both", "true", { index: 2, gpus: 3, amdGpus: 1 }),
      sh("cpu", "true", { index: 3 }),
    ],
  }),
  { env: { MINICONDOR_SHIM_LOG: gpuCalls } },
);

// Env names Kubernetes allows (any printable ASCII but '=', KEP-4369) that are not shell
// identifiers; the slot's OMP_NUM_THREADS must still be added next to a name that contains it.
const ODD_ENV: [string, string][] = [
  ["A-B", "dash"],
  ["my.var", HOSTILE],
  ["1VAR", "digit"],
  ["-x", "leading dash"],
  [" OMP_NUM_THREADS", "a space"],
  ["X$(touch marker)`touch marker`", "shell text"],
  ["PLAIN", "identifier"],
];
const oddCalls = join(tempDir("shim-calls-"), "calls");
const oddEnv = scenario(
  plan({
    containers: [
      sh("odd", "env -0 > /shared/env.odd; for i in $(seq 300); do [ -e /shared/env.hook ] && break; sleep 0.1; done", {
        env: ODD_ENV,
        postStart: { kind: "exec", command: ["bash", "-c", "env -0 > /shared/env.hook.tmp && mv /shared/env.hook.tmp /shared/env.hook"] },
      }),
      container("onhost", { index: 1, image: { kind: "host" }, command: ["/bin/bash", "-c", "env -0 > host.env"], env: ODD_ENV }),
    ],
  }),
  { env: { MINICONDOR_SHIM_LOG: oddCalls } },
);

// Mounts in pod order child first (/data/sub before /data), and one below /tmp: bound parent
// first, none hides another.
const nested = scenario(
  plan({
    emptyDirs: ["data", "sub", "t"],
    containers: [
      sh("nest", "echo s > /data/sub/f && echo d > /data/g && echo t > /tmp/x/h", {
        mounts: [
          { source: { kind: "sandbox", path: "emptydir/sub" }, target: "/data/sub", readOnly: false },
          { source: { kind: "sandbox", path: "emptydir/data" }, target: "/data/", readOnly: false },
          { source: { kind: "sandbox", path: "emptydir/t" }, target: "/tmp/x", readOnly: false },
        ],
      }),
    ],
  }),
);

// singularity-options that act at exec time reach the main process and the hooks, not only
// `instance start` (which would drop them).
const optCalls = join(tempDir("shim-calls-"), "calls");
const execOpts = scenario(
  plan({
    containers: [
      sh("opts", 'printf "%s|%s" "$FROM_OPT" "$PWD" > /shared/main.opt; for i in $(seq 300); do [ -e /shared/hook.opt ] && break; sleep 0.1; done', {
        runtimeOptions: ["--writable-tmpfs"],
        execOptions: ["--env=FROM_OPT=yes", "--pwd=/shared"],
        postStart: { kind: "exec", command: ["bash", "-c", 'printf "%s" "$FROM_OPT" > /shared/hook.tmp && mv /shared/hook.tmp /shared/hook.opt'] },
      }),
    ],
  }),
  { env: { MINICONDOR_SHIM_LOG: optCalls } },
);

// SharedFilesystem: HTCondor sets _CONDOR_JOB_IWD to the submit folder
// (docs/htcondor.md#the-jobs-environment), which the sidecar reads the logs from while the job
// runs.
const IWD = tempDir("pod-folder-");
const sharedFs = scenario(
  plan({
    sharedFilesystem: true,
    restartPolicy: "OnFailure",
    containers: [sh("logged", 'n=$(cat /shared/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /shared/n; echo "run $n"; [ $n -ge 2 ] || exit 1')],
  }),
  { env: { _CONDOR_JOB_IWD: IWD } },
);
const sharedFsNoIwd = scenario(plan({ sharedFilesystem: true, containers: [sh("logged", "echo here")] }));

// SIGTERM (condor_rm, sent to the wrapper alone as HTCondor does) while a deliberate code channel
// runs: the pod stops as Killed, and the snippet's own children stop with it.
const termDuringPrefix = scenario(
  plan({ commandPrefix: "touch prefix-up; sleep 60; touch prefix-done", containers: [sh("main", "touch /shared/main-ran")] }),
  { termWhen: (dir) => existsSync(join(dir, "prefix-up")) },
);
const termDuringPreExec = scenario(
  plan({ preExec: ["touch pre-up; sleep 60 | cat; touch pre-done"], containers: [sh("main", "touch /shared/main-ran")] }),
  { termWhen: (dir) => existsSync(join(dir, "pre-up")) },
);

// A liveness probe with its own terminationGracePeriodSeconds (1 s) kills a container that
// ignores SIGTERM long before the pod's 30 s grace.
const probeGrace = scenario(
  plan({
    terminationGracePeriodSeconds: 30,
    containers: [
      // The probe fails once the container ignores SIGTERM: a kill before the trap would end it at once
      // (143), however long the grace, and the probe runs as soon as the container starts.
      sh("stuck", "trap '' TERM; : > /tmp/stuck-trapped; echo up; sleep 60 & wait; sleep 60", {
        livenessProbe: {
          handler: { kind: "exec", command: ["test", "!", "-e", "/tmp/stuck-trapped"] },
          initialDelaySeconds: 0,
          periodSeconds: 1,
          timeoutSeconds: 2,
          successThreshold: 1,
          failureThreshold: 1,
          terminationGracePeriodSeconds: 1,
        },
      }),
    ],
  }),
);

// periodSeconds is measured from start to start (the kubelet's ticker), not from the end of one
// probe to the start of the next: a 4 s probe every 5 s starts every 5 s, not every 9 s. The probe
// is an httpGet to this file's server (/tick), which answers after 4 s and records when each
// request came and when it was answered; no runtime process stands between the wrapper's clock
// and the probe's. The container runs until four probes have begun and three ended (the server
// then writes /shared/ticked), however slowly the machine runs them.
const probePeriod = scenario(
  plan({
    containers: [
      sh("ticked", "until [ -e /shared/ticked ]; do sleep 0.2; done", {
        readinessProbe: {
          handler: { kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port, path: "/tick", headers: [] },
          initialDelaySeconds: 0,
          periodSeconds: 5,
          // Only a guard against a hang (the answer comes after 4 s).
          timeoutSeconds: 60,
          successThreshold: 1,
          failureThreshold: 3,
        },
      }),
    ],
  }),
  { prepare: (dir) => (tickedDir = dir) },
);

// Apptainer binds the caller's working directory into the container unless it is / (or another
// system directory): the runtime must never be started from the sandbox, where env/*.env of every
// container lies. Without workingDir a container starts in / (the image's default), not there.
// Every process also writes the cwd bind the shim recorded for its container (MINICONDOR_CWD_BOUND).
const BOUND = 'printf "%s" "${MINICONDOR_CWD_BOUND-}" > /shared/bound.';
const cwdRuns = scenario(
  plan({
    initContainers: [initContainer("first", 0, { command: ["bash", "-c", `pwd > /shared/pwd.init; ${BOUND}init`], mounts: [shared] })],
    containers: [
      sh("nowd", `pwd > /shared/pwd.main; ${BOUND}main; for i in $(seq 300); do [ -e /shared/pwd.hook ] && break; sleep 0.1; done`, {
        postStart: { kind: "exec", command: ["bash", "-c", `${BOUND}hook; pwd > /shared/pwd.tmp && mv /shared/pwd.tmp /shared/pwd.hook`] },
      }),
      sh("withwd", `pwd > /shared/pwd.wd; ${BOUND}wd`, { index: 1, workingDir: "/shared" }),
      // args only: `apptainer run` (the image's entrypoint, python3 in minicondor's image table).
      container("runs", {
        index: 2,
        image: { kind: "container", uri: "docker://python:3.12" },
        args: ["-c", "import os; open('/shared/bound.run', 'w').write(os.environ.get('MINICONDOR_CWD_BOUND', ''))"],
        mounts: [shared],
      }),
    ],
  }),
);

/** NAME=value records of `env -0` output. */
function envRecords(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const rec of text.split("\0").slice(0, -1)) m.set(rec.slice(0, rec.indexOf("=")), rec.slice(rec.indexOf("=") + 1));
  return m;
}

/** The GPU flags of the `instance start` that started the container with this key. */
function startGpuFlags(calls: ShimCall[], key: string): string[] {
  const starts = calls.filter((c) => c.argv[1] === "instance" && c.argv[2] === "start" && c.argv.at(-1)!.endsWith(`-${key}`));
  expect(starts).toHaveLength(1);
  return starts[0]!.argv.slice(3, -2).filter((a) => a === "--nv" || a === "--rocm");
}

// ---------------------------------------------------------------------------------------------

describe("a pod runs as one job", () => {
  test("init containers run in order, before the containers; prefix and pre-exec first", async () => {
    const o = await basics;
    expect(file(o, "emptydir/shared/order")).toBe("one\ntwo\n");
    expect(file(o, "order.txt")).toBe("prefix\npre-exec\n");
    for (const n of ["one", "two"]) expect(readState(o.dir, n, true)).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0 });
    const initEnd = readState(o.dir, "two", true)!.finishedAt!;
    expect(readState(o.dir, "a")!.startedAt!).toBeGreaterThanOrEqual(initEnd);
  });

  test("the job exits with the highest container exit code", async () => {
    const o = await basics;
    expect(o.code).toBe(5);
    expect(readState(o.dir, "a")).toMatchObject({ state: "terminated", reason: "Error", exitCode: 3, ready: false });
    expect(readState(o.dir, "b")).toMatchObject({ state: "terminated", reason: "Error", exitCode: 5 });
    expect(readState(o.dir, "c")).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0 });
  });

  test("containers run concurrently and share emptyDir and /tmp", async () => {
    const o = await basics;
    expect(file(o, "emptydir/shared/concurrent")).toBe("saw-b\n");
    expect(file(o, "emptydir/shared/tmp.b")).toBe("tmp-a\n");
  });

  test("env and args reach the process byte for byte; nothing is evaluated", async () => {
    const o = await basics;
    expect(file(o, "emptydir/shared/env.a")).toBe(HOSTILE);
    expect(file(o, "emptydir/shared/args.a")).toBe(["argv0", HOSTILE, "x  y", ""].map((a) => `${a}\0`).join(""));
    const env = "\n" + file(o, "emptydir/shared/env-all.a");
    expect(env).toContain("\nEMPTY=\n");
    expect(env).toContain("\nOMP_NUM_THREADS=4\n"); // the pod's value wins over the slot's
    expect(env).toContain("\nGOMAXPROCS=1\n"); // the slot's value is kept
    expect(env).toContain("\nCUDA_VISIBLE_DEVICES=10000\n");
    expect(env).toContain("\nPOD_IP=10.0.0.7\n");
    expect(env).not.toContain("_CONDOR_SCRATCH_DIR"); // --cleanenv
    expect(existsSync(join(o.dir, "marker"))).toBe(false);
    expect(existsSync(join(o.dir, "emptydir/shared/marker"))).toBe(false);
  });

  // docs/pod-to-job.md#env (env), KEP-4369: names that are not shell identifiers reach the main
  // process, its hooks and a host container byte for byte; never as APPTAINERENV_<NAME>, which
  // Apptainer's action script would drop.
  test("env names that are not shell identifiers reach the container byte for byte", async () => {
    const o = await oddEnv;
    expect(o.code).toBe(0);
    for (const f of ["emptydir/shared/env.odd", "emptydir/shared/env.hook", "host.env"]) {
      const env = envRecords(file(o, f));
      for (const [k, v] of ODD_ENV) expect([f, k, env.get(k)]).toEqual([f, k, v]);
      expect([f, env.get("OMP_NUM_THREADS")]).toEqual([f, "1"]);
    }
    for (const c of shimCalls(oddCalls)) {
      const injected = [...c.env.keys()].filter((k) => k.startsWith("APPTAINERENV_")).map((k) => k.slice("APPTAINERENV_".length));
      for (const k of injected) expect(k).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
    }
    expect(existsSync(join(o.dir, "marker"))).toBe(false);
    expect(existsSync(join("/", "marker"))).toBe(false);
  });

  // A parent mount bound after its child would hide it (and /tmp after a volume below it).
  test("nested mounts are bound parent first, whatever the pod's order", async () => {
    const o = await nested;
    expect(o.code).toBe(0);
    expect([file(o, "emptydir/sub/f"), file(o, "emptydir/data/g"), file(o, "emptydir/t/h")]).toEqual(["s\n", "d\n", "t\n"]);
  });

  test("the runtime runs from /, never from the sandbox: no workingDir means /, in every container and hook", async () => {
    const o = await cwdRuns;
    expect(o.code).toBe(0);
    expect(["pwd.init", "pwd.main", "pwd.hook", "pwd.wd"].map((f) => file(o, `emptydir/shared/${f}`))).toEqual(["/\n", "/\n", "/\n", "/shared\n"]);
  });

  // The sandbox holds env/*.env of every container (secrets included): no instance start, exec or
  // run of any container, init container or hook may bind it as the runtime's working directory.
  test("no container sees a bind of the runtime's working directory (the sandbox)", async () => {
    const o = await cwdRuns;
    expect(o.code).toBe(0);
    const marks = ["init", "main", "hook", "wd", "run"].map((k) => [k, file(o, `emptydir/shared/bound.${k}`)]);
    expect(marks).toEqual(["init", "main", "hook", "wd", "run"].map((k) => [k, ""]));
  });

  test("args without command: the image's entrypoint runs with them", async () => {
    const o = await basics;
    expect(file(o, "emptydir/shared/run.c")).toBe("run-args zero\n");
  });

  test("volumes are at their mount paths, read-only when asked; modes are restored", async () => {
    const o = await basics;
    expect(file(o, "emptydir/shared/config.a")).toBe("level: debug\n");
    expect(existsSync(join(o.dir, "emptydir/shared/ro.a"))).toBe(false);
    expect(file(o, "volumes/config/app.yaml")).toBe("level: debug\n");
    expect(statSync(join(o.dir, "volumes/creds/token")).mode & 0o777).toBe(0o600);
    expect(statSync(join(o.dir, "volumes/creds/cert")).mode & 0o777).toBe(0o440);
    expect(statSync(join(o.dir, "env/c.a.env")).mode & 0o777).toBe(0o600);
  });

  test("logs: stdout and stderr interleaved, every line timestamped, the last partial line kept", async () => {
    const o = await basics;
    const log = readLog(o.dir, "a");
    const lines = log.split("\n");
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).toMatch(TS_LINE);
    expect(logText(o.dir, "a")).toEqual(["line one", "to stderr", "no newline at end"]);
    expect(log.endsWith("no newline at end")).toBe(true);
    expect(logText(o.dir, "one", true)).toEqual(["init one"]);
    // Every file named in transfer_output_files exists.
    for (const k of ["i.one", "i.two", "c.a", "c.b", "c.c"]) {
      expect(existsSync(join(o.dir, `${k}.log`))).toBe(true);
      expect(existsSync(join(o.dir, `${k}.prev.log`))).toBe(true);
    }
    expect(wrapperLog(o.dir)).not.toContain("line one");
    expect(readLog(o.dir, "a")).not.toContain("instance");
  });

  test("state lines go through waiting → running → terminated, and every one is chirped", async () => {
    const o = await basics;
    const seen = states(o, "c.b").map((s) => s.state);
    expect(seen[0]).toBe("waiting");
    expect(seen.at(-1)).toBe("terminated");
    expect(seen).toContain("running");
    const all = chirpCalls(condor);
    // Each state is followed by the time of the change (docs/status.md#following-spooled-jobs).
    // Containers run side by side, so two writers' pairs may interleave: no time may come before
    // its state, and every state gets one.
    let pending = 0;
    for (const c of all) {
      expect(c[0]).toBe("set_job_attr");
      if (c[1] === "InterLinkStateTime") {
        expect(--pending).toBeGreaterThanOrEqual(0);
        expect(Math.abs(Number(c[2]) - Date.now() / 1000)).toBeLessThan(3600);
      } else {
        expect(c[1]).toMatch(/^InterLink(Init|Ctr)\d+State$/);
        expect(c[2]).toMatch(/^"1 [A-Za-z0-9_.: -]+"$/);
        pending++;
      }
    }
    expect(pending).toBe(0);
    const calls = all.filter((c) => c[1] !== "InterLinkStateTime");
    const last = (attr: string) => calls.filter((c) => c[1] === attr).at(-1)?.[2];
    expect(last("InterLinkCtr1State")).toBe(`"${file(o, "podstate/c.b").trim()}"`);
    expect(last("InterLinkInit0State")).toBe(`"${file(o, "podstate/i.one").trim()}"`);
  });

  test("a run chirps every container's fresh state at setup, replacing what a previous run left in the job ad", async () => {
    const o = await rerun;
    expect(o.code).toBe(0);
    const calls = chirpCalls(rerunCondor).filter((c) => c[1] !== "InterLinkStateTime");
    const mark = calls.findIndex((c) => c[0] === "MARK");
    expect(mark).toBeGreaterThan(0);
    const early = calls.slice(0, mark);
    expect(early.map((c) => [c[0], c[1]])).toEqual([
      ["set_job_attr", "InterLinkInit0State"],
      ["set_job_attr", "InterLinkCtr0State"],
      ["set_job_attr", "InterLinkCtr1State"],
    ]);
    for (const c of early) {
      expect(c[2]).toMatch(/^"[^"]*"$/);
      expect(parseStateLine(c[2]!.slice(1, -1))).toMatchObject({ state: "waiting", reason: "ContainerCreating", restartCount: 0, ready: false });
    }
    // …and the run's own states follow as usual.
    const last = (attr: string) => calls.filter((c) => c[1] === attr).at(-1)?.[2];
    expect(last("InterLinkCtr1State")).toBe(`"${file(o, "podstate/c.side").trim()}"`);
    expect(readState(o.dir, "side")).toMatchObject({ state: "terminated", reason: "Completed" });
  });

  test("a condor_chirp that fails from setup on never fails the job: the state files still come back", async () => {
    const o = await chirpFails;
    expect(o.code).toBe(0);
    expect(logText(o.dir, "main")).toEqual(["ran"]);
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0 });
    const calls = chirpCalls(chirpFailsCondor);
    expect(calls[0]?.[1]).toBe("InterLinkCtr0State");
    expect(calls.length).toBeGreaterThanOrEqual(3); // setup, running, terminated
    expect(wrapperLog(o.dir)).toContain("condor_chirp set_job_attr InterLinkCtr0State failed (exit 1): cannot connect to the starter");
  });

  test("background commands are stopped when the pod ends", async () => {
    const o = await basics;
    // Far less than the background command's 600 s, however loaded the machine.
    expect(o.ms).toBeLessThan(300_000);
    expect(wrapperLog(o.dir)).toContain("background[0]: starting");
  });
});

describe("SharedFilesystem", () => {
  test("container logs, current and previous, are written into $_CONDOR_JOB_IWD, not the sandbox", async () => {
    const o = await sharedFs;
    expect(o.code).toBe(0);
    const lines = (f: string) => readFileSync(join(IWD, f), "utf8").split("\n").filter(Boolean).map((l) => l.replace(TS_LINE, ""));
    expect(lines("c.logged.log")).toEqual(["run 2"]);
    expect(lines("c.logged.prev.log")).toEqual(["run 1"]);
    expect(existsSync(join(o.dir, "c.logged.log"))).toBe(false);
    expect(existsSync(join(o.dir, "c.logged.prev.log"))).toBe(false);
    expect(readState(o.dir, "logged")).toMatchObject({ state: "terminated", reason: "Completed", restartCount: 1 });
  });

  test("without _CONDOR_JOB_IWD the logs stay in the sandbox, with a warning", async () => {
    const o = await sharedFsNoIwd;
    expect(o.code).toBe(0);
    expect(logText(o.dir, "logged")).toEqual(["here"]);
    expect(wrapperLog(o.dir)).toContain("SharedFilesystem: _CONDOR_JOB_IWD (unset) is not a folder this job can write");
  });
});

describe("failures before the containers", () => {
  test("a failing init container stops the pod with its exit code", async () => {
    const o = await initFails;
    expect(o.code).toBe(7);
    expect(readState(o.dir, "ok", true)).toMatchObject({ state: "terminated", exitCode: 0, reason: "Completed" });
    expect(readState(o.dir, "bad", true)).toMatchObject({ state: "terminated", exitCode: 7, reason: "Error" });
    expect(readState(o.dir, "never", true)).toMatchObject({ state: "terminated", exitCode: 7, reason: "InitContainerFailed" });
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", exitCode: 7, reason: "InitContainerFailed" });
    expect(existsSync(join(o.dir, "emptydir/shared/never"))).toBe(false);
    expect(existsSync(join(o.dir, "emptydir/shared/main-ran"))).toBe(false);
    expect(logText(o.dir, "bad", true)).toEqual(["failing"]);
  });

  test("a failing pre-exec fails the pod", async () => {
    const o = await preExecFails;
    expect(o.code).toBe(4);
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", exitCode: 4, reason: "PreExecFailed" });
    expect(existsSync(join(o.dir, "emptydir/shared/main-ran"))).toBe(false);
    expect(wrapperLog(o.dir)).toContain("pre-exec[0]: about to fail");
  });

  // A stop is not a failure of the snippet: the containers read Killed (as for any stop), the job
  // ends at once, and no child of the snippet (sleep 60) outlives it, holding the job's streams.
  test.each(
    [
      ["CommandPrefix", () => termDuringPrefix, "prefix-done"],
      ["pre-exec", () => termDuringPreExec, "pre-done"],
    ] as const,
  )("SIGTERM during %s stops the pod as Killed, not as a failed snippet", async (_what, run, done) => {
    const o = await run();
    expect(o.termAt).toBeDefined();
    expect(o.code).toBe(143);
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "Killed", exitCode: 143 });
    expect(o.ms - o.termAt!).toBeLessThan(15_000);
    expect(existsSync(join(o.dir, done))).toBe(false);
    expect(existsSync(join(o.dir, "emptydir/shared/main-ran"))).toBe(false);
  });

  test("no runtime: every container terminated RuntimeNotFound, exit 127", async () => {
    const o = await noRuntime;
    expect(o.code).toBe(127);
    expect(readState(o.dir, "init", true)).toMatchObject({ state: "terminated", reason: "RuntimeNotFound", exitCode: 127 });
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "RuntimeNotFound", exitCode: 127 });
  });

  test("a runtime without --no-eval is refused when configured so", async () => {
    const o = await tooOldRefuse;
    expect(o.code).toBe(126);
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "RuntimeTooOld" });
  });

  test("…or used with a warning", async () => {
    const o = await tooOldWarn;
    expect(o.code).toBe(0);
    expect(logText(o.dir, "main")).toEqual(["ran-anyway"]);
    expect(wrapperLog(o.dir)).toContain("does not support --no-eval");
  });

  test("the runtime is found on the search path", async () => {
    const o = await searched;
    expect(o.code).toBe(0);
    expect(logText(o.dir, "main")).toEqual(["found"]);
  });

  test("what CommandPrefix exports reaches the wrapper: the runtime is found on its PATH", async () => {
    const o = await prefixed;
    expect(o.code).toBe(0);
    expect(logText(o.dir, "main")).toEqual(["via-prefix"]);
  });
});

// docs/status.md#why-a-container-did-not-start
describe("a container that cannot start says why", () => {
  test("a usage error: the message is the `Error for command` line, not the help hint after it", async () => {
    const o = await usageError;
    expect(o.code).not.toBe(0);
    expect(readState(o.dir, "main")).toMatchObject({
      state: "terminated",
      reason: "StartError",
      message: 'Error for command "start": unknown flag: --pid',
    });
    // The whole output is in the wrapper's log.
    expect(wrapperLog(o.dir)).toContain("Options for start command:");
    expect(wrapperLog(o.dir)).toContain("Run 'apptainer --help' for more detailed usage information.");
    expect(existsSync(join(o.dir, "emptydir/shared/main-ran"))).toBe(false);
  });

  test("the first FATAL line, the cause, over the parent's later one and any ERROR", async () => {
    const o = await creationFailed;
    expect(readState(o.dir, "main")).toMatchObject({
      state: "terminated",
      reason: "StartError",
      message: "FATAL:   container creation failed: while applying cgroups config: Interactive authentication required.",
    });
    expect(wrapperLog(o.dir)).toContain("FATAL:   while executing starter: failed to start instance");
  });

  test("without FATAL, the last ERROR line", async () => {
    const o = await onlyErrorLines;
    expect(readState(o.dir, "main")).toMatchObject({ reason: "StartError", message: "ERROR:   second problem" });
  });

  test("with none of these prefixes, the last non-blank line", async () => {
    const o = await noPrefix;
    expect(readState(o.dir, "main")).toMatchObject({ reason: "StartError", message: "the last words" });
  });
});

describe("restarts", () => {
  test("OnFailure restarts with backoff, CrashLoopBackOff in between, last state kept", async () => {
    const o = await restarts;
    expect(o.code).toBe(0);
    const final = readState(o.dir, "flaky")!;
    expect(final).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0, restartCount: 2 });
    expect(final.last).toMatchObject({ exitCode: 12, reason: "Error" });
    const waits = states(o, "c.flaky").filter((s) => s.state === "waiting" && s.reason === "CrashLoopBackOff");
    expect(waits.map((s) => s.restartCount)).toEqual([1, 2]);
    expect(waits[0]!.last).toMatchObject({ exitCode: 11 });
    expect(logText(o.dir, "flaky")).toEqual(["run 3"]);
    expect(logText(o.dir, "flaky", false, true)).toEqual(["run 2"]);
    // backoff 1 s, then 2 s
    expect(o.ms).toBeGreaterThanOrEqual(3000);
  });

  test("restarts stop at maxRestarts", async () => {
    const o = await capped;
    expect(o.code).toBe(2);
    expect(readState(o.dir, "crash")).toMatchObject({ state: "terminated", reason: "Error", exitCode: 2, restartCount: 2 });
  });

  test("Always with restartAfterSuccess restarts after exit 0", async () => {
    const o = await always;
    expect(o.code).toBe(0);
    expect(readState(o.dir, "done")).toMatchObject({ state: "terminated", reason: "Completed", restartCount: 1 });
  });

  test("a failing liveness probe kills the container, which restarts", async () => {
    const o = await liveness;
    expect(o.code).toBe(0);
    const s = readState(o.dir, "live")!;
    expect(s).toMatchObject({ state: "terminated", reason: "Completed", restartCount: 1 });
    expect(s.last).toMatchObject({ reason: "LivenessProbeFailed" });
    expect(logText(o.dir, "live", false, true)).toEqual(["run 1"]);
    expect(logText(o.dir, "live")).toEqual(["run 2"]);
  });
});

describe("probes", () => {
  test("a failed liveness probe kills with the probe's own terminationGracePeriodSeconds", async () => {
    const o = await probeGrace;
    const end = readState(o.dir, "stuck")!;
    expect(end).toMatchObject({ state: "terminated", reason: "LivenessProbeFailed", exitCode: 137, signal: 9 });
    // From the decision to the end: the probe's 1 s (and the SIGKILL), not the pod's 30 s.
    const line = wrapperLog(o.dir).split("\n").find((l) => l.includes("stopping the container: LivenessProbeFailed (grace 1s)"));
    expect(line).toBeDefined();
    const decided = Date.parse(line!.split(" ")[0]!);
    expect(end.finishedAt! * 1000 - decided).toBeLessThan(15_000);
  });

  test("periodSeconds runs from the start of one probe to the start of the next", async () => {
    const o = await probePeriod;
    expect(o.code).toBe(0);
    expect(ticks.length).toBeGreaterThanOrEqual(4);
    expect(ticks.filter((t) => t.end !== undefined).length).toBeGreaterThanOrEqual(3);
    // Measured from the end of a probe, the next would begin periodSeconds (5 s) after that end or
    // later, however fast or slow the machine: each probe's own end is the bound, not a constant.
    // From its start, the next begins 5 s after the start (1 s after a 4 s probe's end), or at
    // once after a probe that took longer than the period. The median, so that one probe that
    // started late on a busy machine does not decide.
    const sinceEnd = ticks.slice(1).flatMap((next, i) => (ticks[i]!.end === undefined ? [] : [next.start - ticks[i]!.end!]));
    const median = sinceEnd.sort((a, b) => a - b)[Math.floor(sinceEnd.length / 2)]!;
    expect(median).toBeLessThan(5000);
  });

  test("readiness follows an httpGet probe after the tcpSocket startup probe", async () => {
    const o = await probes;
    const ready = states(o, "c.ready");
    expect(ready.some((s) => s.state === "running" && !s.ready)).toBe(true);
    expect(ready.some((s) => s.state === "running" && s.ready)).toBe(true);
    expect(readState(o.dir, "ready")).toMatchObject({ state: "terminated", reason: "Completed", ready: false });
    expect(states(o, "c.never").some((s) => s.ready)).toBe(false);
  });

  test("a startup probe that never succeeds kills the container", async () => {
    const o = await probes;
    const s = readState(o.dir, "nostart")!;
    expect(s).toMatchObject({ state: "terminated", reason: "StartupProbeFailed", exitCode: 143, signal: 15 });
    expect(o.code).toBe(143);
  });

  test("the bash-only HTTP GET (no curl) accepts 2xx/3xx and sends headers", async () => {
    const run = (path: string, ...headers: string[]) =>
      Bun.spawn([BASH, "-c", `${WRAPPER_LIB}\ndevtcp_get 127.0.0.1 ${port} "$@"`, "t", path, ...headers], { env: {} }).exited;
    expect(await run("/ok", "X-Probe", "it's me")).toBe(0);
    expect(await run("/ok", "X-Probe", "someone else")).toBe(1);
    expect(await run("/redirect")).toBe(0);
    expect(await run("/bad")).toBe(1);
  });
});

// docs/pod-to-job.md#probes-and-hooks: lifecycle hooks, with Kubernetes' semantics: postStart runs in the
// container next to its process; when it fails the container is killed (and restarted per policy).
describe("lifecycle hooks", () => {
  test("postStart runs inside the running container; the container runs and is ready as usual", async () => {
    const o = await postStartOk;
    expect(o.code).toBe(0);
    expect(file(o, "emptydir/shared/hooked")).toBe(`${file(o, "emptydir/shared/token")}hook\n`);
    expect(states(o, "c.hooked").some((s) => s.state === "running" && s.ready)).toBe(true);
    expect(readState(o.dir, "hooked")).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0, restartCount: 0 });
    expect(wrapperLog(o.dir)).toContain("postStart: done");
  });

  test("a failing postStart kills the container: PostStartHookError, and the job fails", async () => {
    const o = await postStartFails;
    expect(states(o, "c.doomed").map((s) => s.state)).toContain("running");
    expect(readState(o.dir, "doomed")).toMatchObject({
      state: "terminated",
      reason: "PostStartHookError",
      exitCode: 143,
      signal: 15,
      restartCount: 0,
    });
    expect(o.code).toBe(143);
    // Killed, not waited for: the container would sleep 600 s.
    expect(o.ms).toBeLessThan(300_000);
    expect(wrapperLog(o.dir)).toContain("postStart: failed");
    expect(wrapperLog(o.dir)).toContain("hook failing");
  });
});

describe("stopping a pod", () => {
  test("SIGTERM runs preStop and stops the containers within the grace period", async () => {
    const o = await sigterm;
    expect(file(o, "emptydir/shared/prestop")).toBe("prestop\n");
    expect(readState(o.dir, "polite")).toMatchObject({ state: "terminated", reason: "Killed", exitCode: 143, signal: 15 });
    expect(readState(o.dir, "stubborn")).toMatchObject({ state: "terminated", reason: "Killed", exitCode: 137, signal: 9 });
    expect(o.code).toBe(143);
    // SIGKILL when the grace period is over, and done before HTCondor's job_max_vacate_time
    // (grace + 10 s) would kill the wrapper.
    expect(o.termAt).toBeDefined();
    expect(o.ms - o.termAt!).toBeGreaterThanOrEqual(GRACE * 1000);
    expect(o.ms - o.termAt!).toBeLessThan(GRACE * 1000 + 10_000);
  });

  // docs/interlink.md#what-the-virtual-kubelet-does-with-a-status (a stopped init container leaves
  // every container terminated, non-zero; a later one never runs), docs/interlink.md#check-20.
  test("SIGTERM during an init container stops it at once; nothing after it starts", async () => {
    const o = await termDuringInit;
    expect(o.termAt).toBeDefined();
    expect(o.ms - o.termAt!).toBeLessThan((INIT_GRACE * 1000) / 2);
    expect(o.code).toBe(143);
    expect(readState(o.dir, "slow", true)).toMatchObject({ state: "terminated", reason: "Killed", exitCode: 143, signal: 15 });
    for (const [name, init] of [["after", true], ["main", false], ["side", false]] as const) {
      expect(readState(o.dir, name, init)).toMatchObject({ state: "terminated", reason: "Killed", exitCode: 143 });
      expect(states(o, `${init ? "i" : "c"}.${name}`).map((s) => s.state)).not.toContain("running");
    }
    for (const f of ["after-ran", "main-ran", "side-ran"]) expect(existsSync(join(o.dir, "emptydir/shared", f))).toBe(false);
    // The init container's instance was stopped, not left behind.
    const list = Bun.spawnSync([SHIM, "instance", "list", "-j"], { env: { MINICONDOR_HOME: join(o.dir, ".minicondor") } });
    expect(JSON.parse(list.stdout.toString()).instances).toEqual([]);
  });

  test("activeDeadlineSeconds stops the pod with DeadlineExceeded", async () => {
    const o = await deadline;
    expect(readState(o.dir, "long")).toMatchObject({ state: "terminated", reason: "DeadlineExceeded", exitCode: 143 });
    expect(o.code).toBe(143);
    // Stopped by the deadline, not by the container's own 600 s.
    expect(o.ms).toBeLessThan(300_000);
  });
});

describe("special pods", () => {
  test("a dummy job reports its containers running, then completed", async () => {
    const o = await dummy;
    expect(o.code).toBe(0);
    for (const k of ["c.main", "c.side"]) {
      expect(states(o, k).map((s) => s.state)).toContain("running");
    }
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0 });
    expect(logText(o.dir, "main")).toEqual([]);
  });

  test("a host container runs on the worker with the site as first argument", async () => {
    const o = await host;
    expect(o.code).toBe(0);
    expect(file(o, "host.args")).toBe("T2_XY\0extra arg\0");
    expect(file(o, "host.env")).toBe(HOSTILE);
    expect(file(o, "host.path")).toBe("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
  });
});

describe("the runtime's flags and environment", () => {
  test("config apptainerCacheDir: the runtime gets APPTAINER_CACHEDIR and SINGULARITY_CACHEDIR, the container not", async () => {
    const o = await cached;
    expect(o.code).toBe(0);
    const calls = shimCalls(cachedCalls);
    expect(calls.some((c) => c.argv[1] === "instance" && c.argv[2] === "start")).toBe(true);
    for (const c of calls) {
      expect([c.argv[1], c.env.get("APPTAINER_CACHEDIR"), c.env.get("SINGULARITY_CACHEDIR")]).toEqual([c.argv[1], CACHE_DIR, CACHE_DIR]);
    }
    expect(statSync(CACHE_DIR).isDirectory()).toBe(true);
    expect(file(o, "emptydir/shared/env")).not.toContain("CACHEDIR"); // --cleanenv
  });

  test("without apptainerCacheDir the wrapper exports no cache directory", async () => {
    const o = await uncached;
    expect(o.code).toBe(0);
    const calls = shimCalls(uncachedCalls);
    expect(calls.some((c) => c.argv[1] === "instance" && c.argv[2] === "start")).toBe(true);
    for (const c of calls) {
      expect([...c.env.keys()].filter((k) => k.endsWith("_CACHEDIR"))).toEqual([]);
    }
  });

  // docs/pod-to-job.md#resources: amd.com/gpu needs --rocm; nvidia.com/gpu and other vendors keep --nv.
  // Apptainer's exec into an instance takes its own env and working directory.
  test("singularity-options for exec time reach every exec, start-time ones the instance start", async () => {
    const o = await execOpts;
    expect(o.code).toBe(0);
    expect(file(o, "emptydir/shared/main.opt")).toBe("yes|/shared");
    expect(file(o, "emptydir/shared/hook.opt")).toBe("yes");
    const calls = shimCalls(optCalls);
    const starts = calls.filter((c) => c.argv[1] === "instance" && c.argv[2] === "start");
    const execs = calls.filter((c) => c.argv[1] === "exec");
    expect(starts).toHaveLength(1);
    expect(execs.length).toBeGreaterThanOrEqual(2);
    expect(starts[0]!.argv).toContain("--writable-tmpfs");
    expect(starts[0]!.argv).not.toContain("--env=FROM_OPT=yes");
    for (const c of execs) expect(c.argv).toContain("--env=FROM_OPT=yes");
  });

  test("GPU containers start with --rocm for AMD GPUs, --nv for the others", async () => {
    const o = await gpus;
    expect(o.code).toBe(0);
    const calls = shimCalls(gpuCalls);
    expect(startGpuFlags(calls, "i.prep")).toEqual(["--rocm"]);
    expect(startGpuFlags(calls, "c.nvidia")).toEqual(["--nv"]);
    expect(startGpuFlags(calls, "c.amd")).toEqual(["--rocm"]);
    expect(startGpuFlags(calls, "c.both")).toEqual(["--nv", "--rocm"]);
    expect(startGpuFlags(calls, "c.cpu")).toEqual([]);
  });
});

afterAll(() => {
  server?.stop(true);
  cleanup();
});
