// Probe and hook header values reach the server as their UTF-8 bytes, empty ones and HTAB, NEL,
// U+2028 and U+2029 included (docs/pod-to-job.md#probes-and-hooks): the wrapper's own http_get in
// real bash, with curl and with bash's /dev/tcp, against a server that records the bytes.
import { afterAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import { sh } from "../../src/render/sh.ts";
import { WRAPPER_LIB } from "../../src/render/wrapper.ts";
import { scaleDefaultTimeout } from "../helpers/sidecar.ts";

// Each case runs bash: a guard against a hang, not bun's 5 s.
await scaleDefaultTimeout(30_000);

const received: Buffer[] = [];
const server: Server = createServer((sock) => {
  let buf = Buffer.alloc(0);
  sock.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    if (buf.includes("\r\n\r\n")) {
      received.push(buf);
      sock.end("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
  });
  sock.on("error", () => {});
});
const port = await new Promise<number>((res) => server.listen(0, "127.0.0.1", () => res((server.address() as { port: number }).port)));
afterAll(() => server.close());

const HEADERS: [string, string][] = [
  ["X-Plain", "Bearer abc"],
  ["X-Empty", ""],
  ["X-Tab", "a\tb"],
  ["X-Nel", "a\u0085b"],
  ["X-Ls", "a\u2028b"],
  ["X-Ps", "a\u2029b"],
  ["X-Text", "é ✓ 😀 '\"$(x)"],
  ["X-Blank", " \t"],
];

/** Runs the wrapper's probe handler (run_handler httpGet, as the rendered script calls it) and returns the request's bytes. */
async function probe(curl: string): Promise<Buffer> {
  const before = received.length;
  const flat = HEADERS.flat();
  const script = `${WRAPPER_LIB}\nCURL=${curl}\n` + sh`run_handler 5 httpGet HTTP 127.0.0.1 ${port} /p ${HEADERS.length} ${flat}`;
  const p = Bun.spawn(["bash", "-c", script], { stdout: "pipe", stderr: "pipe" });
  expect(await p.exited).toBe(0);
  expect(received.length).toBe(before + 1);
  return received[before]!;
}

/** The header lines of a request, as bytes (one Buffer per line). */
function headerLines(req: Buffer): Buffer[] {
  const head = req.subarray(0, req.indexOf("\r\n\r\n"));
  const lines: Buffer[] = [];
  let at = head.indexOf("\r\n") + 2;
  while (at < head.length) {
    const end = head.indexOf("\r\n", at);
    lines.push(head.subarray(at, end < 0 ? head.length : end));
    at = end < 0 ? head.length : end + 2;
  }
  return lines;
}

describe("header values on the wire (docs/pod-to-job.md#probes-and-hooks)", () => {
  for (const [via, curl] of [["curl", Bun.which("curl") ?? ""], ["bash's /dev/tcp", ""]] as const) {
    test(`via ${via}: every value is sent as its UTF-8 bytes`, async () => {
      if (via === "curl") expect(curl).not.toBe("");
      const lines = headerLines(await probe(curl));
      for (const [name, value] of HEADERS) {
        const line = lines.find((l) => l.toString("latin1").toLowerCase().startsWith(`${name.toLowerCase()}:`));
        expect(line, `${name} was not sent`).toBeDefined();
        const sent = line!.subarray(name.length + 1);
        // Spaces and HTABs around a value are not part of it (RFC 9110 §5.5): a blank value
        // arrives empty through curl, whose -H cannot send one otherwise.
        const trimmed = (b: Buffer) => b.toString("latin1").replace(/^[ \t]+|[ \t]+$/g, "");
        expect(trimmed(sent)).toBe(trimmed(Buffer.from(value, "utf8")));
        if (value.trim() !== "") expect(sent.equals(Buffer.from(` ${value}`, "utf8"))).toBe(true);
      }
    });
  }
});
