/**
 * A real etcd + kube-apiserver per test file, the way controller-runtime's envtest does it: no
 * kubelet, no controllers, free ports, a fresh folder, certificates made with openssl.
 * docs/kube-apiserver.md says where the binaries come from (scripts/kube-apiserver.sh) and why
 * the flags are what they are.
 */
import { describe, test } from "bun:test";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** The version scripts/kube-apiserver.sh builds and caches; the cache folder is keyed by it. */
export const KUBE_VERSION = "v1.20.2";

export interface KubeUser {
  name: string;
  /** Generated when not given. */
  token?: string;
  groups?: string[];
}

export interface Kube {
  /** https://127.0.0.1:PORT */
  url: string;
  dir: string;
  caFile: string;
  caPem: string;
  /** A client certificate in group system:masters: RBAC lets it do anything. */
  admin: { certFile: string; keyFile: string; certPem: string; keyPem: string };
  /** The static token of a user given in opts.users (or ADMIN_TOKEN_USER). */
  token(user: string): string;
  /**
   * Writes a kubeconfig and returns its path. "files": CA and client certificate as paths;
   * "embedded": the same as *-data; "token": CA path and the bearer token of `user`
   * (default: ADMIN_TOKEN_USER). "files" and "embedded" are always the admin.
   */
  kubeconfig(kind: "files" | "embedded" | "token", user?: string): string;
  /**
   * GETs a path of this server's API as the admin, with the client certificate: what a test polls
   * (an object's status, its events). Each kubectl costs about 0.25 CPU-seconds to start.
   */
  get(path: string): Promise<{ status: number; body: string }>;
  /** Runs kubectl against this server (as the admin unless opts.kubeconfig names another). */
  kubectl(args: string[], opts?: { stdin?: string; kubeconfig?: string }): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Stops kube-apiserver and starts it again on the same port; etcd, and so every object, is kept. */
  restartApiserver(): Promise<void>;
  /** Kills both processes by PID and removes the folder. */
  stop(): Promise<void>;
  /** For measurements (memory from /proc/PID/status). */
  pids(): { apiserver: number; etcd: number };
  /** How long startKube took, in milliseconds. */
  startMs: number;
}

/** A token user in group system:masters that every server has, for clients that prefer a bearer token. */
export const ADMIN_TOKEN_USER = "htcondor-sidecar-test-admin";

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(process.env.HOME || homedir(), ".cache");
  return join(base, "htcondor-sidecar", `kube-apiserver-${KUBE_VERSION}`);
}

function executable(path: string): boolean {
  try {
    return statSync(path).isFile() && (statSync(path).mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  // Debian installs etcd in /usr/bin, but a test runner's PATH may be minimal.
  for (const dir of ["/usr/bin", "/usr/local/bin"]) if (executable(join(dir, name))) return join(dir, name);
  return undefined;
}

/** The same search as scripts/kube-apiserver.sh: the environment variable, then the cache, then PATH. */
export function kubeBinaries(): { apiserver: string; etcd: string; kubectl: string } | { missing: string } {
  const pick = (envName: string, fallbacks: (string | undefined)[]): string | { missing: string } => {
    const fromEnv = process.env[envName];
    if (fromEnv) return executable(fromEnv) ? fromEnv : { missing: `${envName} names '${fromEnv}', which is not an executable file` };
    const found = fallbacks.find((p) => p !== undefined && executable(p));
    return found ?? { missing: "" };
  };
  const apiserver = pick("KUBE_APISERVER_BIN", [join(cacheDir(), "kube-apiserver"), onPath("kube-apiserver")]);
  const etcd = pick("ETCD_BIN", [onPath("etcd")]);
  const kubectl = pick("KUBECTL_BIN", [onPath("kubectl")]);
  const missing: string[] = [];
  for (const [name, got] of [["kube-apiserver", apiserver], ["etcd", etcd], ["kubectl", kubectl]] as const) {
    if (typeof got !== "string") missing.push(got.missing || `no ${name}`);
  }
  if (missing.length > 0 || typeof apiserver !== "string" || typeof etcd !== "string" || typeof kubectl !== "string") {
    return { missing: `${missing.join(", ")} (scripts/kube-apiserver.sh provides them)` };
  }
  return { apiserver, etcd, kubectl };
}

const found = kubeBinaries();
export const kubeAvailable: boolean = !("missing" in found);

let skipLinePrinted = false;

/**
 * describe() for tests that need the real API server. Without the binaries it prints one line
 * per test run and skips; under CI=true a missing binary fails instead, so CI cannot go green
 * by testing nothing.
 */
export function describeKube(name: string, fn: () => void): void {
  if ("missing" in found) {
    if (process.env.CI === "true") {
      describe(name, () => {
        test("the kube-apiserver, etcd and kubectl binaries are present (CI=true)", () => {
          throw new Error(`Operator tests cannot run: ${found.missing}`);
        });
      });
      return;
    }
    if (!skipLinePrinted) {
      skipLinePrinted = true;
      console.error(`operator tests skipped: ${found.missing}; run \`npm run test:operator\``);
    }
    describe.skip(name, fn);
    return;
  }
  describe(name, fn);
}

// Processes started here, so that a test run that dies still takes them along.
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) if (p.exitCode === null && p.pid) p.kill("SIGKILL");
});

