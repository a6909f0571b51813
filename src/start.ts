/**
 * The sidecar's mode (the default one; main.ts picks it), and its composition root:
 * flags → config → store → condor → service → app → server.
 */
import { join, resolve } from "node:path";
import { createApp } from "./app.ts";
import { readCredential } from "./condor/credentials.ts";
import { createSidecarMetrics } from "./core/metrics.ts";
import { type CliOptions, listenAddress, parseCli, USAGE, UsageError, VERSION } from "./flags.ts";
import type { Condor } from "./condor/tools.ts";
import { ConfigError, planConfig } from "./config.ts";
import type { Logger } from "./logger.ts";
import { type HttpServer, serveHttp } from "./runtime/http.ts";
import type { Runtime } from "./runtime/types.ts";
import { createService } from "./service/index.ts";
import { watchStarvation } from "./service/starvation.ts";
import { certificateNotAfter, type Io, openCondor, type Outcome, prepare, serveMetrics } from "./startup.ts";
import { ensureDir } from "./store/files.ts";
import { openStore } from "./store/store.ts";

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
async function checkScheddName(condor: Condor, name: string, log: Logger): Promise<void> {
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
        `--schedd-name ${name}: condor_q says "${said}" (still after ${
          SCHEDD_NAME_RESOLVE_MS / 1000
        } s): a schedd name without "@" is a host name, and this one does not resolve; give a host name that does, or name@host`,
      );
    }
    log.warn("--schedd-name does not resolve (yet); asking again", { scheddName: name, condorQ: said, retryInSeconds: Math.min(wait, left) / 1000 });
    await new Promise((r) => setTimeout(r, Math.min(wait, left)));
  }
}

export async function start(runtime: Runtime, o: CliOptions, io: Io): Promise<Started> {
  const prepared = prepare(runtime, o, io, "idtokens");
  const { config, log, spool, dataRoot } = prepared;
  if (runtime.uid() === 0) log.warn("running as root: HTCondor refuses jobs owned by root; run the sidecar as an ordinary submit user");
  if (spool && config.SharedFilesystem) {
    // A spooled job's _CONDOR_JOB_IWD is the schedd's spool, not the pod folder the logs are read from.
    throw new ConfigError(
      `SidecarConfig.yaml: SharedFilesystem: cannot be used with spooling (${
        prepared.spoolMode === "always" ? "Spool/--spool always" : "a remote schedd"
      }): a spooled job runs from the schedd's spool, not from the pod folder`,
    );
  }

  ensureDir(dataRoot);
  ensureDir(join(dataRoot, "pods"));
  const storePath = join(dataRoot, "state.db");
  const store = openStore(runtime.openSqlite(storePath), storePath);

  const startTime = Math.floor(Date.now() / 1000);
  // The service is created below; the gauges read it only when /metrics is scraped.
  // deno-lint-ignore prefer-const -- the metrics closure below reads it before it is assigned
  let service: ReturnType<typeof createService> | undefined;
  const metrics = createSidecarMetrics(() => ({
    ...(service?.view() ?? { pods: {}, failures: { schedd: 0, collector: 0 }, threshold: config.PingFailureThreshold, snapshotAgeSeconds: 0 }),
    rss: runtime.rss(),
    startTime,
  }));
  const condor = openCondor(runtime, prepared, (tool, outcome, seconds) => metrics.command(tool, outcome, seconds));
  if (o.scheddName !== undefined && !o.scheddName.includes("@")) {
    try {
      await checkScheddName(condor, o.scheddName, log);
    } catch (err) {
      store.close();
      throw err;
    }
  }
  const starvation = watchStarvation({ now: () => Date.now() });
  service = createService({
    store,
    condor,
    config,
    planConfig: planConfig(config, o.dummyJob),
    dataRoot,
    spool,
    credentials: prepared.access.credentials,
    readCredential: (c) => readCredential(c, runtime.uid()),
    certificateExpiry: certificateNotAfter,
    log,
    now: () => Date.now(),
    version: VERSION,
    onSubmitBatch: (size) => metrics.submitBatch(size),
    watchFolder: runtime.watchFolder,
    starved: starvation.starvedSince,
  });
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
    store.close();
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
      store.close();
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
    dataRoot,
    spool,
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
      store.close();
      starvation.stop();
    },
  };
}
