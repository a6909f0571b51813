// Flags: every original flag mapped onto current HTCondor
// (docs/htcondor.md#environment-variables-the-tools-read), usage errors exit 2.
import { describe, expect, test } from "bun:test";
import { type CliOptions, condorAccess, parseCli, UsageError } from "../src/flags.ts";
import { CONDOR_TOOLS, toolArgs } from "../src/condor/tools.ts";

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
    expect(condorAccess(run(["--auth-method", "SSL", "--proxy", "/p"]), "h").env.X509_USER_PROXY).toBe("/p");
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

// docs/htcondor.md#what-each-tool-reads-for-each-method: the variables per method, and the
// combinations no method can use, refused at start (exit 2, as every usage error).
describe("condorAccess: each method's credential", () => {
  const copyDir = "/data/idtokens";
  const table: [string, string[], "token" | "x509" | undefined, Record<string, string>][] = [
    ["IDTOKENS + --token-file: the private copy's directory", ["--auth-method", "IDTOKENS", "--token-file", "/s/token"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS",
      _condor_SEC_TOKEN_DIRECTORY: copyDir,
    }],
    ["IDTOKENS + --token-dir", ["--auth-method", "idtokens", "--token-dir", "/etc/tokens.d"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS",
      _condor_SEC_TOKEN_DIRECTORY: "/etc/tokens.d",
    }],
    ["--token-file without --auth-method (HTCondor's default list has IDTOKENS)", ["--token-file", "/s/token"], undefined, {
      _condor_SEC_TOKEN_DIRECTORY: copyDir,
    }],
    ["IDTOKENS + --token-file + an X.509 proxy for the jobs", ["--auth-method", "TOKEN", "--token-file", "/s/t", "--proxy", "/p"], "x509", {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "TOKEN",
      _condor_SEC_TOKEN_DIRECTORY: copyDir,
      X509_USER_PROXY: "/p",
    }],
    ["SCITOKENS + --proxy not readable yet → SCITOKENS_FILE", ["--auth-method", "SCITOKENS", "--proxy", "/t"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS",
      _condor_SCITOKENS_FILE: "/t",
    }],
    ["SCITOKENS,SSL + a JWT → SCITOKENS_FILE", ["--auth-method", "SCITOKENS,SSL", "--proxy", "/t"], "token", {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS,SSL",
      _condor_SCITOKENS_FILE: "/t",
    }],
    ["SCITOKENS,SSL + an X.509 proxy → X509_USER_PROXY for SSL", ["--auth-method", "SCITOKENS,SSL", "--proxy", "/p"], "x509", {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS,SSL",
      X509_USER_PROXY: "/p",
      _condor_AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR: "true",
    }],
    ["SSL + --certfile/--keyfile", ["--auth-method", "SSL", "--certfile", "/c", "--keyfile", "/k"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SSL",
      _condor_AUTH_SSL_CLIENT_CERTFILE: "/c",
      _condor_AUTH_SSL_CLIENT_KEYFILE: "/k",
    }],
    ["SCITOKENS alone, no --proxy: the tools' own discovery (BEARER_TOKEN…)", ["--auth-method", "SCITOKENS"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "SCITOKENS",
    }],
    ["IDTOKENS alone, no token flag: the tools' default token directory", ["--auth-method", "IDTOKENS"], undefined, {
      _condor_SEC_CLIENT_AUTHENTICATION_METHODS: "IDTOKENS",
    }],
  ];
  for (const [name, argv, kind, env] of table) {
    test(name, () => expect(condorAccess(run(argv), "h", kind, copyDir).env).toEqual(env));
  }

  test("what the ping checks, and what is copied", () => {
    const a = condorAccess(run(["--auth-method", "IDTOKENS", "--token-file", "/s/t", "--proxy", "/p"]), "h", "x509", copyDir);
    expect(a.credentials).toEqual([{ kind: "proxy", path: "/p" }, { kind: "idtoken-file", path: "/s/t" }]);
    expect(a.tokenCopy).toEqual({ from: "/s/t", dir: copyDir });
    const d = condorAccess(run(["--token-dir", "/t.d"]), "h", undefined, copyDir);
    expect([d.credentials, d.tokenCopy]).toEqual([[{ kind: "idtoken-dir", path: "/t.d" }], undefined]);
    expect(condorAccess(run([]), "h").credentials).toEqual([]);
  });

  const refused: [string[], "token" | "x509" | undefined, RegExp][] = [
    [["--token-file", "/a", "--token-dir", "/b"], undefined, /^--token-file and --token-dir: give one/],
    [
      ["--auth-method", "SCITOKENS", "--token-file", "/a"],
      undefined,
      /^--token-file: --auth-method SCITOKENS has no IDTOKENS, so the tools would never read the token/,
    ],
    [["--auth-method", "SSL", "--token-dir", "/a", "--certfile", "/c", "--keyfile", "/k"], undefined, /^--token-dir: --auth-method SSL has no IDTOKENS/],
    [["--auth-method", "IDTOKENS", "--proxy", "/x"], "x509", /^--auth-method IDTOKENS with only --proxy: IDTOKENS authenticates with a token/],
    [["--auth-method", "IDTOKENS", "--proxy", "/x"], undefined, /^--auth-method IDTOKENS with only --proxy/],
    [
      ["--auth-method", "IDTOKENS", "--proxy", "/x"],
      "token",
      /^--proxy \/x: the file holds a token, and only SCITOKENS reads one from --proxy; give an IDTOKEN with --token-file/,
    ],
    [
      ["--auth-method", "SCITOKENS", "--proxy", "/x"],
      "x509",
      /^--proxy \/x: the file is not a SciToken \(a JWT\), and --auth-method SCITOKENS reads it as one/,
    ],
    [["--auth-method", "SSL", "--proxy", "/x"], "token", /^--proxy \/x: the file holds a token, not an X.509 proxy/],
    [
      ["--auth-method", "SSL"],
      undefined,
      /^--auth-method SSL: without --certfile and --keyfile \(or an X.509 proxy in --proxy\) the tools authenticate as anonymous@ssl/,
    ],
    [["--certfile", "/c"], undefined, /^--certfile without --keyfile: SSL needs the client certificate and its key/],
    [["--keyfile", "/k"], undefined, /^--keyfile without --certfile/],
    [["--auth-method", "IDTOKENS", "--certfile", "/c", "--keyfile", "/k"], undefined, /^--certfile and --keyfile: --auth-method IDTOKENS has no SSL/],
  ];
  for (const [argv, kind, msg] of refused) {
    test(`refused: ${argv.join(" ")}${kind ? ` (the file holds ${kind === "token" ? "a JWT" : "an X.509 proxy"})` : ""}`, () => {
      let err: unknown;
      try {
        condorAccess(run(argv), "h", kind, copyDir);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect((err as Error).message).toMatch(msg);
      expect((err as Error).message).toContain("--help");
    });
  }
});
