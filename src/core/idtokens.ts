/**
 * Which IDTOKENS the condor tools could send, by HTCondor's own rules
 * (docs/htcondor.md#what-each-tool-reads-for-each-method): `findTokens` and `findToken` in
 * src/condor_io/condor_auth_passwd.cpp, `read_secure_file` in src/condor_utils/secure_file.cpp.
 * Pure: the caller lists and reads the files.
 */

/** What the sidecar needs of an IDTOKEN: whom it is for, and when it stops working. */
export interface IdToken {
  /** `iss`: the trust domain of the pool that signed it. */
  iss: string;
  /** `kid`: the name of the signing key. */
  kid: string;
  /** `exp` in epoch milliseconds, when the token has one. */
  exp?: number;
}

function base64urlJson(part: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/")));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One line as `checkToken` reads it: a JWT whose header names a key (`kid`), with an issuer and a
 * subject (or, for a capability, a `jti`). Anything else is skipped by the tools, as here.
 */
export function decodeIdToken(line: string): IdToken | undefined {
  const parts = line.split(".");
  if (parts.length !== 3) return undefined;
  const header = base64urlJson(parts[0]!);
  const payload = base64urlJson(parts[1]!);
  if (!header || !payload) return undefined;
  const { kid } = header;
  const { iss, sub, jti, exp } = payload;
  if (typeof kid !== "string" || typeof iss !== "string") return undefined;
  if (typeof sub !== "string" && typeof jti !== "string") return undefined;
  return { iss, kid, ...(typeof exp === "number" ? { exp: exp * 1000 } : {}) };
}

/** `findToken`: every line of a file that is not empty and not a `#` comment, in order. */
export function idTokensInText(text: string): IdToken[] {
  return text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")).map(decodeIdToken).filter((t) => t !== undefined);
}

/**
 * `LOCAL_CONFIG_DIR_EXCLUDE_REGEXP`'s default (src/condor_utils/param_info.in): `findTokens` skips
 * the files of a token directory whose names match it.
 */
const EXCLUDED_NAME = /^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)|(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$/;

/** One entry of a token directory, as `stat` (following links) and a read saw it. */
export interface TokenDirEntry {
  name: string;
  directory: boolean;
  uid?: number;
  mode?: number;
  /** Undefined when the file could not be read. */
  text?: string;
}

/** A file the tools read, with its tokens in order. */
export interface TokenFile {
  name: string;
  tokens: IdToken[];
}

/**
 * The files of a token directory the tools read, sorted as `findTokens` sorts them, and why each
 * other one is skipped.
 */
export function tokenDirFiles(entries: readonly TokenDirEntry[], ownUid: number): { read: TokenFile[]; skipped: string[] } {
  const read: TokenFile[] = [];
  const skipped: string[] = [];
  for (const e of [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.directory) continue;
    if (EXCLUDED_NAME.test(e.name)) skipped.push(`${e.name} (a name HTCondor skips)`);
    else if (e.text === undefined || e.uid === undefined || e.mode === undefined) skipped.push(`${e.name} (cannot be read)`);
    // read_secure_file: the file must be the tools' user's, and nobody else may read or write it.
    else if (e.uid !== ownUid) skipped.push(`${e.name} (owned by uid ${e.uid}, not ${ownUid})`);
    else if ((e.mode & 0o077) !== 0) skipped.push(`${e.name} (mode ${(e.mode & 0o777).toString(8).padStart(4, "0")}: others may read it)`);
    else read.push({ name: e.name, tokens: idTokensInText(e.text) });
  }
  return { read, skipped };
}

/**
 * A tool first tries `<SUBSYS>_auto_generated_token` (any case), then every file in order: the
 * subsystem is `SUBMIT` for condor_submit and `TOOL` for the other tools
 * (src/condor_utils/subsystem_info.cpp), so the two may try the files in different orders.
 */
const SUBSYSTEMS = ["TOOL", "SUBMIT"];

/**
 * The tokens the tools could send. A server names its trust domain and the keys it knows, and a
 * tool sends the first token, in its order, with that issuer and one of those keys; it does not
 * look at `exp` (the server refuses an expired token, `Condor_Auth_Passwd::analyze_token`). So the
 * first token of each (issuer, key) is one a tool may send, and a later one of the same pair never
 * is, even when the first has expired.
 */
export function candidateIdTokens(files: readonly TokenFile[]): IdToken[] {
  const out = new Set<IdToken>();
  for (const subsys of SUBSYSTEMS) {
    const own = `${subsys}_auto_generated_token`.toLowerCase();
    const ordered = [...files.filter((f) => f.name.toLowerCase() === own), ...files];
    const seen = new Set<string>();
    for (const t of ordered.flatMap((f) => f.tokens)) {
      const key = JSON.stringify([t.iss, t.kid]);
      if (seen.has(key)) continue;
      seen.add(key);
      out.add(t);
    }
  }
  return [...out];
}

/**
 * Where the tools look for IDTOKENS when the sidecar names no token (neither --token-file nor
 * --token-dir), by HTCondor's rule (docs/htcondor.md#what-each-tool-reads-for-each-method):
 * `SEC_TOKEN_DIRECTORY` when the environment sets it (`_condor_` in any case); otherwise
 * `~/.condor/tokens.d` for an ordinary user, and for root (a process that can switch users, to
 * which find_user_file gives no home folder) `SEC_TOKEN_SYSTEM_DIRECTORY`, `$(ETC)/tokens.d`:
 * `/etc/condor/tokens.d` in HTCondor's packages. The HTCondor configuration may set either knob:
 * the sidecar cannot read it, and says so.
 */
export function defaultTokenDirectory(env: Readonly<Record<string, string | undefined>>, uid: number): { dir: string; rule: string } {
  const knob = (name: string) => Object.entries(env).find(([k, v]) => k.toLowerCase() === `_condor_${name}`.toLowerCase() && v)?.[1];
  const set = knob("SEC_TOKEN_DIRECTORY");
  if (set) return { dir: set, rule: "SEC_TOKEN_DIRECTORY, set in the environment" };
  if (uid === 0) {
    const system = knob("SEC_TOKEN_SYSTEM_DIRECTORY");
    if (system) return { dir: system, rule: "running as root: SEC_TOKEN_SYSTEM_DIRECTORY, set in the environment" };
    return { dir: "/etc/condor/tokens.d", rule: "running as root: SEC_TOKEN_SYSTEM_DIRECTORY, $(ETC)/tokens.d by default" };
  }
  const home = env.HOME;
  return { dir: home ? `${home.replace(/\/+$/, "")}/.condor/tokens.d` : "~/.condor/tokens.d", rule: "SEC_TOKEN_DIRECTORY's default for a user" };
}
