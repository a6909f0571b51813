/**
 * The composition root: flags → config → store → condor → service → app → server.
 * Returns the exit code for usage/config errors; otherwise runs until SIGTERM/SIGINT.
 */
import { X509Certificate } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { createApp, METRICS_CONTENT_TYPE } from "./app.ts";
import { credentialKind, type CredentialSource, credentialState } from "./core/credentials.ts";
import { readCredential } from "./condor/credentials.ts";
import { createSidecarMetrics } from "./core/metrics.ts";
import { type CliOptions, condorAccess, listenAddress, parseCli, USAGE, UsageError, VERSION } from "./flags.ts";
import { type Condor, CONDOR_TOOLS, createCondor } from "./condor/tools.ts";
import { ConfigError, type FileConfig, parseConfig, planConfig } from "./config.ts";
import { createLogger, type Logger, withFields } from "./logger.ts";
import { type HttpServer, serveHttp } from "./runtime/http.ts";
import type { Runtime } from "./runtime/types.ts";
import { createService, type Service } from "./service/index.ts";
import { createScheddRouter, type ScheddRouter } from "./service/schedds.ts";
import { watchStarvation } from "./service/starvation.ts";
import { ensureDir } from "./store/files.ts";
import { openStore } from "./store/store.ts";
import { operatorMain } from "./operator/main.ts";

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface Started {
  server: HttpServer;
  stop(): Promise<void>;
}

/** Parses everything that can be wrong before anything starts; exits 2 on a usage or config error. */
export async function main(runtime: Runtime, argv: readonly string[], io: Io): Promise<void> {
  // The HTCJob operator and its log reader are modes of the same executable (docs/operator.md).
  if (argv[0] === "operator" || argv[0] === "htcjob") return await operatorMain(runtime, argv, io);
  let options: CliOptions;
  try {
    const parsed = parseCli(argv);
    if (parsed.kind === "help") {
      io.out(USAGE);
      return runtime.exit(0);
    }
    if (parsed.kind === "version") {
      io.out(`htcondor-sidecar ${VERSION} (${runtime.name} ${runtime.version})`);
      return runtime.exit(0);
    }
    options = parsed.options;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`htcondor-sidecar: ${err.message}`);
      return runtime.exit(2);
    }
    throw err;
  }
  try {
    const started = await start(runtime, options, io);
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      started.stop().then(() => runtime.exit(0), () => runtime.exit(1));
    };
    runtime.onSignal("SIGTERM", stop);
    runtime.onSignal("SIGINT", stop);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      io.err(`htcondor-sidecar: ${err.message}`);
      return runtime.exit(2);
    }
    io.err(`htcondor-sidecar: ${err instanceof Error ? err.message : String(err)}`);
    return runtime.exit(1);
  }
}

export function loadConfig(o: Pick<CliOptions, "config" | "given">): { config: FileConfig; warnings: string[]; dir: string } {
  const path = resolve(o.config);
  const label = o.given.has("config") ? o.config : "SidecarConfig.yaml";
  if (!existsSync(path)) {
    if (o.given.has("config")) throw new ConfigError(`${label}: cannot read the file: it does not exist`);
    return { config: parseConfig(undefined).config, warnings: [`no ${o.config}; using the defaults`], dir: process.cwd() };
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`${label}: cannot read the file: ${err instanceof Error ? err.message : String(err)}`);
  }
  const { config, warnings } = parseConfig(text, label);
  return { config, warnings, dir: dirname(path) };
}

/** Finds the directory of the condor tools: --condor-bin, else PATH. Never falls back. */
export function findCondorBin(o: CliOptions, env: Record<string, string>): string {
  const missing = (dir: string) => CONDOR_TOOLS.filter((t) => !isExecutable(join(dir, t)));
  if (o.condorBin) {
    const dir = resolve(o.condorBin);
    const m = missing(dir);
    if (m.length) throw new Error(`HTCondor tools not found in --condor-bin ${dir}: missing ${m.join(", ")}`);
    return dir;
  }
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    if (isExecutable(join(dir, "condor_submit"))) {
      const m = missing(dir);
      if (m.length) throw new Error(`HTCondor tools in ${dir} are incomplete: missing ${m.join(", ")}`);
      return dir;
    }
  }
  throw new Error("HTCondor tools not found: condor_submit is not in PATH. Install HTCondor or pass --condor-bin DIR");
}

