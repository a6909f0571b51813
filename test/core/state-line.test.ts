// The state line's optional message (the 14th field): what the wrapper encodes in bash, the parser
// reads back, and the status mapping puts in the container's message. A job can chirp any value
// into its state attributes, so the decoded text is one line, cut short, and garbage is ignored.
import { describe, expect, test } from "bun:test";
import { formatStateLine, MAX_MESSAGE, parseStateLine, type StateLine } from "../../src/core/state-line.ts";
import { podStatus } from "../../src/core/status.ts";
import type { JobAd } from "../../src/core/classad.ts";

const refused: StateLine = {
  state: "terminated",
  reason: "CreateContainerConfigError",
  exitCode: 1,
  startedAt: 1_700_000_000,
  finishedAt: 1_700_000_000,
  ready: false,
  restartCount: 0,
  message: "cannot mount /x: subPath escape of emptydir/shared resolves to /etc, outside its volume",
};

/** The bash library's encoding (base64 -w 0 | tr '+/' '-_' | tr -d '='), from the shell itself. */
function bashB64url(text: string): string {
  const r = Bun.spawnSync(["/bin/bash", "-c", `printf '%s' "$1" | head -c 400 | base64 -w 0 | tr '+/' '-_' | tr -d '='`, "b", text]);
  return r.stdout.toString();
}

describe("the state line's message", () => {
  test("round-trips, as a 14th field of base64url characters only (chirp-safe)", () => {
    const line = formatStateLine(refused);
    expect(line.split(" ")).toHaveLength(14);
    expect(line.split(" ")[13]).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(parseStateLine(line)).toEqual({ ...refused, last: undefined, signal: undefined });
  });

  test("a line without one has 13 fields, as before; parsers of 13 fields ignore the 14th", () => {
    const { message: _, ...plain } = refused;
    expect(formatStateLine(plain).split(" ")).toHaveLength(13);
    expect(parseStateLine(formatStateLine(plain))?.message).toBeUndefined();
    const old13 = (text: string) => text.trim().split(/\s+/).slice(0, 13).join(" ");
    expect(parseStateLine(old13(formatStateLine(refused)))).toMatchObject({ reason: "CreateContainerConfigError", exitCode: 1 });
  });

  test("the bash library's encoding decodes to the same text, UTF-8 included", () => {
    for (const text of [refused.message!, "é ünïcødé → 雪", "a/b?c=d&e>f", "x".repeat(3)]) {
      const line = `1 terminated CreateContainerConfigError 1 - - 0 0 - - - - - ${bashB64url(text)}`;
      expect(parseStateLine(line)?.message).toBe(text);
    }
  });

  test("a chirped message is one line and short: control characters and Unicode line breaks become spaces", () => {
    const nasty = "one\ntwo\r\u0085three\u2028four\u2029five\u0000six\u001b[31m";
    const line = formatStateLine({ ...refused, message: nasty });
    expect(parseStateLine(line)?.message).toBe("one two three four five six [31m");
    const long = formatStateLine({ ...refused, message: "m".repeat(800) });
    expect(parseStateLine(long)?.message).toHaveLength(MAX_MESSAGE);
    // The wrapper cuts at 400 bytes, maybe inside a character: the rest is kept.
    const cut = `1 terminated Error 1 - - 0 0 - - - - - ${bashB64url(`x${"é".repeat(250)}`)}`;
    expect(parseStateLine(cut)?.message).toBe(`x${"é".repeat(199)}`);
  });

  test("garbage in the 14th field is ignored, never fatal", () => {
    // "__8" is base64url for the bytes ff ff: not UTF-8 text.
    for (const tok of ["-", "not-base64!", "a", '"quoted"', "x".repeat(5000), "%%%", "__8"]) {
      const s = parseStateLine(`1 terminated Error 2 - - 0 0 - - - - - ${tok}`);
      expect(s).toMatchObject({ state: "terminated", exitCode: 2 });
      expect(s?.message).toBeUndefined();
    }
  });

  test("the status mapping puts it in the container's terminated message", () => {
    const running: StateLine = { state: "running", startedAt: 1_700_000_001, ready: true, restartCount: 0 };
    const ad = {
      ClusterId: 1,
      ProcId: 0,
      JobStatus: 2,
      InterLinkCtr0State: formatStateLine(refused),
      InterLinkCtr1State: formatStateLine(running),
    } as unknown as JobAd;
    const containers = [{ name: "main", init: false, image: "busybox" }, { name: "side", init: false, image: "busybox" }];
    const s = podStatus({ uid: "u", name: "p", namespace: "n", jid: "1.0", containers }, { kind: "queued", ad });
    expect(s.containers[0]?.state.terminated).toMatchObject({ reason: "CreateContainerConfigError", exitCode: 1, message: refused.message });
  });
});
