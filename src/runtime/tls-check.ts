/**
 * Checks a client certificate and key before either runtime sees them: Deno 2.9 does not throw
 * on a certificate it cannot use (an X.509 v1 certificate, or a key of another certificate), it
 * panics and the whole process ends (docs/operator.md#tls). Bun gets the same checks, so that a
 * kubeconfig is refused the same way on both. Messages never quote the key.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { TlsClientOptions } from "./types.ts";

export function checkTlsMaterial(opts: TlsClientOptions): void {
  if ((opts.cert === undefined) !== (opts.key === undefined)) {
    throw new Error("Cannot set up the HTTPS client: a client certificate needs its key, and a key its certificate");
  }
  if (opts.cert === undefined || opts.key === undefined) return;
  const blocks = pemBlocks(opts.cert, "CERTIFICATE");
  if (blocks.length === 0) throw new Error("Cannot set up the HTTPS client: the client certificate holds no PEM CERTIFICATE block");
  blocks.forEach((der, i) => {
    if (!hasVersionField(der)) {
      throw new Error(`Cannot set up the HTTPS client: certificate ${i + 1} of the client certificate is X.509 v1; only v3 certificates are accepted`);
    }
  });
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(opts.cert);
  } catch {
    throw new Error("Cannot set up the HTTPS client: the client certificate does not parse");
  }
  let matches: boolean;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(opts.key));
  } catch {
    throw new Error("Cannot set up the HTTPS client: the client key does not parse as a PEM private key");
  }
  if (!matches) {
    throw new Error(`Cannot set up the HTTPS client: the client key does not belong to the certificate of "${cert.subject.replaceAll("\n", ", ")}"`);
  }
}

/** The DER bytes of each PEM block of the given label. */
export function pemBlocks(pem: string, label: string): Uint8Array[] {
  const re = new RegExp(`-----BEGIN ${label}-----([^-]*)-----END ${label}-----`, "g");
  const out: Uint8Array[] = [];
  for (const m of pem.matchAll(re)) {
    const b64 = m[1]!.replace(/\s+/g, "");
    try {
      out.push(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    } catch {
      out.push(new Uint8Array());
    }
  }
  return out;
}

/**
 * Whether the certificate's tbsCertificate starts with the explicit `[0] version` field, which
 * X.509 v1 leaves out (RFC 5280, section 4.1): Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] … } … }.
 */
export function hasVersionField(der: Uint8Array): boolean {
  let at = 0;
  const header = (): boolean => {
    if (der[at] !== 0x30) return false;
    const len = der[at + 1];
    if (len === undefined) return false;
    at += 2 + (len & 0x80 ? len & 0x7f : 0);
    return at < der.length;
  };
  if (!header() || !header()) return false;
  return der[at] === 0xa0;
}
