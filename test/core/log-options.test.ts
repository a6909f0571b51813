// kubectl logs options on the wrapper's stamped lines (docs/interlink.md#get-getlogs,
// docs/interlink.md#check-25), and the byte helpers of log follow.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { completeEnd, findAfterAnchor, firstLineStart, lastCompleteLine, LogRequestSchema, sinceMs, truncateBytes } from "../../src/core/log-options.ts";
import { logFileStream } from "../../src/service/logs.ts";

const log = ["2026-11-22T10:00:00.000001Z one", "2026-11-22T10:00:10.000002Z two", "2026-11-22T10:00:20.000003Z three é", ""].join("\n");
const now = Date.parse("2026-11-22T10:00:25Z");
const opts = (o: Record<string, unknown> = {}) =>
  LogRequestSchema.parse({ Namespace: "n", PodUID: "u", PodName: "p", ContainerName: "c", Opts: { SinceTime: "0001-01-01T00:00:00Z", ...o } }).Opts;
const enc = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** The production path of a finished container's log: its file, through every non-follow option. */
async function applied(text: string, o: Record<string, unknown>): Promise<Uint8Array> {
  const dir = join(root, "pods", `p${++files}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "c.main.log"), text);
  const op = opts(o);
  return new Uint8Array(await new Response(logFileStream({ dir, rel: "c.main.log" }, op, sinceMs(op, now))).arrayBuffer());
}
const root = mkdtempSync(join(tmpdir(), "logs-test-"));
let files = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a log file through the kubectl options (logFileStream)", () => {
  const table: [string, Record<string, unknown>, string][] = [
    ["no options: text without the internal stamps", {}, "one\ntwo\nthree é\n"],
    [
      "Timestamps: RFC 3339 prefix",
      { Timestamps: true },
      "2026-11-22T10:00:00.000001Z one\n2026-11-22T10:00:10.000002Z two\n2026-11-22T10:00:20.000003Z three é\n",
    ],
    ["Tail 2", { Tail: 2 }, "two\nthree é\n"],
    ["Bytes 6", { Bytes: 6 }, "one\ntw"],
    ["SinceSeconds 12", { SinceSeconds: 12 }, "three é\n"],
    ["SinceTime", { SinceTime: "2026-11-22T10:00:05Z" }, "two\nthree é\n"],
    ["zero SinceTime means unset", { SinceTime: "0001-01-01T00:00:00Z" }, "one\ntwo\nthree é\n"],
    ["Tail then Bytes", { Tail: 1, Bytes: 3 }, "thr"],
  ];
  for (const [name, o, want] of table) test(name, async () => expect(text(await applied(log, o))).toBe(want));
  test("empty log → empty body", async () => expect((await applied("", {})).byteLength).toBe(0));
  test("a partial last line is kept", async () => expect(text(await applied("2026-11-22T10:00:00.000001Z partial", {}))).toBe("partial\n"));
  test("docs/interlink.md#get-getlogs Bytes is a byte limit: one byte of é is one byte", async () => {
    expect([...(await applied("2026-11-22T10:00:00.000001Z é", { Bytes: 1 }))]).toEqual([0xc3]);
    expect([...(await applied("2026-11-22T10:00:00.000001Z é", { Bytes: 2 }))]).toEqual([0xc3, 0xa9]);
  });
});

describe("truncateBytes", () => {
  test("cuts raw bytes, never re-encodes", () => expect([...truncateBytes(enc("éa"), 1)]).toEqual([0xc3]));
  test("shorter input is returned as is", () => expect(text(truncateBytes(enc("ab"), 5))).toBe("ab"));
});

describe("findAfterAnchor: what is new in a tail window", () => {
  const l = (n: number) => `2026-11-22T10:00:00.00000${n}Z line ${n}`;
  const file = `${l(1)}\n${l(2)}\n${l(3)}\n${l(4)}\npart`;
  const table: [string, string, string | undefined, boolean, string | undefined][] = [
    ["after the anchor in the middle", file, l(2), true, `${l(3)}\n${l(4)}\npart`],
    ["anchor is the last complete line: only the partial line is new", file, l(4), true, "part"],
    ["anchor is the first line of a whole file", file, l(1), true, `${l(2)}\n${l(3)}\n${l(4)}\npart`],
    ["first line of a cut window is not trusted", file.slice(5), l(1).slice(5), false, undefined],
    ["a line that only ends like the anchor does not match", `x${l(2)}\n${l(3)}\n`, l(2), true, undefined],
    ["not in a cut window: a bigger one may find it", file.slice(40), l(1), false, undefined],
    ["not in a whole file: the file was rotated", `${l(5)}\n`, l(2), true, undefined],
    ["no anchor, whole: everything is new", file, undefined, true, file],
    ["no anchor, cut window: a bigger one is needed", file, undefined, false, undefined],
    ["the last occurrence wins (a repeated line)", `${l(1)}\nA\n${l(1)}\nB\n`, l(1), true, "B\n"],
  ];
  for (const [name, win, anchor, whole, want] of table) {
    test(name, () => {
      const w = enc(win);
      const at = findAfterAnchor(w, anchor === undefined ? undefined : enc(anchor), whole);
      expect(at === undefined ? undefined : text(w.subarray(at))).toBe(want);
    });
  }
});

describe("line helpers", () => {
  test("completeEnd", () => {
    expect(completeEnd(enc("a\nb"))).toBe(2);
    expect(completeEnd(enc("ab"))).toBe(0);
    expect(completeEnd(enc("a\n"))).toBe(2);
  });
  test("lastCompleteLine", () => {
    expect(text(lastCompleteLine(enc("a\nbc\nd"))!)).toBe("bc");
    expect(text(lastCompleteLine(enc("bc\n"))!)).toBe("bc");
    expect(text(lastCompleteLine(enc("\n"))!)).toBe("");
    expect(lastCompleteLine(enc("partial"))).toBeUndefined();
  });
  test("firstLineStart", () => {
    expect(firstLineStart(enc("ut\nnext\n"))).toBe(3);
    expect(firstLineStart(enc("no newline"))).toBe(0);
  });
});
