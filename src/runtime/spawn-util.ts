/** Pieces shared by the Bun and Deno spawn adapters. */

export const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;
/** After a timeout: SIGTERM first, SIGKILL this long after. */
export const KILL_GRACE_MS = 2_000;

/** Reads a stream to bytes, keeping at most `max` of them (the rest is drained and dropped). */
export async function readCappedBytes(stream: ReadableStream<Uint8Array> | null | undefined, max: number): Promise<Uint8Array> {
  if (!stream) return new Uint8Array();
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let kept = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept >= max) continue;
    const part = value.byteLength + kept > max ? value.subarray(0, max - kept) : value;
    kept += part.byteLength;
    parts.push(part);
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(kept);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Reads a stream to text (decoded once), keeping at most `max` bytes. */
export async function readCapped(stream: ReadableStream<Uint8Array> | null | undefined, max: number): Promise<string> {
  return new TextDecoder().decode(await readCappedBytes(stream, max));
}

export function toBytes(input: string | Uint8Array): Uint8Array {
  return typeof input === "string" ? new TextEncoder().encode(input) : input;
}
