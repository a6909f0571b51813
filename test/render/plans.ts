/** JobPlans built by hand for the render tests (independent of core/plan.ts). */
import type { ContainerPlan, JobPlan, PodFile } from "../../src/core/types.ts";
import { containerKey } from "../../src/core/types.ts";

const enc = new TextEncoder();

/** The env file format of the sandbox: NUL-terminated NAME=value records. */
export function envFile(env: [string, string][]): Uint8Array {
  return enc.encode(env.map(([k, v]) => `${k}=${v}\0`).join(""));
}

export function container(name: string, over: Partial<ContainerPlan> = {}): ContainerPlan {
  return {
    name,
    init: false,
    index: 0,
    image: { kind: "container", uri: "docker://busybox:1.36" },
    env: [],
    mounts: [],
    runtimeOptions: [],
    execOptions: [],
    gpus: 0,
    ...over,
  };
}

export function initContainer(name: string, index: number, over: Partial<ContainerPlan> = {}): ContainerPlan {
  return container(name, { init: true, index, ...over });
}

/** Adds env/<key>.env files for every container, as plan.ts does. */
export function withEnvFiles(plan: JobPlan): JobPlan {
  const files: PodFile[] = [...plan.initContainers, ...plan.containers].map((c) => ({
    path: `env/${containerKey(c.name, c.init)}.env`,
    content: envFile(c.env),
    mode: 0o600,
    secret: true,
  }));
  const transferInput = [...new Set([...plan.transferInput, ...(files.length > 0 ? ["env"] : [])])];
  return { ...plan, files: [...files, ...plan.files], transferInput };
}

export function basePlan(over: Partial<JobPlan> = {}): JobPlan {
  return {
    uid: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    name: "web-1",
    namespace: "default",
    sidecarId: "sidecar-a",
    batchName: "default/web-1",
    restartPolicy: "Never",
    maxRestarts: 3,
    restartAfterSuccess: false,
    backoffInitialSeconds: 10,
    backoffMaxSeconds: 300,
    terminationGracePeriodSeconds: 30,
    backgroundCommands: [],
    preExec: [],
    runtime: { searchPath: [], noHome: true, oldRuntime: "warn" },
    emptyDirs: [],
    hostPathPrefixes: [],
    files: [],
    transferInput: [],
    initContainers: [],
    containers: [container("main", { command: ["true"] })],
    resources: { cpus: 1, memoryMiB: 128, gpus: 0 },
    submit: { lines: [] },
    sharedFilesystem: false,
    dummy: false,
    warnings: [],
    ...over,
  };
}

/** The smallest real plan: one container, no volumes. */
export const minimalPlan: JobPlan = withEnvFiles(basePlan());

