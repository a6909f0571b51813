// What the condor tools can authenticate with, judged as the ping judges it
// (docs/htcondor.md#idtokens-a-token-directory, docs/status.md#the-ping).
import { describe, expect, test } from "bun:test";
import { credentialState } from "../../src/core/credentials.ts";
import { candidateIdTokens, decodeIdToken, defaultTokenDirectory, idTokensInText, type TokenDirEntry, tokenDirFiles } from "../../src/core/idtokens.ts";

const b64url = (v: unknown) => btoa(JSON.stringify(v)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const jwt = (header: Record<string, unknown>, payload: Record<string, unknown>) => `${b64url({ alg: "HS256", ...header })}.${b64url(payload)}.c2lnbmF0dXJl`;
const idtoken = (o: { iss?: string; kid?: string; sub?: string; exp?: number } = {}) =>
  jwt({ kid: o.kid ?? "POOL" }, { iss: o.iss ?? "pool.example", sub: o.sub ?? "alice@pool.example", ...(o.exp === undefined ? {} : { exp: o.exp }) });

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const sec = (ms: number) => Math.floor(ms / 1000);
const noCert = () => undefined;

describe("decodeIdToken: what HTCondor's checkToken accepts", () => {
  const table: [string, string, ReturnType<typeof decodeIdToken>][] = [
    ["a token with kid, iss, sub and exp", idtoken({ exp: 2_000_000_000 }), { iss: "pool.example", kid: "POOL", exp: 2_000_000_000_000 }],
    ["no exp: never expires", idtoken(), { iss: "pool.example", kid: "POOL" }],
    ["a capability: jti instead of sub", jwt({ kid: "K" }, { iss: "i", jti: "abc" }), { iss: "i", kid: "K" }],
    ["no kid (a SciToken's header often has one; this one has none)", jwt({}, { iss: "i", sub: "s" }), undefined],
    ["no iss", jwt({ kid: "K" }, { sub: "s" }), undefined],
    ["neither sub nor jti", jwt({ kid: "K" }, { iss: "i" }), undefined],
    ["two parts", "a.b", undefined],
    ["not JSON", "bm90.anNvbg.x", undefined],
  ];
  for (const [name, line, want] of table) test(name, () => expect(decodeIdToken(line)).toEqual(want));

  test("a file: comments and blank lines skipped, every token in order", () => {
    const text = `# written by condor_token_fetch\n\n  ${idtoken({ sub: "a", exp: 1 })}  \n${idtoken({ kid: "K2" })}\nnot a token\n`;
    expect(idTokensInText(text)).toEqual([{ iss: "pool.example", kid: "POOL", exp: 1000 }, { iss: "pool.example", kid: "K2" }]);
  });
});

describe("tokenDirFiles: the files findTokens reads, in its order", () => {
  const file = (name: string, o: Partial<TokenDirEntry> = {}): TokenDirEntry => ({ name, directory: false, uid: 1000, mode: 0o100600, text: idtoken(), ...o });
  test("only the user's own files that nobody else may read; excluded names and directories skipped", () => {
    const { read, skipped } = tokenDirFiles(
      [
        file("zeta"),
        file("alpha"),
        file("..data", { directory: true }),
        file("secret", { uid: 0 }),
        file("shared", { mode: 0o100640 }),
        file(".hidden"),
        file("fetch.sh"),
        file("backup~"),
        file("gone", { text: undefined }),
      ],
      1000,
    );
    expect(read.map((f) => f.name)).toEqual(["alpha", "zeta"]);
    expect(skipped).toEqual([
      ".hidden (a name HTCondor skips)",
      "backup~ (a name HTCondor skips)",
      "fetch.sh (a name HTCondor skips)",
      "gone (cannot be read)",
      "secret (owned by uid 0, not 1000)",
      "shared (mode 0640: others may read it)",
    ]);
  });

  test("the first token of each issuer and key is the one a tool sends, expired or not", () => {
    const old = { iss: "pool.example", kid: "POOL", exp: 1000 };
    const files = [
      { name: "a", tokens: [old] },
      { name: "b", tokens: [{ iss: "pool.example", kid: "POOL" }, { iss: "other.example", kid: "POOL" }] },
    ];
    expect(candidateIdTokens(files)).toEqual([old, { iss: "other.example", kid: "POOL" }]);
  });

  test("condor_submit tries SUBMIT_auto_generated_token first, the other tools TOOL_auto_generated_token", () => {
    const submit = { iss: "p", kid: "K", exp: 3000 };
    const tool = { iss: "p", kid: "K", exp: 2000 };
    const plain = { iss: "p", kid: "K", exp: 1000 };
    const files = [{ name: "a", tokens: [plain] }, { name: "SUBMIT_auto_generated_token", tokens: [submit] }, {
      name: "tool_auto_generated_token",
      tokens: [tool],
    }];
    expect(candidateIdTokens(files)).toEqual([tool, submit]);
  });
});

describe("credentialState: the ping's verdict and the expiry gauge", () => {
  const inAnHour = sec(NOW) + 3600;
  const dir = (entries: TokenDirEntry[] | undefined) => ({ kind: "dir" as const, uid: 1000, entries });
  const own = (name: string, text: string): TokenDirEntry => ({ name, directory: false, uid: 1000, mode: 0o100600, text });
  const table: [string, Parameters<typeof credentialState>[0], Parameters<typeof credentialState>[1], ReturnType<typeof credentialState>][] = [
    ["an IDTOKEN file, valid", { kind: "idtoken-file", path: "/t" }, { kind: "file", text: idtoken({ exp: inAnHour }) }, { expiry: inAnHour * 1000 }],
    ["an IDTOKEN file without exp", { kind: "idtoken-file", path: "/t" }, { kind: "file", text: idtoken() }, {}],
    ["an IDTOKEN file, expired", { kind: "idtoken-file", path: "/t" }, { kind: "file", text: idtoken({ exp: sec(NOW) }) }, {
      problem: `credential /t expired at ${new Date(sec(NOW) * 1000).toISOString()}`,
      expiry: sec(NOW) * 1000,
    }],
    [
      "an expired token shadows a valid one of the same issuer and key",
      { kind: "idtoken-file", path: "/t" },
      { kind: "file", text: `${idtoken({ exp: 100 })}\n${idtoken({ exp: inAnHour })}\n` },
      { problem: `credential /t expired at ${new Date(100_000).toISOString()}`, expiry: 100_000 },
    ],
    [
      "an expired token of one pool beside a valid one of another: usable, the soonest live expiry",
      { kind: "idtoken-file", path: "/t" },
      { kind: "file", text: `${idtoken({ exp: 100 })}\n${idtoken({ iss: "b", exp: inAnHour })}\n${idtoken({ iss: "c", exp: inAnHour + 60 })}\n` },
      { expiry: inAnHour * 1000 },
    ],
    ["an IDTOKEN file that is missing", { kind: "idtoken-file", path: "/t" }, { kind: "file", text: undefined }, {
      problem: "credential file /t is missing",
    }],
    ["an IDTOKEN file the sidecar's user may not read: it is there, and said so", { kind: "idtoken-file", path: "/t" }, {
      kind: "file",
      text: undefined,
      unreadable: "EACCES",
    }, { problem: "credential file /t cannot be read (EACCES)" }],
    ["a proxy file that is a directory", { kind: "proxy", path: "/p" }, { kind: "file", text: undefined, unreadable: "EISDIR: a directory" }, {
      problem: "credential file /p cannot be read (EISDIR: a directory)",
    }],
    ["an IDTOKEN file with no IDTOKEN", { kind: "idtoken-file", path: "/t" }, { kind: "file", text: "# empty\n" }, {
      problem: "credential file /t holds no IDTOKEN (a JWT with a kid, an iss and a sub)",
    }],
    ["a token directory that cannot be read", { kind: "idtoken-dir", path: "/d" }, dir(undefined), { problem: "token directory /d cannot be read" }],
    ["a token directory whose only file others may read", { kind: "idtoken-dir", path: "/d" }, dir([{ ...own("t", idtoken()), mode: 0o100644 }]), {
      problem: "token directory /d holds no IDTOKEN the tools can use; skipped: t (mode 0644: others may read it)",
    }],
    [
      "a token directory, every token expired",
      { kind: "idtoken-dir", path: "/d" },
      dir([own("a", idtoken({ exp: 50 })), own("b", idtoken({ iss: "x", exp: 70 }))]),
      {
        problem: `every IDTOKEN in token directory /d has expired, the last at ${new Date(70_000).toISOString()}`,
        expiry: 70_000,
      },
    ],
    ["a token directory with one valid token", { kind: "idtoken-dir", path: "/d" }, dir([own("a", idtoken({ exp: inAnHour }))]), { expiry: inAnHour * 1000 }],
    ["a SciToken (--proxy), expired", { kind: "proxy", path: "/s" }, { kind: "file", text: jwt({}, { exp: 100 }) }, {
      problem: `credential /s expired at ${new Date(100_000).toISOString()}`,
      expiry: 100_000,
    }],
    ["a proxy whose expiry is unknown", { kind: "proxy", path: "/s" }, { kind: "file", text: "-----BEGIN RSA PRIVATE KEY-----\n" }, {}],
  ];
  for (const [name, source, read, want] of table) test(name, () => expect(credentialState(source, read, NOW, noCert)).toEqual(want));

  test("six skipped files or more: five named, the rest counted", () => {
    const entries = ["a", "b", "c", "d", "e", "f", "g"].map((n) => ({ ...own(n, idtoken()), uid: 0 }));
    expect(credentialState({ kind: "idtoken-dir", path: "/d" }, dir(entries), NOW, noCert).problem).toBe(
      "token directory /d holds no IDTOKEN the tools can use; skipped: a (owned by uid 0, not 1000), b (owned by uid 0, not 1000), c (owned by uid 0, not 1000), d (owned by uid 0, not 1000), e (owned by uid 0, not 1000) and 2 more",
    );
  });

  test("no reason ever holds a token", () => {
    const secret = idtoken({ exp: 100 });
    const s = credentialState({ kind: "idtoken-file", path: "/t" }, { kind: "file", text: secret }, NOW, noCert);
    expect(JSON.stringify(s)).not.toContain(secret.split(".")[1]);
  });
});

describe("defaultTokenDirectory: where the tools look for IDTOKENS when no token is named (docs/htcondor.md#what-each-tool-reads-for-each-method)", () => {
  const table: [string, Record<string, string>, number, string][] = [
    ["a user: ~/.condor/tokens.d", { HOME: "/home/alice/" }, 1000, "/home/alice/.condor/tokens.d"],
    ["root: SEC_TOKEN_SYSTEM_DIRECTORY's default, not root's home", { HOME: "/root" }, 0, "/etc/condor/tokens.d"],
    ["root, the system directory set in the environment", { HOME: "/root", _condor_SEC_TOKEN_SYSTEM_DIRECTORY: "/srv/tokens" }, 0, "/srv/tokens"],
    ["SEC_TOKEN_DIRECTORY set, in any case of the prefix, for anyone", { HOME: "/home/a", _CONDOR_sec_token_directory: "/run/t" }, 1000, "/run/t"],
    ["SEC_TOKEN_DIRECTORY set, for root too", { _condor_SEC_TOKEN_DIRECTORY: "/run/t" }, 0, "/run/t"],
  ];
  for (const [name, env, uid, want] of table) test(name, () => expect(defaultTokenDirectory(env, uid).dir).toBe(want));
});
