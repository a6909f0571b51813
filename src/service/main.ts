/**
 * The sidecar's mode (the default one; main.ts picks it), and its composition root:
 * flags → config → store → condor → service → app → server.
 */
import { resolve } from "node:path";
import { createApp } from "../app.ts";
import { readCredential } from "../condor/credentials.ts";
import { createSidecarMetrics } from "../core/metrics.ts";
import { type CliOptions, listenAddress, parseCli, USAGE, VERSION } from "../flags.ts";
import { ConfigError, planConfig } from "../config.ts";
import { withFields } from "../logger.ts";
import { type HttpServer, serveHttp } from "../runtime/http.ts";
import type { Runtime } from "../runtime/types.ts";
import { createService, type Service } from "./index.ts";
import { checkScheddName, openMemberStores, scheddMembers } from "./schedd-setup.ts";
import { createScheddRouter, type ScheddRouter } from "./schedds.ts";
import { watchStarvation } from "./starvation.ts";
import { certificateNotAfter, type Io, openCondor, type Outcome, prepare, serveMetrics } from "../mode-setup.ts";
import { errorText } from "../core/errors.ts";
import { openTracing } from "../tracing/otel.ts";

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

  const stores = openMemberStores(runtime, members);
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
    for (const [i, m] of members.entries()) {
      if (m.name !== "" && !m.name.includes("@")) await checkScheddName(condors[i]!, m.name, m.label, log, config.ScheddNameResolveSeconds * 1000);
    }
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
      jidPrefix: m.jidPrefix,
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
      error: errorText(err),
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
    throw new Error(`cannot listen on ${where}: ${errorText(err)}`);
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
      throw new Error(`cannot listen on --metrics-listen ${metricsAt.host}:${metricsAt.port}: ${errorText(err)}`);
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
