// Flags: every original flag mapped onto current HTCondor
// (docs/htcondor.md#environment-variables-the-tools-read), usage errors exit 2.
import { describe, expect, test } from "bun:test";
import { type CliOptions, condorAccess, parseCli, UsageError } from "../../src/flags.ts";
import { CONDOR_TOOLS, toolArgs } from "../../src/condor/tools.ts";

const run = (argv: string[]): CliOptions => {
  const r = parseCli(argv);
  if (r.kind !== "run") throw new Error(`expected run, got ${r.kind}`);
  return r.options;
};

describe("parseCli", () => {
  test("--listen takes IP addresses and host names", () => {
    for (const a of ["0.0.0.0", "::", "::1", "localhost", "submit-1.example.org"]) expect(run(["--listen", a]).listen).toBe(a);
  });
  test("defaults: loopback, port 8000, ./SidecarConfig.yaml, json logs", () => {
    const o = run([]);
    expect([o.listen, o.port, o.config, o.logLevel, o.logFormat, o.spool, o.dummyJob]).toEqual([
      "127.0.0.1",
      8000,
      "./SidecarConfig.yaml",
      "info",
      "json",
      "auto",
      false,
    ]);
    expect(o.socket).toBeUndefined();
  });
  test("help and version", () => {
    expect(parseCli(["--help"]).kind).toBe("help");
    expect(parseCli(["-h"]).kind).toBe("help");
    expect(parseCli(["--version"]).kind).toBe("version");
  });
  const bad: [string[], RegExp][] = [
    [["--bogus"], /unknown flag --bogus/],
    [["--port"], /flag --port needs a value/],
    [["--port", "http"], /--port: "http" is not a port number/],
    [["--port", "70000"], /--port: "70000" is not a port number/],
    [["--log-level", "loud"], /--log-level: "loud" is not one of debug, info, warn, error/],
    [["--log-format", "xml"], /--log-format: "xml" is not one of json, text/],
    [["--spool", "sometimes"], /--spool: "sometimes"/],
    [["--dummy-job=yes"], /--dummy-job takes no value/],
    [["stray"], /unexpected argument "stray"/],
    [["--socket", ""], /--socket: must not be empty/],
    [["--port", "-1"], /--port: a value that starts with "-" must be written --port=VALUE/],
    [["--port=-1"], /--port: "-1" is not a port number/],
    [["--listen", "not_an_addr"], /--listen: "not_an_addr" is neither an IP address nor a host name/],
    [["--auth-method", "KERBERSO"], /--auth-method: "KERBERSO" is not an HTCondor authentication method/],
  ];
  for (const [argv, msg] of bad) {
    test(`usage error: ${argv.join(" ")}`, () => {
      let err: unknown;
      try {
        parseCli(argv);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      const m = (err as Error).message;
      expect(m).toMatch(msg);
      expect(m).toContain("--help");
      expect(m).not.toContain("\n");
    });
  }
  test("records which flags were given (flags override the file)", () => {
    expect([...run(["--spool", "never", "--port", "9"]).given].sort()).toEqual(["port", "spool"]);
  });
});

describe("condorAccess: flags → what current HTCondor reads", () => {
  const table: [string, string[], Record<string, string>, string[]][] = [
    ["--schedd-host", ["--schedd-host", "ap.example.org"], { _condor_SCHEDD_HOST: "ap.example.org" }, []],
    ["--schedd-name alone", ["--schedd-name", "sched1"], {}, ["-name", "sched1"]],
    ["--schedd-name with --collector-host", ["--schedd-name", "s", "--collector-host", "cm:9618"], { _condor_COLLECTOR_HOST: "cm:9618" }, [
      "-name",
      "s",
      "-pool",
      "cm:9618",
    ]],
    ["--condor-config", ["--condor-config", "/etc/c"], { CONDOR_CONFIG: "/etc/c" }, []],
    ["--auth-method list", ["--auth-method", "scitokens, ssl"], { _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS,SSL" }, []],
    ["SCITOKENS + --proxy → SCITOKENS_FILE", ["--auth-method", "SCITOKENS", "--proxy", "/t"], {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS",
      _condor_SCITOKENS_FILE: "/t",
    }, []],
    ["SSL + --proxy → X509_USER_PROXY", ["--auth-method", "SSL", "--proxy", "/p"], {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SSL",
      X509_USER_PROXY: "/p",
      _condor_AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR: "true",
    }, []],
    ["--cadir/--certfile/--keyfile", ["--cadir", "/ca", "--certfile", "/c", "--keyfile", "/k"], {
      _condor_AUTH_SSL_CLIENT_CADIR: "/ca",
      _condor_AUTH_SSL_CLIENT_CERTFILE: "/c",
      _condor_AUTH_SSL_CLIENT_KEYFILE: "/k",
    }, []],
    ["--debug → TOOL_DEBUG + -debug", ["--debug", "D_FULLDEBUG"], { _condor_TOOL_DEBUG: "D_FULLDEBUG" }, ["-debug"]],
  ];
  for (const [name, argv, env, args] of table) {
    test(name, () => {
      const a = condorAccess(run(argv), "node1.example.org");
      expect(a.env).toEqual(env);
      expect(toolArgs(a, "condor_q")).toEqual(args);
      expect(a.warnings).toEqual([]);
    });
  }
  test("schedd selection only for the tools that talk to the schedd (docs/htcondor.md#condor_status: condor_status has no -name)", () => {
    const a = condorAccess(run(["--schedd-name", "s", "--collector-host", "cm", "--debug", "D_ALL"]), "h");
    for (const tool of ["condor_submit", "condor_q", "condor_history", "condor_rm", "condor_tail", "condor_transfer_data"] as const) {
      expect(toolArgs(a, tool)).toEqual(["-name", "s", "-pool", "cm", "-debug"]);
    }
    expect(toolArgs(a, "condor_status")).toEqual(["-debug"]);
    expect(CONDOR_TOOLS.length).toBe(7);
  });
  test("--proxy without --auth-method: a JWT is a SciToken, anything else an X.509 proxy", () => {
    expect(condorAccess(run(["--proxy", "/t"]), "h", "token").env).toEqual({ _condor_SCITOKENS_FILE: "/t" });
    expect(condorAccess(run(["--proxy", "/p"]), "h", "x509").env).toEqual({ X509_USER_PROXY: "/p" });
    expect(condorAccess(run(["--auth-method", "SSL", "--proxy", "/p"]), "h", "token").env.X509_USER_PROXY).toBe("/p");
  });
  test("GSI warns and is dropped", () => {
    const a = condorAccess(run(["--auth-method", "GSI,SSL", "--proxy", "/x"]), "h");
    expect(a.warnings[0]).toMatch(/GSI was removed/);
    expect(a.env._condor_SEC_CLIENT_AUTHENTICATION_METHODS).toBe("SSL");
  });
  test("remote schedd only when it is another host", () => {
    expect(condorAccess(run(["--schedd-host", "ap.example.org"]), "node1.example.org").remoteSchedd).toBe(true);
    expect(condorAccess(run(["--schedd-host", "node1"]), "node1.example.org").remoteSchedd).toBe(false);
    expect(condorAccess(run(["--schedd-host", "localhost:9618"]), "x").remoteSchedd).toBe(false);
    expect(condorAccess(run([]), "x").remoteSchedd).toBe(false);
  });
});
