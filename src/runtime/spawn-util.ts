/** Pieces shared by the Bun and Deno spawn adapters. */

export const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;
/** After a timeout: SIGTERM first, SIGKILL this long after. */
export const KILL_GRACE_MS = 2_000;

/** Reads a stream to text, keeping at most `max` bytes (the rest is drained and dropped). */
export async function readCapped(stream: ReadableStream<Uint8Array> | null | undefined, max: number): Promise<string> {
  if (!stream) return "";
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let kept = 0;
  let out = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept >= max) continue;
    const part = value.byteLength + kept > max ? value.subarray(0, max - kept) : value;
    kept += part.byteLength;
    out += decoder.decode(part, { stream: true });
  }
  return out + decoder.decode();
}

export function toBytes(input: string | Uint8Array): Uint8Array {
  return typeof input === "string" ? new TextEncoder().encode(input) : input;
}
