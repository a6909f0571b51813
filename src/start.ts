/**
 * The sidecar's mode (the default one; main.ts picks it), and its composition root:
 * flags → config → store → condor → service → app → server.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createApp } from "./app.ts";
import { readCredential } from "./condor/credentials.ts";
import { createSidecarMetrics } from "./core/metrics.ts";
import { type CliOptions, condorAccess, listenAddress, parseCli, USAGE, UsageError, VERSION } from "./flags.ts";
import type { Condor } from "./condor/tools.ts";
import { ConfigError, type FileConfig, planConfig } from "./config.ts";
import { type Logger, withFields } from "./logger.ts";
import { type HttpServer, serveHttp } from "./runtime/http.ts";
import type { Runtime } from "./runtime/types.ts";
import { createService, type Service } from "./service/index.ts";
import { createScheddRouter, type ScheddRouter } from "./service/schedds.ts";
import { watchStarvation } from "./service/starvation.ts";
import { certificateNotAfter, credentialFileKind, type Io, openCondor, type Outcome, prepare, type Prepared, serveMetrics } from "./startup.ts";
import { ensureDir } from "./store/files.ts";
import { openStore, type Store } from "./store/store.ts";
import { openTracing } from "./tracing/otel.ts";

export interface Started {
  server: HttpServer;
  stop(): Promise<void>;
}

/** `htcondor-sidecar [flags]`: --help and --version answer and exit; otherwise the sidecar starts. */
export async function sidecarMode(runtime: Runtime, argv: readonly string[], io: Io): Promise<Outcome> {
  const parsed = parseCli(argv);
  if (parsed.kind === "help") {
    io.out(USAGE);
    return 0;
  }
  if (parsed.kind === "version") {
    io.out(`htcondor-sidecar ${VERSION} (${runtime.name} ${runtime.version})`);
    return 0;
  }
  return await start(runtime, parsed.options, io);
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

/** One schedd the sidecar submits to: how to reach it, whether its jobs are spooled, and its data folder. */
interface Member {
  sd?: FileConfig["Schedds"][number];
  /** Its name as configured ("" for HTCondor's own default schedd). */
  name: string;
  prepared: Prepared;
  root: string;
  /** How start-up errors name it. */
  label: string;
}

/**
 * The schedds of `Schedds` (docs/schedds.md), or the one of --schedd-name (or none): with one, the
 * sidecar is exactly what it is without the list. Each has its own access (-name, -pool) and spool
 * mode; the first keeps DataRootFolder, the others get folders of their own.
 */
function scheddMembers(runtime: Runtime, o: CliOptions, p: Prepared): Member[] {
  if (p.config.Schedds.length > 0 && o.scheddName !== undefined) {
    throw new ConfigError(`SidecarConfig.yaml: Schedds: cannot be used together with --schedd-name ${o.scheddName}: list that schedd in Schedds`);
  }
  if (p.config.Schedds.length === 0) return [{ name: o.scheddName ?? "", prepared: p, root: p.dataRoot, label: `--schedd-name ${o.scheddName}` }];
  return p.config.Schedds.map((sd, i) => {
    const access = condorAccess(
      { ...o, scheddName: sd.Name, collectorHost: sd.Pool || o.collectorHost },
      runtime.hostname(),
      o.proxy ? credentialFileKind(o.proxy) : undefined,
      p.access.tokenCopy?.dir ?? join(p.dataRoot, "idtokens"),
    );
    const spoolMode = sd.Spool ?? p.spoolMode;
    const spool = spoolMode === "always" || (spoolMode === "auto" && access.remoteSchedd);
    const root = i === 0 ? p.dataRoot : join(p.dataRoot, "schedds", sd.Name.replace(/[^A-Za-z0-9._@-]/g, "_"));
    return { sd, name: sd.Name, prepared: { ...p, access, spoolMode, spool }, root, label: `SidecarConfig.yaml: Schedds.${i}.Name ${sd.Name}` };
  });
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
    log.warn(`${label.replace(/ \S+$/, "")} does not resolve (yet); asking again`, {
      scheddName: name,
      condorQ: said,
      retryInSeconds: Math.min(wait, left) / 1000,
    });
    await new Promise((r) => setTimeout(r, Math.min(wait, left)));
  }
}

/** Each schedd's state store, in its data folder (claimed for the schedd when there are several). */
function openStores(runtime: Runtime, members: readonly Member[], many: boolean): Store[] {
  return members.map((m) => {
    ensureDir(m.root);
    ensureDir(join(m.root, "pods"));
    if (many) claimDataRoot(m.root, m.name);
    const storePath = join(m.root, "state.db");
    return openStore(runtime.openSqlite(storePath), storePath);
  });
}

export async function start(runtime: Runtime, o: CliOptions, io: Io): Promise<Started> {
  const prepared = prepare(runtime, o, io, "idtokens");
  const { config, log } = prepared;
  if (runtime.uid() === 0) log.warn("running as root: HTCondor refuses jobs owned by root; run the sidecar as an ordinary submit user");
  const members = scheddMembers(runtime, o, prepared);
  const tracing = openTracing(runtime.env(), { log, version: VERSION });
  const many = members.length > 1;
  for (const m of members) {
    if (m.prepared.spool && config.SharedFilesystem) {
      // A spooled job's _CONDOR_JOB_IWD is the schedd's spool, not the pod folder the logs are read from.
      throw new ConfigError(
        `SidecarConfig.yaml: SharedFilesystem: cannot be used with spooling (${
          m.prepared.spoolMode === "always" ? "Spool/--spool always" : "a remote schedd"
        }): a spooled job runs from the schedd's spool, not from the pod folder`,
      );
    }
  }

  const stores = openStores(runtime, members, many);
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
    openCondor(runtime, m.prepared, (tool, outcome, seconds) => metrics.command(tool, outcome, seconds, many ? m.name : undefined))
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
      planConfig: m.sd
        ? {
          ...basePlan,
          extraSubmitLines: [...basePlan.extraSubmitLines, ...Object.entries(m.sd.ExtraLines).map(([k, v]): [string, string] => [k, String(v)])],
        }
        : basePlan,
      dataRoot: m.root,
      spool: m.prepared.spool,
      credentials: m.prepared.access.credentials,
      readCredential: (c) => readCredential(c, runtime.uid()),
      certificateExpiry: certificateNotAfter,
      log: many ? withFields(log, { schedd: m.name }) : log,
      now: () => Date.now(),
      version: VERSION,
      onSubmitBatch: (size) => metrics.submitBatch(size),
      watchFolder: runtime.watchFolder,
      starved: starvation.starvedSince,
      tracing: tracing.forSchedd(m.name || runtime.hostname()),
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

  const app = createApp(service, log, () => metrics.render(), tracing);
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
      (req, extras) => tracing.request(req, extras.rawBody, async () => await app.fetch(req, extras)),
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
      metricsServer = await serveMetrics(metricsAt, config, () => metrics.render());
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
    condorBin: prepared.bin,
    dataRoot: prepared.dataRoot,
    spool: many ? members.map((m) => m.prepared.spool) : prepared.spool,
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
      await tracing.shutdown(Math.max(1_000, deadline - Date.now()));
    },
  };
}
