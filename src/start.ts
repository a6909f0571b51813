/**
 * The composition root: flags → config → store → condor → service → app → server.
 * Returns the exit code for usage/config errors; otherwise runs until SIGTERM/SIGINT.
 */
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { createApp } from "./app.ts";
import { type CliOptions, USAGE, UsageError, VERSION, condorAccess, parseCli } from "./cli.ts";
import { CONDOR_TOOLS, createCondor } from "./condor/cli.ts";
import { ConfigError, type FileConfig, parseConfig, planConfig } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { type HttpServer, serveHttp } from "./runtime/http.ts";
import type { Runtime } from "./runtime/types.ts";
import { createService } from "./service.ts";
import { ensureDir } from "./store/files.ts";
import { openStore } from "./store/store.ts";

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

function loadConfig(o: CliOptions): { config: FileConfig; warnings: string[]; dir: string } {
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
  const access = condorAccess(o, runtime.hostname());
  for (const w of access.warnings) log.warn(w);

  const dataRoot = isAbsolute(config.DataRootFolder) ? config.DataRootFolder : resolve(dir, config.DataRootFolder);
  ensureDir(dataRoot);
  ensureDir(join(dataRoot, "pods"));
  const storePath = join(dataRoot, "state.db");
  const store = openStore(runtime.openSqlite(storePath), storePath);

  const spoolMode = o.given.has("spool") ? o.spool : config.Spool;
  const spool = spoolMode === "always" || (spoolMode === "auto" && access.remoteSchedd);
  const condor = createCondor({
    runtime,
    bin,
    access,
    baseEnv: env,
    submitTimeoutMs: config.SubmitTimeoutSeconds * 1000,
    queryTimeoutMs: config.QueryTimeoutSeconds * 1000,
    log,
  });
  const service = createService({
    store,
    condor,
    config,
    planConfig: planConfig(config, o.dummyJob),
    dataRoot,
    spool,
    credentialFile: access.credentialFile,
    readCredential: (p) => {
      try {
        return readFileSync(p, "utf8");
      } catch {
        return undefined;
      }
    },
    log,
    now: () => Date.now(),
    version: VERSION,
  });
  try {
    await service.reconcile();
  } catch (err) {
    log.warn("could not reconcile with the schedd at start; will serve what the store knows", {
      error: err instanceof Error ? err.message : String(err),
    });
  }

  const app = createApp(service, log);
  const server = await serveHttp(
    {
      target: o.socket ? { kind: "unix", path: resolve(o.socket) } : { kind: "tcp", host: o.listen, port: o.port },
      bodyLimitBytes: config.BodyLimit,
      keepAliveTimeoutMs: config.KeepAliveTimeoutSeconds * 1000,
    },
    (req, extras) => app.fetch(req, extras),
  );
  const reaper = setInterval(() => {
    service.reap().catch((err) => log.warn("reaper pass failed", { error: String(err) }));
  }, config.ReaperIntervalSeconds * 1000);
  log.info("listening", { url: server.url, condorBin: bin, dataRoot, spool, sidecarId: config.SidecarId, runtime: runtime.name });

  return {
    server,
    async stop() {
      log.info("shutting down");
      clearInterval(reaper);
      await server.close(config.ShutdownGraceSeconds * 1000);
      store.close();
    },
  };
}