/**
 * HTCondor fails on a named config file it cannot read, and SSL authentication quietly falls
 * back to anonymous without its certificate: a path that is not there is a usage error now,
 * not a mystery later. The credential (--proxy) may appear later (it is renewed by others).
 */
export function checkFlagPaths(o: CliOptions): void {
  const paths: [string, string | undefined, "file" | "dir"][] = [
    ["condor-config", o.condorConfig, "file"],
    ["cadir", o.cadir, "dir"],
    ["certfile", o.certfile, "file"],
    ["keyfile", o.keyfile, "file"],
    ["token-dir", o.tokenDir, "dir"],
  ];
  for (const [flag, p, kind] of paths) {
    if (p === undefined) continue;
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new UsageError(`--${flag}: ${p} does not exist`);
    }
    if (kind === "dir" ? !st.isDirectory() : !st.isFile()) throw new UsageError(`--${flag}: ${p} is not a ${kind === "dir" ? "directory" : "file"}`);
  }
}

/** The kind of the credential file (core/credentials.ts), or undefined when it cannot be read yet. */
export function credentialFileKind(path: string): "token" | "x509" | undefined {
  try {
    return credentialKind(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * A credential that does not work at start is worth a line in the log: the ping answers 503 until
 * it does, and it may yet appear (others renew it).
 */
export function warnCredentials(credentials: readonly CredentialSource[], uid: number, log: Logger): void {
  for (const c of credentials) {
    const { problem } = credentialState(c, readCredential(c, uid), Date.now(), certificateNotAfter);
    if (problem) log.warn(`${problem}: the ping answers 503 until that changes`);
  }
}

/** The notAfter time (epoch ms) of the first certificate in a PEM text, if it has one. */
export function certificateNotAfter(pem: string): number | undefined {
  try {
    return Date.parse(new X509Certificate(pem).validTo);
  } catch {
    return undefined;
  }
}

/**
 * With several schedds, each data root says whose it is: a store holds the jobs of one schedd, and a
 * reordered or renamed `Schedds` list must not hand them to another (job ids are per schedd). A data
 * root from before (no such file) belongs to the first schedd listed.
 */
function claimDataRoot(root: string, schedd: string): void {
  const file = join(root, "schedd");
  if (!existsSync(file)) return writeFileSync(file, `${schedd}\n`, { mode: 0o600 });
  const owner = readFileSync(file, "utf8").trim();
  if (owner.toLowerCase() !== schedd.toLowerCase()) {
    throw new ConfigError(
      `SidecarConfig.yaml: Schedds: the data folder ${root} holds the pods of schedd "${owner}", not of "${schedd}": keep the first entry of Schedds as it was, or move the folder`,
    );
  }
}

/** How long a --schedd-name that does not resolve is retried at start before the sidecar gives up. */
const SCHEDD_NAME_RESOLVE_MS = 30_000;

/**
 * A --schedd-name without "@" is a host name that every condor tool resolves before it does
 * anything else (docs/htcondor.md#a-schedd-name-without--is-a-host-name): one that does not
 * resolve makes every call fail, so the sidecar refuses to start with it. condor_q itself is
 * asked, so that HTCondor's own resolver and configuration decide, and asked again for
 * SCHEDD_NAME_RESOLVE_MS (a name server may come up after the sidecar). Anything else condor_q
 * says, a collector or schedd that does not answer included, is the ping's business.
 */
async function checkScheddName(condor: Condor, name: string, label: string, log: Logger): Promise<void> {
  const deadline = Date.now() + SCHEDD_NAME_RESOLVE_MS;
  for (let wait = 1_000;; wait = Math.min(2 * wait, 8_000)) {
    let said: string | undefined;
    try {
      await condor.query({ constraint: "false", attributes: ["ClusterId"] });
      return;
    } catch (err) {
      said = /condor_q exited with \S+: (.*\bunknown host\b.*)$/.exec(err instanceof Error ? err.message : String(err))?.[1];
      if (said === undefined) return;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new UsageError(
        `${label}: condor_q says "${said}" (still after ${
          SCHEDD_NAME_RESOLVE_MS / 1000
        } s): a schedd name without "@" is a host name, and this one does not resolve; give a host name that does, or name@host`,
      );
    }
    log.warn(`${label.replace(/ \S+$/, "")} does not resolve (yet); asking again`, { scheddName: name, condorQ: said, retryInSeconds: Math.min(wait, left) / 1000 });
    await new Promise((r) => setTimeout(r, Math.min(wait, left)));
  }
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function start(runtime: Runtime, o: CliOptions, io: Io): Promise<Started> {
  const { config, warnings, dir } = loadConfig(o);
  const log: Logger = createLogger({ level: o.logLevel, format: o.logFormat, write: io.err });
  for (const w of warnings) log.warn(w);

  const env = runtime.env();
  const bin = findCondorBin(o, env);
  if (runtime.uid() === 0) log.warn("running as root: HTCondor refuses jobs owned by root; run the sidecar as an ordinary submit user");
  checkFlagPaths(o);
  const dataRoot = isAbsolute(config.DataRootFolder) ? config.DataRootFolder : resolve(dir, config.DataRootFolder);
  if (config.Schedds.length > 0 && o.scheddName !== undefined) {
    throw new ConfigError(`SidecarConfig.yaml: Schedds: cannot be used together with --schedd-name ${o.scheddName}: list that schedd in Schedds`);
  }
  // One member per schedd (docs/schedds.md); none listed: the one --schedd-name names, or HTCondor's own.
  const listed = config.Schedds.length > 0 ? config.Schedds : [undefined];
  const many = listed.length > 1;
  const members = listed.map((sd, i) => {
    const mo = sd ? { ...o, scheddName: sd.Name, collectorHost: sd.Pool || o.collectorHost } : o;
    const access = condorAccess(mo, runtime.hostname(), o.proxy ? credentialFileKind(o.proxy) : undefined, join(dataRoot, "idtokens"));
    const spoolMode = sd?.Spool ?? (o.given.has("spool") ? o.spool : config.Spool);
    const spool = spoolMode === "always" || (spoolMode === "auto" && access.remoteSchedd);
    if (spool && config.SharedFilesystem) {
      // A spooled job's _CONDOR_JOB_IWD is the schedd's spool, not the pod folder the logs are read from.
      throw new ConfigError(
        `SidecarConfig.yaml: SharedFilesystem: cannot be used with spooling (${
          spoolMode === "always" ? "Spool/--spool always" : "a remote schedd"
        }): a spooled job runs from the schedd's spool, not from the pod folder`,
      );
    }
    // The first schedd keeps the data root (a site that adds schedds keeps its pods); the others get folders of their own.
    const root = i === 0 ? dataRoot : join(dataRoot, "schedds", sd!.Name.replace(/[^A-Za-z0-9._@-]/g, "_"));
    const label = sd ? `SidecarConfig.yaml: Schedds.${i}.Name ${sd.Name}` : `--schedd-name ${o.scheddName}`;
    return { sd, name: sd?.Name ?? o.scheddName ?? "", access, spool, root, label };
  });
  for (const w of members[0]!.access.warnings) log.warn(w);
  warnCredentials(members[0]!.access.credentials, runtime.uid(), log);

  const stores = members.map((m) => {
    ensureDir(m.root);
    ensureDir(join(m.root, "pods"));
    if (many) claimDataRoot(m.root, m.name);
    const storePath = join(m.root, "state.db");
    return openStore(runtime.openSqlite(storePath), storePath);
  });
  const closeStores = () => stores.forEach((s) => s.close());

  const startTime = Math.floor(Date.now() / 1000);
  // The service is created below; the gauges read it only when /metrics is scraped.
  // deno-lint-ignore prefer-const -- the metrics closure below reads it before it is assigned
  let service: Service | undefined;
  // deno-lint-ignore prefer-const -- as service
  let router: ScheddRouter | undefined;
  const metrics = createSidecarMetrics(() => ({
    ...(service?.view() ?? { pods: {}, failures: { schedd: 0, collector: 0 }, threshold: config.PingFailureThreshold, snapshotAgeSeconds: 0 }),
    schedds: router?.schedds().map((s) => ({ name: s.name, up: s.up })),
    rss: runtime.rss(),
    startTime,
  }));
  const condors = members.map((m) =>
    createCondor({
      runtime,
      bin,
      access: m.access,
      baseEnv: env,
      submitTimeoutMs: config.SubmitTimeoutSeconds * 1000,
      queryTimeoutMs: config.QueryTimeoutSeconds * 1000,
      log,
      onCommand: (tool, outcome, seconds) => metrics.command(tool, outcome, seconds, many ? m.name : undefined),
    })
  );
  try {
    for (const [i, m] of members.entries()) if (m.name !== "" && !m.name.includes("@")) await checkScheddName(condors[i]!, m.name, m.label, log);
  } catch (err) {
    closeStores();
    throw err;
  }
  const starvation = watchStarvation({ now: () => Date.now() });
  const basePlan = planConfig(config, o.dummyJob);
  const services = members.map((m, i) =>
    createService({
      store: stores[i]!,
      condor: condors[i]!,
      config,
      planConfig: m.sd ? { ...basePlan, extraSubmitLines: [...basePlan.extraSubmitLines, ...Object.entries(m.sd.ExtraLines).map(([k, v]) => [k, String(v)] as [string, string])] } : basePlan,
      dataRoot: m.root,
      spool: m.spool,
      credentials: m.access.credentials,
      readCredential: (c) => readCredential(c, runtime.uid()),
      certificateExpiry: certificateNotAfter,
      log: many ? withFields(log, { schedd: m.name }) : log,
      now: () => Date.now(),
      version: VERSION,
      onSubmitBatch: (size) => metrics.submitBatch(size),
      watchFolder: runtime.watchFolder,
      starved: starvation.starvedSince,
    })
  );
  router = many
    ? createScheddRouter(
      members.map((m, i) => ({ name: m.name, pool: m.sd?.Pool ?? "", weight: m.sd?.Weight ?? 1, service: services[i]!, store: stores[i]! })),
      { log, now: () => Date.now(), node: config.Node },
    )
    : undefined;
  service = router ?? services[0]!;
  try {
    await service.reconcile();
  } catch (err) {
    log.warn("could not reconcile with the schedd at start; the reaper retries, meanwhile the store's view is served", {
      error: err instanceof Error ? err.message : String(err),
    });
  }

  const app = createApp(service, log, () => metrics.render());
  const target = o.socket ? { kind: "unix" as const, path: resolve(o.socket) } : { kind: "tcp" as const, host: o.listen, port: o.port };
  let server: HttpServer;
  try {
    server = await serveHttp(
      {
        target,
        bodyLimitBytes: config.BodyLimit,
        keepAliveTimeoutMs: config.KeepAliveTimeoutSeconds * 1000,
        // One line per request, after its response ended; bodies are never logged (they carry secrets).
        onRequest: (r) => {
          log.info("request", { ...r });
          metrics.request(r);
        },
      },
      (req, extras) => app.fetch(req, extras),
    );
  } catch (err) {
    closeStores();
    const where = target.kind === "unix" ? `--socket ${target.path}` : `--listen ${target.host} --port ${target.port}`;
    throw new Error(`cannot listen on ${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  // Prometheus cannot scrape a unix socket: /metrics can have a TCP listener of its own.
  const metricsAt = o.metricsListen ?? (config.MetricsListen ? listenAddress(config.MetricsListen, "MetricsListen") : undefined);
  let metricsServer: HttpServer | undefined;
  if (metricsAt) {
    try {
      metricsServer = await serveHttp(
        { target: { kind: "tcp", ...metricsAt }, bodyLimitBytes: 1024, keepAliveTimeoutMs: config.KeepAliveTimeoutSeconds * 1000 },
        (req) =>
          new URL(req.url).pathname === "/metrics"
            ? new Response(metrics.render(), { status: 200, headers: { "content-type": METRICS_CONTENT_TYPE } })
            : new Response("This listener serves GET /metrics only\n", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } }),
      );
    } catch (err) {
      await server.close(0);
      closeStores();
      throw new Error(`cannot listen on --metrics-listen ${metricsAt.host}:${metricsAt.port}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const reaper = setInterval(() => {
    service.reap().catch((err) => log.warn("reaper pass failed", { error: String(err) }));
  }, config.ReaperIntervalSeconds * 1000);
  log.info("listening", {
    url: server.url,
    metricsUrl: metricsServer?.url,
    condorBin: bin,
    dataRoot,
    spool: many ? members.map((m) => m.spool) : members[0]!.spool,
    schedds: many ? members.map((m) => m.name) : undefined,
    sidecarId: config.SidecarId,
    runtime: runtime.name,
  });

  return {
    server,
    async stop() {
      log.info("shutting down");
      clearInterval(reaper);
      const deadline = Date.now() + config.ShutdownGraceSeconds * 1000;
      await Promise.all([server.close(config.ShutdownGraceSeconds * 1000), metricsServer?.close(0)]);
      // A create or a reaper pass still waiting on a condor tool writes to the store when it ends.
      await service.drain(Math.max(0, deadline - Date.now()));
      closeStores();
      starvation.stop();
    },
  };
}
