// The authentication a remote schedd asks of a tool (config.json `security`), emulated from the
// HTCondor source: the client's method list (condor_secman.cpp), IDTOKENS (condor_auth_passwd.cpp
// findTokens/findToken/checkToken, analyze_token; secure_file.cpp read_secure_file), SCITOKENS
// (condor_auth_ssl.cpp authenticate, condor_scitokens.cpp discover_token) and SSL
// (condor_auth_ssl.cpp setup_ssl_ctx). Written apart from the sidecar's own reading of these
// rules (src/core/idtokens.ts), so that a mistake there is not repeated here.
import { createHmac } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { userHome } from "./common.ts";

export type Security = {
  /** The schedd's SEC_..._AUTHENTICATION_METHODS. */
  methods: string[];
  /** TRUST_DOMAIN: the issuer IDTOKENS must name. */
  trustDomain?: string;
  /** The IDTOKENS signing keys by name (kid): HS256 secrets. */
  signingKeys?: Record<string, string>;
  /** Issuers whose SciTokens the schedd accepts (the signature is not checked: no issuer to ask). */
  scitokensIssuers?: string[];
};

/** `_condor_<KNOB>`, prefix in any case, as condor_config.cpp reads the environment. */
function knob(name: string): string | undefined {
  const want = `_condor_${name}`.toLowerCase();
  for (const [k, v] of Object.entries(process.env)) if (k.toLowerCase() === want && v !== undefined) return v;
  return undefined;
}

const CANONICAL: Record<string, string> = { IDTOKEN: "IDTOKENS", TOKEN: "IDTOKENS", TOKENS: "IDTOKENS", SCITOKEN: "SCITOKENS" };
const methodList = (s: string) => s.split(/[\s,]+/).filter(Boolean).map((m) => CANONICAL[m.toUpperCase()] ?? m.toUpperCase());

function b64json(part: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return v && typeof v === "object" ? v : undefined;
  } catch {
    return undefined;
  }
}

const EXCLUDE = /^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)|(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$/;

/** read_secure_file: owned by the real uid, nobody else may read or write it. */
function readSecure(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, "r");
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.uid !== process.getuid!() || (st.mode & 0o077) !== 0) return undefined;
    return fs.readFileSync(fd, "utf8");
  } finally {
    fs.closeSync(fd);
  }
}

/** findTokens: the files of the token directory in order, `<SUBSYS>_auto_generated_token` first. */
function tokenFiles(subsys: string): string[] {
  let dir = knob("SEC_TOKEN_DIRECTORY");
  if (!dir) {
    // find_user_file refuses ~/.condor for a process that can switch ids (root); then SEC_TOKEN_SYSTEM_DIRECTORY,
    // $(ETC)/tokens.d, which the emulator has none of.
    if (process.getuid!() === 0) return [];
    dir = path.join(userHome(), ".condor", "tokens.d");
  }
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const files = names.filter((n) => {
    try {
      return !fs.statSync(path.join(dir, n)).isDirectory() && !EXCLUDE.test(n);
    } catch {
      return !EXCLUDE.test(n);
    }
  }).map((n) => path.join(dir, n)).sort();
  const own = files.filter((f) => path.basename(f).toLowerCase() === `${subsys}_auto_generated_token`.toLowerCase());
  return [...own, ...files];
}

/** checkToken and findToken: the first line of the files that names the issuer and one of the keys. */
function findToken(subsys: string, issuer: string | undefined, keys: string[] | undefined): string | undefined {
  for (const file of tokenFiles(subsys)) {
    const text = readSecure(file);
    if (text === undefined) continue;
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (!line || line.startsWith("#")) continue;
      const [h, p, sig] = line.split(".");
      if (sig === undefined) continue;
      const header = b64json(h!);
      const payload = b64json(p!);
      if (!header || !payload || typeof header.kid !== "string" || typeof payload.iss !== "string") continue;
      if (keys && !keys.includes(header.kid)) continue;
      if (issuer !== undefined && payload.iss !== issuer) continue;
      if (typeof payload.sub !== "string" && typeof payload.jti !== "string") continue;
      return line;
    }
  }
  return undefined;
}