function run(cmd: string, args: string[], opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((res, rej) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, env: opts.env, maxBuffer: 64 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err && typeof (err as { code?: unknown }).code !== "number") return rej(err);
      res({ code: err ? (err as { code: number }).code : 0, stdout: String(stdout), stderr: String(stderr) });
    });
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
    else child.stdin?.end();
  });
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const r = await run("openssl", args, { cwd: dir });
  if (r.code !== 0) throw new Error(`Running openssl ${args[0]} failed: ${r.stderr.trim()}`);
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? res(addr.port) : rej(new Error("Asking for a free port got no port"))));
    });
  });
}

/** P-256 keys: quicker to make than RSA on a loaded machine, and Go, Bun and Deno all take them. */
async function makeCerts(dir: string) {
  const c = (n: string) => join(dir, n);
  writeFileSync(c("openssl.cnf"), "[req]\ndistinguished_name = dn\n[dn]\n[ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n");
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(dir, [
    "req",
    "-x509",
    "-config",
    "openssl.cnf",
    "-extensions",
    "ca",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=htcondor-sidecar-test-ca",
  ]);
  // Each leaf gets its own serial: -CAcreateserial would have the two signings, which run side by
  // side, read and write one ca.srl at once ("Unable to load number from ca.srl" on a busy machine).
  const leaf = async (name: string, serial: number, subj: string, ext: string) => {
    writeFileSync(c(`${name}.ext`), `basicConstraints = CA:FALSE\nkeyUsage = critical,digitalSignature\n${ext}\n`);
    await openssl(dir, ["req", "-new", "-config", "openssl.cnf", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subj]);
    await openssl(dir, [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-set_serial",
      String(serial),
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.crt`,
    ]);
  };
  await Promise.all([
    leaf("serving", 2, "/CN=kube-apiserver", "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1,DNS:localhost"),
    leaf("admin", 3, "/O=system:masters/CN=htcondor-sidecar-test-admin", "extendedKeyUsage = clientAuth"),
    openssl(dir, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key"]),
  ]);
  await openssl(dir, ["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
}

function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, "0")).join("");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startProcess(cmd: string, args: string[], logFile: string): ChildProcess {
  const fd = openSync(logFile, "a");
  try {
    const child = spawn(cmd, args, { stdio: ["ignore", fd, fd] });
    live.add(child);
    child.once("exit", () => live.delete(child));
    return child;
  } finally {
    closeSync(fd);
  }
}

async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Waits until check() is true; fails early, with the log, when the process exits. */
async function waitFor(what: string, child: ChildProcess, logFile: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Starting ${what} failed: it exited (${child.exitCode ?? child.signalCode}); log ${logFile}:\n${tail(logFile)}`);
    }
    if (await check().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`Starting ${what} failed: not ready after ${timeoutMs / 1000} s; log ${logFile}:\n${tail(logFile)}`);
}

export async function startKube(opts: { users?: KubeUser[] } = {}): Promise<Kube> {
  const started = Date.now();
  if ("missing" in found) throw new Error(`Starting kube-apiserver failed: ${found.missing}`);
  const bins = found;
  const dir = mkdtempSync(join(tmpdir(), "kube-test-"));
  try {
    return await boot(dir, bins, opts.users ?? [], started);
  } catch (e) {
    for (const p of [...live]) if (p.spawnargs.some((a) => a.includes(dir))) await stopProcess(p, 2_000);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

async function boot(dir: string, bins: { apiserver: string; etcd: string; kubectl: string }, users: KubeUser[], started: number): Promise<Kube> {
  const [etcdPort, peerPort, port] = [await freePort(), await freePort(), await freePort()];
  const url = `https://127.0.0.1:${port}`;
  const p = (n: string) => join(dir, n);

  const tokens = new Map<string, string>();
  const rows: string[] = [];
  for (const u of [{ name: ADMIN_TOKEN_USER, groups: ["system:masters"] }, ...users] as KubeUser[]) {
    if (tokens.has(u.name)) throw new Error(`Starting kube-apiserver failed: the user '${u.name}' is given twice`);
    const token = u.token ?? randomToken();
    tokens.set(u.name, token);
    // CSV: token,user,uid,"group1,group2"
    rows.push(`${token},${JSON.stringify(u.name)},${JSON.stringify(u.name)},${JSON.stringify((u.groups ?? []).join(","))}`);
  }
  writeFileSync(p("tokens.csv"), rows.join("\n") + "\n", { mode: 0o600 });

  const etcdLog = p("etcd.log");
  const etcd = startProcess(bins.etcd, [
    "--name=test",
    `--data-dir=${p("etcd")}`,
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=test=http://127.0.0.1:${peerPort}`,
  ], etcdLog);
  // The certificates are made while etcd starts.
  await makeCerts(dir);
  await waitFor("etcd", etcd, etcdLog, async () => {
    const r = await fetch(`http://127.0.0.1:${etcdPort}/health`);
    return r.ok && (await r.json() as { health?: string }).health === "true";
  }, 60_000);

  const caPem = readFileSync(p("ca.crt"), "utf8");
  const admin = {
    certFile: p("admin.crt"),
    keyFile: p("admin.key"),
    certPem: readFileSync(p("admin.crt"), "utf8"),
    keyPem: readFileSync(p("admin.key"), "utf8"),
  };
  const apiserverArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    `--secure-port=${port}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    "--insecure-port=0",
    `--cert-dir=${p("apiserver-certs")}`,
    `--tls-cert-file=${p("serving.crt")}`,
    `--tls-private-key-file=${p("serving.key")}`,
    `--client-ca-file=${p("ca.crt")}`,
    `--token-auth-file=${p("tokens.csv")}`,
    "--service-cluster-ip-range=10.0.0.0/24",
    `--service-account-issuer=${url}`,
    `--service-account-key-file=${p("sa.pub")}`,
    `--service-account-signing-key-file=${p("sa.key")}`,
    "--authorization-mode=RBAC",
    // Nothing here creates the service accounts' tokens, so pods (never run here) would be refused.
    "--disable-admission-plugins=ServiceAccount",
    "--profiling=false",
  ];
  const apiLog = p("apiserver.log");
  const tls = { ca: caPem, cert: admin.certPem, key: admin.keyPem };
  const ready = async () => {
    const r = await fetch(`${url}/readyz`, { tls });
    if (r.status !== 200) return false;
    // readyz can answer before the bootstrap controller has made the default namespace.
    const ns = await fetch(`${url}/api/v1/namespaces/default`, { tls });
    return ns.status === 200;
  };
  const startApiserver = async () => {
    const child = startProcess(bins.apiserver, apiserverArgs, apiLog);
    await waitFor("kube-apiserver", child, apiLog, ready, 180_000);
    return child;
  };
  let apiserver = await startApiserver();

  const kubeconfigs = new Map<string, string>();
  const kubeconfig = (kind: "files" | "embedded" | "token", user?: string): string => {
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const who = kind === "token" ? user ?? ADMIN_TOKEN_USER : "admin";
    if (kind !== "token" && user !== undefined) throw new Error(`Writing a kubeconfig failed: kind '${kind}' is always the admin, not '${user}'`);
    const key = `${kind}-${who}`;
    const existing = kubeconfigs.get(key);
    if (existing) return existing;
    const cluster = kind === "embedded" ? `certificate-authority-data: ${b64(caPem)}` : `certificate-authority: ${JSON.stringify(p("ca.crt"))}`;
    const auth = kind === "files"
      ? `client-certificate: ${JSON.stringify(admin.certFile)}\n    client-key: ${JSON.stringify(admin.keyFile)}`
      : kind === "embedded"
      ? `client-certificate-data: ${b64(admin.certPem)}\n    client-key-data: ${b64(admin.keyPem)}`
      : `token: ${JSON.stringify(token(who))}`;
    const text = `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${url}
    ${cluster}
users:
- name: ${JSON.stringify(who)}
  user:
    ${auth}
contexts:
- name: test
  context:
    cluster: test
    user: ${JSON.stringify(who)}
    namespace: default
current-context: test
`;
    const file = p(`kubeconfig-${kubeconfigs.size}-${kind}.yaml`);
    writeFileSync(file, text, { mode: 0o600 });
    kubeconfigs.set(key, file);
    return file;
  };
  const token = (user: string): string => {
    const t = tokens.get(user);
    if (t === undefined) throw new Error(`Looking up a token failed: '${user}' was not given to startKube`);
    return t;
  };

  let stopped = false;
  return {
    url,
    dir,
    caFile: p("ca.crt"),
    caPem,
    admin,
    token,
    kubeconfig,
    startMs: Date.now() - started,
    pids: () => ({ apiserver: apiserver.pid ?? 0, etcd: etcd.pid ?? 0 }),
    async get(path) {
      const r = await fetch(url + path, { tls });
      return { status: r.status, body: await r.text() };
    },
    kubectl(args, o = {}) {
      // HOME and the cache folder inside dir: kubectl writes its discovery cache there.
      return run(bins.kubectl, [`--kubeconfig=${o.kubeconfig ?? kubeconfig("files")}`, `--cache-dir=${p("kubectl-cache")}`, ...args], {
        stdin: o.stdin,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
      });
    },
    async restartApiserver() {
      await stopProcess(apiserver);
      apiserver = await startApiserver();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopProcess(apiserver);
      await stopProcess(etcd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resident memory of a process in MiB, from /proc (Linux). */
export function rssMiB(pid: number): number {
  const status = existsSync(`/proc/${pid}/status`) ? readFileSync(`/proc/${pid}/status`, "utf8") : "";
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}
