/** Pieces shared by the Bun and Deno spawn adapters. */

export const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;
/** After a timeout: SIGTERM first, SIGKILL this long after. */
export const KILL_GRACE_MS = 2_000;

/**
 * Reads a stream to bytes, keeping at most `max` of them (the rest is drained and dropped); into
 * `into` when given (a view of it, or of a larger buffer when it is too small).
 */
export async function readCappedBytes(stream: ReadableStream<Uint8Array> | null | undefined, max: number, into?: Uint8Array): Promise<Uint8Array> {
  if (!stream) return into ? into.subarray(0, 0) : new Uint8Array();
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let buf = into;
  let kept = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept >= max) continue;
    const part = value.byteLength + kept > max ? value.subarray(0, max - kept) : value;
    if (buf) {
      buf = room(buf, kept, kept + part.byteLength);
      buf.set(part, kept);
    } else parts.push(part);
    kept += part.byteLength;
  }
  if (buf) return buf.subarray(0, kept);
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(kept);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** `buf` if it holds `need` bytes, else a larger buffer with its first `used` bytes. */
export function room(buf: Uint8Array, used: number, need: number): Uint8Array {
  if (need <= buf.byteLength) return buf;
  const out = new Uint8Array(Math.max(need + (need >> 2), 2 * buf.byteLength, 64 * 1024));
  out.set(buf.subarray(0, used));
  return out;
}

/** Reads a stream to text (decoded once), keeping at most `max` bytes. */
export async function readCapped(stream: ReadableStream<Uint8Array> | null | undefined, max: number): Promise<string> {
  return new TextDecoder().decode(await readCappedBytes(stream, max));
}

export function toBytes(input: string | Uint8Array): Uint8Array {
  return typeof input === "string" ? new TextEncoder().encode(input) : input;
}
