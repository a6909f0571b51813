/**
 * The credential the condor tools authenticate with, and whether it still works: a SciToken (a
 * JWT) or an X.509 proxy (`--proxy`), an IDTOKEN file (`--token-file`) or a token directory
 * (`--token-dir`). Pure: the caller reads the files (condor/credentials.ts).
 */
import { candidateIdTokens, type IdToken, idTokensInText, type TokenDirEntry, tokenDirFiles } from "./idtokens.ts";

/** The token of a token file: its first line that is neither empty nor a `#` comment. */
function tokenLine(text: string): string | undefined {
  return text.split("\n").map((l) => l.trim()).find((l) => l !== "" && !l.startsWith("#"));
}

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** A JWT (three base64url parts) is a token; anything else (a PEM, or not a JWT) is taken for an X.509 proxy. */
export function credentialKind(text: string): "token" | "x509" {
  if (text.includes("-----BEGIN")) return "x509";
  const token = tokenLine(text);
  return token !== undefined && JWT.test(token) ? "token" : "x509";
}

/** The `exp` claim of a token file's JWT, in epoch milliseconds. */
function jwtExpiry(text: string): number | undefined {
  const parts = tokenLine(text)?.split(".");
  if (!parts || parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { exp?: unknown };
    return typeof payload.exp === "number" ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Where the credential is, as the flags name it (flags.ts condorAccess). */
export type CredentialSource =
  | { kind: "proxy"; path: string }
  | { kind: "idtoken-file"; path: string }
  | { kind: "idtoken-dir"; path: string };

/**
 * What was read of it: a file's text (undefined when missing, or when it is there but cannot be
 * read: `unreadable` then says why, e.g. `EACCES`), or a directory's entries.
 */
export type CredentialRead =
  | { kind: "file"; text: string | undefined; unreadable?: string }
  | { kind: "dir"; uid: number; entries: TokenDirEntry[] | undefined };

export interface CredentialState {
  /** Why the credential stops the sidecar from working, if it does (the ping fails with it). */
  problem?: string;
  /** When it expires, epoch ms, when that is known (the metrics' gauge). */
  expiry?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Whether the credential works, and until when. A proxy file: missing, or past its JWT's `exp` or
 * its certificate's notAfter (read by `certificateExpiry`, which needs a crypto API). IDTOKENS:
 * only the tokens a tool could send count (idtokens.ts candidateIdTokens); the credential fails
 * when there is none or when every one has expired, and its expiry is the soonest `exp` among
 * those that have not: the sidecar cannot tell which of them the schedd will take before it asks.
 */
export function credentialState(
  source: CredentialSource,
  read: CredentialRead,
  now: number,
  certificateExpiry: (pem: string) => number | undefined,
): CredentialState {
  if (source.kind === "idtoken-dir") {
    if (read.kind !== "dir" || read.entries === undefined) return { problem: `token directory ${source.path} cannot be read` };
    const { read: files, skipped } = tokenDirFiles(read.entries, read.uid);
    const shown = skipped.length > 5 ? `${skipped.slice(0, 5).join(", ")} and ${skipped.length - 5} more` : skipped.join(", ");
    return idTokenState(
      candidateIdTokens(files),
      now,
      `token directory ${source.path} holds no IDTOKEN the tools can use${shown ? `; skipped: ${shown}` : ""}`,
      (last) => `every IDTOKEN in token directory ${source.path} has expired, the last at ${iso(last)}`,
    );
  }
  const text = read.kind === "file" ? read.text : undefined;
  if (text === undefined) {
    // A file the sidecar's user may not read is there: "missing" would send the operator looking in the wrong place.
    const why = read.kind === "file" ? read.unreadable : undefined;
    return { problem: why === undefined ? `credential file ${source.path} is missing` : `credential file ${source.path} cannot be read (${why})` };
  }
  if (source.kind === "idtoken-file") {
    return idTokenState(
      candidateIdTokens([{ name: source.path, tokens: idTokensInText(text) }]),
      now,
      `credential file ${source.path} holds no IDTOKEN (a JWT with a kid, an iss and a sub)`,
      (last) => `credential ${source.path} expired at ${iso(last)}`,
    );
  }
  const expiry = text.includes("-----BEGIN CERTIFICATE-----") ? certificateExpiry(text) : jwtExpiry(text);
  if (expiry !== undefined && expiry <= now) return { problem: `credential ${source.path} expired at ${iso(expiry)}`, expiry };
  return expiry === undefined ? {} : { expiry };
}

function idTokenState(tokens: IdToken[], now: number, none: string, expired: (last: number) => string): CredentialState {
  if (tokens.length === 0) return { problem: none };
  const live = tokens.filter((t) => t.exp === undefined || t.exp > now);
  if (live.length === 0) {
    const last = Math.max(...tokens.map((t) => t.exp!));
    return { problem: expired(last), expiry: last };
  }
  const exps = live.flatMap((t) => (t.exp === undefined ? [] : [t.exp]));
  return exps.length === 0 ? {} : { expiry: Math.min(...exps) };
}
