/**
 * The credential file the condor tools authenticate with (`--proxy`): a SciToken (a JWT) or an
 * X.509 proxy. Pure: the caller reads the file.
 */

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

/** When the credential expires (epoch ms): a certificate's notAfter or a JWT's `exp`; undefined when unknown. */
export function credentialExpiry(text: string, certificateExpiry: (pem: string) => number | undefined): number | undefined {
  return text.includes("-----BEGIN CERTIFICATE-----") ? certificateExpiry(text) : jwtExpiry(text);
}

/**
 * Why the credential stops the sidecar from working, or undefined: missing, or past its expiry
 * (a JWT's `exp`; a certificate's notAfter, read by `certificateExpiry`, which needs a crypto API).
 */
export function credentialProblem(
  path: string,
  text: string | undefined,
  now: number,
  certificateExpiry: (pem: string) => number | undefined,
): string | undefined {
  if (text === undefined) return `credential file ${path} is missing`;
  const exp = credentialExpiry(text, certificateExpiry);
  if (exp !== undefined && exp <= now) return `credential ${path} expired at ${new Date(exp).toISOString()}`;
  return undefined;
}