/** A plan that uses every feature the renderers know about. */
export const richPlan: JobPlan = withEnvFiles(
  basePlan({
    restartPolicy: "OnFailure",
    activeDeadlineSeconds: 3600,
    terminationGracePeriodSeconds: 20,
    commandPrefix: "source /cvmfs/sw.example.org/setup.sh",
    backgroundCommands: ["wstunnel client -L 'tcp://8080:localhost:8080' wss://mesh.example.org"],
    preExec: ['echo "pre-exec in $PWD"'],
    podIP: "10.1.2.3",
    runtime: {
      pinned: "/opt/apptainer/bin/apptainer",
      searchPath: ["/cvmfs/oasis.opensciencegrid.org/mis/apptainer/bin"],
      noHome: true,
      cacheDir: "/scratch/apptainer-cache",
      oldRuntime: "refuse",
    },
    emptyDirs: ["shared"],
    hostPathPrefixes: ["/cvmfs"],
    files: [
      { path: "volumes/config/app.yaml", content: enc.encode("level: debug\n"), mode: 0o644, secret: false },
      { path: "volumes/creds/token", content: enc.encode("s3cr3t-token"), mode: 0o600, secret: true },
    ],
    transferInput: ["volumes"],
    initContainers: [
      initContainer("fetch", 0, {
        image: { kind: "container", uri: "docker://curlimages/curl:8.10.1" },
        command: ["sh", "-c"],
        args: ["curl -fsS \"$SOURCE_URL\" -o /shared/data && echo 'fetched $(date)'"],
        env: [["SOURCE_URL", "https://data.example.org/x?a=1&b='2'"]],
        mounts: [{ source: { kind: "sandbox", path: "emptydir/shared" }, target: "/shared", readOnly: false }],
      }),
    ],
    containers: [
      container("web", {
        image: { kind: "container", uri: "docker://nginx:1.27" },
        args: ["nginx", "-g", "daemon off;"],
        workingDir: "/usr/share/nginx/html",
        env: [
          ["GREETING", 'it\'s "$HOME" `uname` $(id) \\ \n é'],
          ["EMPTY", ""],
        ],
        mounts: [
          { source: { kind: "sandbox", path: "volumes/config" }, target: "/etc/app", readOnly: true },
          { source: { kind: "sandbox", path: "emptydir/shared" }, target: "/usr/share/nginx/html", readOnly: false },
          { source: { kind: "host", path: "/cvmfs/data.example.org" }, target: "/data", readOnly: true },
        ],
        runtimeOptions: ["--writable-tmpfs"],
        execOptions: ["--env=FROM_SITE=1"],
        gpus: 1,
        startupProbe: {
          handler: { kind: "tcpSocket", host: "127.0.0.1", port: 8080 },
          initialDelaySeconds: 0,
          periodSeconds: 2,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 30,
        },
        readinessProbe: {
          handler: { kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port: 8080, path: "/healthz", headers: [["X-Probe", "ready; it's me"]] },
          initialDelaySeconds: 5,
          periodSeconds: 10,
          timeoutSeconds: 1,
          successThreshold: 1,
          failureThreshold: 3,
        },
        livenessProbe: {
          handler: { kind: "exec", command: ["cat", "/tmp/healthy"] },
          initialDelaySeconds: 10,
          periodSeconds: 10,
          timeoutSeconds: 2,
          successThreshold: 1,
          failureThreshold: 3,
        },
        postStart: { kind: "exec", command: ["sh", "-c", "echo started > /tmp/healthy"] },
        preStop: { kind: "sleep", seconds: 2 },
      }),
      container("sidecar", {
        index: 1,
        image: { kind: "host", site: "T2_IT_Legnaro" },
        command: ["./setupwn.sh"],
        env: [["ROLE", "sidecar"]],
      }),
    ],
    resources: { cpus: 3, memoryMiB: 2048, diskKiB: 10485760, gpus: 1 },
    submit: {
      lines: [
        ["MY.ProjectName", '"cms $(ENV(HOME))"'],
        ["periodic_remove", "JobStatus == 5 && (time() - EnteredCurrentStatus) > 3600"],
      ],
      requirements: "HasSingularity == true",
      accountingGroup: "group_cms.prod",
    },
  }),
);

/**
 * A plan that runs interLink's job script instead of its containers (plan.jobScript, a 0700 file
 * of the plan): init containers and two containers to report it, the channels that still run.
 */
export const jobScriptPlan: JobPlan = withEnvFiles(
  basePlan({
    commandPrefix: "module load apptainer",
    preExec: ["echo pre-exec"],
    files: [{ path: "job-script.sh", content: enc.encode('#!/bin/bash\necho "it\'s the job script: $(hostname)"\n'), mode: 0o700, secret: true }],
    transferInput: ["job-script.sh"],
    jobScript: "job-script.sh",
    initContainers: [initContainer("fetch", 0, { command: ["true"] })],
    containers: [
      container("main", { command: ["true"], env: [["TOKEN", "from-a-secret"]] }),
      container("sidecar", { index: 1, command: ["true"] }),
    ],
  }),
);