/** The schedd's side of IDTOKENS: the signature, then analyze_token's expiry. */
function serverAcceptsIdToken(sec: Security, token: string): boolean {
  const [h, p, sig] = token.split(".") as [string, string, string];
  const header = b64json(h)!;
  const payload = b64json(p)!;
  const key = sec.signingKeys?.[header.kid as string];
  if (key === undefined || header.alg !== "HS256") return false;
  if (createHmac("sha256", key).update(`${h}.${p}`).digest("base64url") !== sig) return false;
  return !(typeof payload.exp === "number" && Math.floor(Date.now() / 1000) - payload.exp > 0);
}

/** The SciToken the client sends: SCITOKENS_FILE's first line, else the WLCG discovery. */
function sciToken(): string | undefined {
  const firstLine = (file: string) => {
    try {
      return fs.readFileSync(file, "utf8").split("\n").map((l) => l.trim()).find((l) => l && !l.startsWith("#"));
    } catch {
      return undefined;
    }
  };
  const file = knob("SCITOKENS_FILE");
  if (file) return firstLine(file);
  const e = process.env;
  if (e.BEARER_TOKEN) return e.BEARER_TOKEN.trim();
  if (e.BEARER_TOKEN_FILE) return firstLine(e.BEARER_TOKEN_FILE);
  const name = `bt_u${process.geteuid!()}`;
  return (e.XDG_RUNTIME_DIR ? firstLine(path.join(e.XDG_RUNTIME_DIR, name)) : undefined) ?? firstLine(path.join("/tmp", name));
}

function readable(file: string | undefined): boolean {
  if (!file) return false;
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Authenticates this tool call with the schedd: undefined when it succeeds, else HTCondor's error
 * stack, newest first (CondorError::getFullText): one `Failed to authenticate using M` per method
 * tried, then `Failed to authenticate with any method`. IDTOKENS counts as tried without a token
 * too: a real 25.0 schedd that demands IDTOKENS, asked with no token or one with a bad signature,
 * made condor_q print the same three lines (docs/htcondor.md#what-each-tool-reads-for-each-method),
 * although Condor_Auth_Passwd::should_try_auth reads as if it skipped the method.
 */
export function authenticate(sec: Security, tool: string): string | undefined {
  const client = methodList(knob("SEC_CLIENT_AUTHENTICATION_METHODS") ?? knob("SEC_DEFAULT_AUTHENTICATION_METHODS") ?? "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL");
  const server = methodList(sec.methods.join(","));
  const subsys = tool === "condor_submit" ? "SUBMIT" : "TOOL";
  const stack: string[] = [];
  const failed = (m: string) => stack.unshift(`AUTHENTICATE:1004:Failed to authenticate using ${m}`);
  for (const m of client.filter((x) => server.includes(x))) {
    if (m === "FS") return undefined;
    if (m === "IDTOKENS") {
      const token = findToken(subsys, sec.trustDomain, Object.keys(sec.signingKeys ?? {}));
      if (token !== undefined && serverAcceptsIdToken(sec, token)) return undefined;
      failed(m);
    } else if (m === "SCITOKENS") {
      const token = sciToken();
      const payload = token ? b64json(token.split(".")[1] ?? "") : undefined;
      const live = payload && !(typeof payload.exp === "number" && Math.floor(Date.now() / 1000) - payload.exp > 0);
      if (live && typeof payload.iss === "string" && (sec.scitokensIssuers ?? []).includes(payload.iss)) return undefined;
      failed(m);
    } else if (m === "SSL") {
      const proxy = /^(1|true|yes)$/i.test(knob("AUTH_SSL_USE_CLIENT_PROXY_ENV_VAR") ?? "") ? process.env.X509_USER_PROXY : undefined;
      // Without a certificate the client is anonymous@ssl, which this schedd maps to nobody.
      if (proxy ? readable(proxy) : readable(knob("AUTH_SSL_CLIENT_CERTFILE")) && readable(knob("AUTH_SSL_CLIENT_KEYFILE"))) return undefined;
      failed(m);
    } else {
      failed(m);
    }
  }
  return ["AUTHENTICATE:1003:Failed to authenticate with any method", ...stack].join("\n");
}
