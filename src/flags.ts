/**
 * Command-line flags (node:util parseArgs, which works on Bun and Deno), and how each of the
 * original plugin's flags maps onto what current HTCondor reads
 * (docs/htcondor.md#environment-variables-the-tools-read). Pure: argv in, options or a usage error
 * out.
 */
import { isIP } from "node:net";
import { parseArgs } from "node:util";
import type { CredentialSource } from "./core/credentials.ts";
import { errorText } from "./core/errors.ts";
import pkg from "../package.json" with { type: "json" };

/** package.json's version, the one place it is written (the executable embeds it at build). */
export const VERSION: string = pkg.version;

export class UsageError extends Error {
  override name = "UsageError";
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFormat = "json" | "text";
type SpoolMode = "auto" | "always" | "never";

export interface CliOptions {
  port: number;
  listen: string;
  socket?: string;
  config: string;
  condorBin?: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  spool: SpoolMode;
  scheddHost?: string;
  scheddName?: string;
  collectorHost?: string;
  condorConfig?: string;
  authMethod?: string;
  proxy?: string;
  tokenFile?: string;
  tokenDir?: string;
  cadir?: string;
  certfile?: string;
  keyfile?: string;
  debug?: string;
  dummyJob: boolean;
  /** Where /metrics is served besides the API listener (`--metrics-listen`), if given. */
  metricsListen?: { host: string; port: number };
  /** Which flags were given explicitly (flags override the config file). */
  given: ReadonlySet<string>;
}

type CliResult = { kind: "run"; options: CliOptions } | { kind: "help" } | { kind: "version" };

/**
 * The flags as node:util parseArgs reads them (`type`, `short`), plus documentation that
 * parseArgs ignores: `arg` (the value's placeholder), `defaultText` (the default as shown),
 * `group` and `description`. docs/configuration.md's flag tables are generated from these
 * (`npm run docs`); a flag without a description fails test/scripts/docs.test.ts.
 */
export const FLAGS = {
  listen: {
    type: "string",
    group: "server",
    arg: "ADDR",
    defaultText: "127.0.0.1",
    description: "Address to listen on: an IP address or a host name. interLink forwards no credentials, so keep it on loopback",
  },
  port: { type: "string", group: "server", arg: "N", defaultText: "8000", description: "TCP port (`0`: any free port, logged at start)" },
  socket: {
    type: "string",
    group: "server",
    arg: "PATH",
    description: "Serve on a unix socket instead of TCP (mode 0660: guard it with its folder's permissions); interLink: `SidecarURL: unix://PATH`",
  },
  config: {
    type: "string",
    group: "server",
    arg: "PATH",
    defaultText: "./SidecarConfig.yaml",
    description: "The configuration file; a missing default file means all defaults, a missing named file is an error",
  },
  "log-level": { type: "string", group: "server", arg: "LEVEL", defaultText: "info", description: "`debug`, `info`, `warn` or `error`" },
  "log-format": { type: "string", group: "server", arg: "FORMAT", defaultText: "json", description: "`json` or `text`: one line per event, on stderr" },
  "metrics-listen": {
    type: "string",
    group: "server",
    arg: "ADDR:PORT",
    defaultText: "off (config `MetricsListen`)",
    description:
      "Also serve `GET /metrics` (Prometheus) on this address, e.g. `127.0.0.1:9100` or `[::1]:9100`: Prometheus cannot scrape a unix socket. The API listener serves `/metrics` too",
  },
  "condor-bin": {
    type: "string",
    group: "htcondor",
    arg: "DIR",
    defaultText: "found in `PATH`",
    description: "Where the `condor_*` tools are. The compiled binary never falls back to the emulator: without the tools it says so and exits",
  },
  "schedd-host": {
    type: "string",
    group: "htcondor",
    arg: "HOST",
    description: "Sets `_condor_SCHEDD_HOST=HOST` for every tool; with `--spool auto`, a host other than this one means `-spool`",
  },
  "schedd-name": {
    type: "string",
    group: "htcondor",
    arg: "NAME",
    description:
      "Adds `-name NAME` to the tools that talk to the schedd (`condor_submit`, `condor_q`, `condor_history`, `condor_rm`, `condor_tail`, `condor_transfer_data`); never to `condor_status`, which has no `-name`. A NAME without `@` is a host name the tools resolve: one that still does not resolve after 30 s at start stops the sidecar (exit 2)",
  },
  "collector-host": {
    type: "string",
    group: "htcondor",
    arg: "HOST",
    description: "Sets `_condor_COLLECTOR_HOST=HOST`, and adds `-pool HOST` next to `-name`",
  },
  "condor-config": { type: "string", group: "htcondor", arg: "PATH", description: "Sets `CONDOR_CONFIG=PATH` (the file must exist)" },
  spool: {
    type: "string",
    group: "htcondor",
    arg: "MODE",
    defaultText: "`auto` (config `Spool`)",
    description:
      "`auto`, `always` or `never`: submit with `-spool` and fetch the output with `condor_transfer_data`; `auto` spools when the schedd is on another host",
  },
  "auth-method": {
    type: "string",
    group: "htcondor",
    arg: "LIST",
    description:
      "Sets `_condor_SEC_CLIENT_AUTHENTICATION_METHODS=LIST`, upper-cased (e.g. `SCITOKENS,SSL,IDTOKENS`); a name HTCondor does not know is a usage error. `GSI` was removed from HTCondor: it is dropped with a warning. With `IDTOKENS` and neither `--token-file` nor `--token-dir`, the start says which folder the tools will look in (`SEC_TOKEN_DIRECTORY` from the environment, else `~/.condor/tokens.d`, or for root `/etc/condor/tokens.d`)",
  },
  proxy: {
    type: "string",
    group: "htcondor",
    arg: "PATH",
    description:
      "A SciToken or an X.509 proxy file. With `SCITOKENS` (and with `SCITOKENS,SSL` when the file holds a JWT), or without `--auth-method` when it holds a JWT: `_condor_SCITOKENS_FILE=PATH`; otherwise `X509_USER_PROXY=PATH` (plus `_condor_AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR=true` with `SSL`). A combination no method can use is a usage error: a JWT with `SSL` alone, an X.509 proxy with `SCITOKENS` alone, a list with `IDTOKENS` but neither `SCITOKENS` nor `SSL` and no `--token-file` or `--token-dir`. The ping fails while the file is missing or its JWT `exp` or certificate notAfter has passed",
  },
  "token-file": {
    type: "string",
    group: "htcondor",
    arg: "PATH",
    description:
      "An IDTOKEN file (what `condor_token_fetch` writes, or a Kubernetes Secret's key). HTCondor reads IDTOKENS only from a directory, and only files its user owns that nobody else may read: the sidecar keeps a 0600 copy in a 0700 folder of its own under `DataRootFolder` (`idtokens/`, the operator's `operator-idtokens/`), copied again before a tool runs whenever the file changed, and sets `_condor_SEC_TOKEN_DIRECTORY` to that folder. Needs `IDTOKENS` in `--auth-method` when that is given. The ping fails while the file is missing, cannot be read by the sidecar's user (reported as such, not as missing), holds no IDTOKEN, or every token in it has expired",
  },
  "token-dir": {
    type: "string",
    group: "htcondor",
    arg: "DIR",
    description:
      "Sets `_condor_SEC_TOKEN_DIRECTORY=DIR` (must be a directory): the tools try each file in it that their user owns and nobody else may read. Not with `--token-file`; needs `IDTOKENS` in `--auth-method` when that is given. The ping fails while no such file holds an IDTOKEN that has not expired",
  },
  cadir: { type: "string", group: "htcondor", arg: "DIR", description: "Sets `_condor_AUTH_SSL_CLIENT_CADIR=DIR` (must be a directory)" },
  certfile: { type: "string", group: "htcondor", arg: "PATH", description: "Sets `_condor_AUTH_SSL_CLIENT_CERTFILE=PATH` (the file must exist)" },
  keyfile: { type: "string", group: "htcondor", arg: "PATH", description: "Sets `_condor_AUTH_SSL_CLIENT_KEYFILE=PATH` (the file must exist)" },
  debug: {
    type: "string",
    group: "htcondor",
    arg: "LEVELS",
    description: "Sets `_condor_TOOL_DEBUG=LEVELS` (e.g. `D_FULLDEBUG`) and adds `-debug` to every tool: the levels only take effect with `-debug`",
  },
  "dummy-job": { type: "boolean", group: "htcondor", description: "Submit a placeholder sleep job instead of the pod's containers" },
  help: { type: "boolean", short: "h", group: "other", description: "Print the usage and exit" },
  version: { type: "boolean", short: "V", group: "other", description: "Print the version and exit" },
} as const;

export const USAGE = `Usage: htcondor-sidecar [flags]

Serves interLink's plugin API and runs each pod as one HTCondor job.

Server:
  --listen ADDR          address to listen on (default 127.0.0.1: interLink forwards no credentials)
  --port N               TCP port (default 8000)
  --socket PATH          serve on a unix socket instead of TCP (interLink: SidecarURL unix://PATH)
  --config PATH          SidecarConfig.yaml (default ./SidecarConfig.yaml)
  --log-level LEVEL      debug | info | warn | error (default info)
  --log-format FORMAT    json | text (default json)
  --metrics-listen ADDR:PORT  also serve /metrics (Prometheus) there (default: off)

HTCondor:
  --condor-bin DIR       where the condor_* tools are (default: found in PATH)
  --schedd-host HOST     schedd to submit to (sets _condor_SCHEDD_HOST)
  --schedd-name NAME     schedd name (adds -name NAME to the tools that talk to the schedd)
  --collector-host HOST  collector (sets _condor_COLLECTOR_HOST, adds -pool HOST with -name)
  --condor-config PATH   condor_config file (sets CONDOR_CONFIG)
  --spool MODE           auto | always | never: submit with -spool (auto: when the schedd is remote)
  --auth-method LIST     client authentication methods, e.g. SCITOKENS,SSL,IDTOKENS
  --proxy PATH           a SciToken (SCITOKENS) or an X.509 proxy file (SSL)
  --token-file PATH      an IDTOKEN file (IDTOKENS; copied into a private token directory)
  --token-dir DIR        a token directory (IDTOKENS; sets SEC_TOKEN_DIRECTORY)
  --cadir DIR            trusted CA directory (AUTH_SSL_CLIENT_CADIR)
  --certfile PATH        SSL client certificate (AUTH_SSL_CLIENT_CERTFILE)
  --keyfile PATH         SSL client key (AUTH_SSL_CLIENT_KEYFILE)
  --debug LEVELS         tool debug levels, e.g. D_FULLDEBUG (adds -debug to every tool)
  --dummy-job            submit a placeholder sleep job instead of the pod's containers

  -h, --help             this help
  -V, --version          print the version
`;

const HINT = "Run 'htcondor-sidecar --help' for usage.";

/** RFC 1123 host names (an address to listen on is an IP literal or one of these). */
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * The method names HTCondor's security manager knows (SecMan::getAuthBitmask); GSI is still a
 * name it parses, but the method was removed (it is dropped below, with a warning).
 */
const AUTH_METHODS = [
  "FS",
  "FS_REMOTE",
  "IDTOKENS",
  "IDTOKEN",
  "TOKEN",
  "TOKENS",
  "SCITOKENS",
  "SCITOKEN",
  "SSL",
  "KERBEROS",
  "PASSWORD",
  "MUNGE",
  "NTSSPI",
  "CLAIMTOBE",
  "ANONYMOUS",
  "GSI",
];

function splitMethods(list: string | undefined): string[] {
  return (list ?? "").split(/[\s,]+/).filter(Boolean).map((m) => m.toUpperCase());
}

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], dflt: T): T {
  if (value === undefined) return dflt;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${flag}: "${value}" is not one of ${allowed.join(", ")}. ${HINT}`);
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === "") throw new UsageError(`--${flag}: must not be empty. ${HINT}`);
  return value;
}

export function parseCli(argv: readonly string[]): CliResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options: FLAGS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError(`${describeParseError(err)}. ${HINT}`);
  }
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const s = (k: string) => values[k] as string | undefined;

  let port = 8000;
  if (s("port") !== undefined) {
    const p = s("port")!;
    if (!/^\d+$/.test(p) || Number(p) > 65535) throw new UsageError(`--port: "${p}" is not a port number (0-65535). ${HINT}`);
    port = Number(p);
  }
  const listen = nonEmpty("listen", s("listen")) ?? "127.0.0.1";
  if (isIP(listen) === 0 && !HOSTNAME.test(listen)) {
    throw new UsageError(`--listen: "${listen}" is neither an IP address nor a host name. ${HINT}`);
  }
  const authMethod = nonEmpty("auth-method", s("auth-method"));
  for (const m of splitMethods(authMethod)) {
    if (!AUTH_METHODS.includes(m)) {
      throw new UsageError(`--auth-method: "${m}" is not an HTCondor authentication method (${AUTH_METHODS.filter((x) => x !== "GSI").join(", ")}). ${HINT}`);
    }
  }
  const given = new Set(Object.keys(values).filter((k) => values[k] !== undefined));
  return {
    kind: "run",
    options: {
      port,
      listen,
      socket: nonEmpty("socket", s("socket")),
      config: nonEmpty("config", s("config")) ?? "./SidecarConfig.yaml",
      condorBin: nonEmpty("condor-bin", s("condor-bin")),
      logLevel: oneOf("log-level", s("log-level"), ["debug", "info", "warn", "error"], "info"),
      logFormat: oneOf("log-format", s("log-format"), ["json", "text"], "json"),
      spool: oneOf("spool", s("spool"), ["auto", "always", "never"], "auto"),
      scheddHost: nonEmpty("schedd-host", s("schedd-host")),
      scheddName: nonEmpty("schedd-name", s("schedd-name")),
      collectorHost: nonEmpty("collector-host", s("collector-host")),
      condorConfig: nonEmpty("condor-config", s("condor-config")),
      authMethod,
      proxy: nonEmpty("proxy", s("proxy")),
      tokenFile: nonEmpty("token-file", s("token-file")),
      tokenDir: nonEmpty("token-dir", s("token-dir")),
      cadir: nonEmpty("cadir", s("cadir")),
      certfile: nonEmpty("certfile", s("certfile")),
      keyfile: nonEmpty("keyfile", s("keyfile")),
      debug: nonEmpty("debug", s("debug")),
      dummyJob: values["dummy-job"] === true,
      metricsListen: s("metrics-listen") === undefined ? undefined : listenAddress(s("metrics-listen")!, "--metrics-listen"),
      given,
    },
  };
}

/**
 * `ADDR:PORT` (an IPv6 address in brackets: `[::1]:9100`), for `--metrics-listen` and the config's
 * `MetricsListen`. Throws a UsageError naming `what`.
 */
export function listenAddress(text: string, what: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || port > 65535 || (isIP(host) === 0 && !HOSTNAME.test(host)) || (m[1] !== undefined && isIP(host) !== 6)) {
    throw new UsageError(`${what}: "${text}" is not ADDR:PORT (e.g. 127.0.0.1:9100 or [::1]:9100). ${HINT}`);
  }
  return { host, port };
}

function describeParseError(err: unknown): string {
  const msg = errorText(err);
  // node:util messages are long and multi-line; keep the part that names the flag.
  const unknown = /Unknown option '([^']+)'/.exec(msg);
  if (unknown) return `unknown flag ${unknown[1]}`;
  const missing = /Option '(?:-\w, )?(--[\w-]+)[^']*' argument missing/.exec(msg);
  if (missing) return `flag ${missing[1]} needs a value`;
  const noArg = /Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(msg);
  if (noArg) return `flag ${noArg[1]} takes no value`;
  const dashValue = /Option '(?:-\w, )?(--[\w-]+)' argument is ambiguous/.exec(msg);
  if (dashValue) return `flag ${dashValue[1]}: a value that starts with "-" must be written ${dashValue[1]}=VALUE`;
  const positional = /Unexpected argument '([^']+)'/.exec(msg);
  if (positional) return `unexpected argument "${positional[1]}"`;
  return msg.split("\n")[0]!;
}

/** How the sidecar talks to HTCondor: the environment of every tool and the flags it adds. */
export interface CondorAccess {
  /** Variables added to each tool's environment. */
  env: Record<string, string>;
  /** Schedd selection (-name, -pool) for the tools that talk to the schedd. */
  scheddArgs: string[];
  /** -debug, which every tool the sidecar runs takes. */
  debugArgs: string[];
  /** The credentials that must be there, and unexpired, for the sidecar to be healthy. */
  credentials: CredentialSource[];
  /**
   * `--token-file`: the file, and the private token directory (`_condor_SEC_TOKEN_DIRECTORY`) that
   * holds its copy, `token`, refreshed before every tool run (condor/credentials.ts).
   */
  tokenCopy?: { from: string; dir: string };
  /** True when the schedd is not on this host (spool in auto mode). */
  remoteSchedd: boolean;
  warnings: string[];
}

/** The method names that mean IDTOKENS, SCITOKENS and SSL (SecMan::getAuthBitmask). */
const IDTOKENS = ["IDTOKENS", "IDTOKEN", "TOKEN", "TOKENS"];
const SCITOKENS = ["SCITOKENS", "SCITOKEN"];

/**
 * Maps the original plugin's flags onto current HTCondor
 * (docs/htcondor.md#what-each-tool-reads-for-each-method). GSI was removed from HTCondor; SciTokens
 * are read from SCITOKENS_FILE; SSL uses the client cert/key or, when told to, X509_USER_PROXY;
 * IDTOKENS come from a token directory. `proxyKind` is what the --proxy file holds, when it could
 * be read at start; `tokenCopyDir` the private token directory a --token-file is copied into.
 * A combination no method can use is a UsageError that names it.
 */
export function condorAccess(o: CliOptions, localHost: string, proxyKind?: "token" | "x509", tokenCopyDir?: string): CondorAccess {
  const env: Record<string, string> = {};
  const scheddArgs: string[] = [];
  const debugArgs: string[] = [];
  const warnings: string[] = [];
  if (o.condorConfig) env.CONDOR_CONFIG = o.condorConfig;
  if (o.scheddHost) env._condor_SCHEDD_HOST = o.scheddHost;
  if (o.collectorHost) env._condor_COLLECTOR_HOST = o.collectorHost;
  if (o.scheddName) {
    scheddArgs.push("-name", o.scheddName);
    if (o.collectorHost) scheddArgs.push("-pool", o.collectorHost);
  }
  if (o.cadir) env._condor_AUTH_SSL_CLIENT_CADIR = o.cadir;
  if (o.certfile) env._condor_AUTH_SSL_CLIENT_CERTFILE = o.certfile;
  if (o.keyfile) env._condor_AUTH_SSL_CLIENT_KEYFILE = o.keyfile;
  if (o.debug) {
    env._condor_TOOL_DEBUG = o.debug;
    debugArgs.push("-debug");
  }
  const methods = splitMethods(o.authMethod);
  if (methods.includes("GSI")) {
    warnings.push(
      "--auth-method GSI: GSI was removed from HTCondor (23.x); use SCITOKENS, SSL or IDTOKENS. GSI is dropped from the method list.",
    );
  }
  const kept = methods.filter((m) => m !== "GSI");
  if (kept.length > 0) env._condor_SEC_CLIENT_AUTHENTICATION_METHODS = kept.join(",");
  const proxyRole = checkAuthCombination(o, kept, proxyKind);
  const credentials: CredentialSource[] = [];
  if (o.proxy) {
    credentials.push({ kind: "proxy", path: o.proxy });
    if (proxyRole === "scitoken") {
      env._condor_SCITOKENS_FILE = o.proxy;
    } else {
      // An X.509 proxy: used by condor_submit for x509userproxy, and for SSL authentication
      // only when AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR is true.
      env.X509_USER_PROXY = o.proxy;
      if (kept.includes("SSL")) env._condor_AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR = "true";
    }
  }
  let tokenCopy: CondorAccess["tokenCopy"];
  if (o.tokenFile) {
    if (tokenCopyDir === undefined) throw new Error("condorAccess: --token-file needs the private token directory");
    tokenCopy = { from: o.tokenFile, dir: tokenCopyDir };
    env._condor_SEC_TOKEN_DIRECTORY = tokenCopyDir;
    credentials.push({ kind: "idtoken-file", path: o.tokenFile });
  } else if (o.tokenDir) {
    env._condor_SEC_TOKEN_DIRECTORY = o.tokenDir;
    credentials.push({ kind: "idtoken-dir", path: o.tokenDir });
  }
  const remoteSchedd = isRemote(o.scheddHost, localHost) || (o.scheddName !== undefined && isRemote(o.scheddName, localHost));
  return { env, scheddArgs, debugArgs, credentials, tokenCopy, remoteSchedd, warnings };
}

/**
 * Refuses the combinations of --auth-method, --proxy, --token-file, --token-dir, --certfile and
 * --keyfile that no method can use, and says what the --proxy file is for: a SciToken
 * (SCITOKENS_FILE) or an X.509 proxy (X509_USER_PROXY). `methods` is the list without GSI.
 */
function checkAuthCombination(o: CliOptions, methods: readonly string[], proxyKind: "token" | "x509" | undefined): "scitoken" | "x509" | undefined {
  const given = methods.length > 0;
  const list = methods.join(",");
  const has = (names: readonly string[]) => methods.some((m) => names.includes(m));
  const fail = (text: string) => {
    throw new UsageError(`${text}. ${HINT}`);
  };
  if (o.tokenFile && o.tokenDir) fail("--token-file and --token-dir: give one; the tools read one token directory");
  const tokenFlag = o.tokenFile ? "--token-file" : o.tokenDir ? "--token-dir" : undefined;
  if (tokenFlag && given && !has(IDTOKENS)) fail(`${tokenFlag}: --auth-method ${list} has no IDTOKENS, so the tools would never read the token`);
  if ((o.certfile === undefined) !== (o.keyfile === undefined)) {
    fail(`${o.certfile ? "--certfile without --keyfile" : "--keyfile without --certfile"}: SSL needs the client certificate and its key`);
  }
  if (o.certfile && given && !methods.includes("SSL")) fail(`--certfile and --keyfile: --auth-method ${list} has no SSL, so the tools would never use them`);
  // An SSL-only list with a --proxy is judged below, by what the file holds.
  if (given && methods.every((m) => m === "SSL") && !o.certfile && !o.proxy) {
    fail("--auth-method SSL: without --certfile and --keyfile (or an X.509 proxy in --proxy) the tools authenticate as anonymous@ssl");
  }
  if (!o.proxy) return undefined;
  const sci = has(SCITOKENS);
  const ssl = methods.includes("SSL");
  if (!given) return proxyKind === "token" ? "scitoken" : "x509";
  if (sci && !ssl) {
    if (proxyKind === "x509") fail(`--proxy ${o.proxy}: the file is not a SciToken (a JWT), and --auth-method ${list} reads it as one`);
    return "scitoken";
  }
  if (ssl && !sci) {
    if (proxyKind === "token") fail(`--proxy ${o.proxy}: the file holds a token, not an X.509 proxy, and --auth-method ${list} reads no token from it`);
    return "x509";
  }
  if (sci && ssl) return proxyKind === "x509" ? "x509" : "scitoken";
  // Neither reads it for authentication: an X.509 proxy may still go to the jobs (use_x509userproxy).
  if (proxyKind === "token") {
    fail(`--proxy ${o.proxy}: the file holds a token, and only SCITOKENS reads one from --proxy${has(IDTOKENS) ? "; give an IDTOKEN with --token-file" : ""}`);
  }
  if (has(IDTOKENS) && !tokenFlag) {
    fail(`--auth-method ${list} with only --proxy: IDTOKENS authenticates with a token, which --proxy does not give; name it with --token-file or --token-dir`);
  }
  return "x509";
}

/**
 * Whether a schedd named `name` (--schedd-name, `Schedds[].Name`, or the host of --schedd-host) runs
 * on another host than this one, `localHost`. The host is what HTCondor takes from a daemon's name:
 * the part after the last "@" (get_host_part, src/condor_utils/get_daemon_name.cpp; Daemon::getDaemonInfo
 * takes the daemon's full host name from it), the whole name when it has none, and the address of a
 * sinful string (`<ip:port?…>`); a port is not part of it. That host is this one when it is
 * `localhost`, a loopback address, or this host's name, short or full
 * (docs/configuration.md#spool-auto-is-the-schedd-on-this-host).
 */
export function isRemote(name: string | undefined, localHost: string): boolean {
  if (!name) return false;
  const sinful = /^<\[?([^\]>?]*?)\]?(?::\d+)?(?:\?[^>]*)?>$/.exec(name.trim());
  const host = sinful ? sinful[1]! : name.slice(name.lastIndexOf("@") + 1);
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/^([^:]*):\d+$/, "$1").replace(/\.$/, "");
  const local = localHost.toLowerCase();
  return !(h === "localhost" || h.startsWith("localhost.") || /^127\./.test(h) || h === "::1" || h === local || h === local.split(".")[0] ||
    local.startsWith(`${h}.`));
}
