// The job event log reader (src/eventlog/parse.ts) against the texts HTCondor writes
// (docs/htcondor.md#the-job-event-log): every event the sidecar reads, both date styles, the
// boundaries, partial events, hostile input, other formats, truncation and the per-job cap.
import { describe, expect, test } from "bun:test";
import {
  boundaryIntact,
  capEvents,
  compareLogFile,
  detectFormat,
  emptyRateWindow,
  EVENT,
  EVENTS_PER_JOB_PER_MINUTE,
  type FileChange,
  type JobEvent,
  type LogFormat,
  readEventLog,
  type ReadOptions,
  scanForBoundary,
} from "../../src/eventlog/parse.ts";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);
const UTC: ReadOptions = { year: 2026, localOffsetMinutes: 0 };
const read = (s: string, offset = 0, opts = UTC) => readEventLog(bytes(s), offset, opts);
const T = Date.UTC(2026, 10, 22, 7, 32, 56) / 1000;

const USAGE = "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n" +
  "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
  "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n" +
  "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n" +
  "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n" +
  "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n" +
  "\tPartitionable Resources :    Usage  Request Allocated \n" +
  "\t   Cpus                 :                 1         1 \n";

// docs/htcondor.md#the-events-as-written: one golden text per event, as condor_event.cpp formats them
const GOLDEN: [string, string, Partial<JobEvent>][] = [
  ["000 submit", "000 (123.000.000) 2026-11-22 07:32:56 Job submitted from host: <127.0.0.1:9618?addrs=127.0.0.1-9618&noUDP&sock=schedd_1_1>\n...\n", {
    type: 0,
  }],
  [
    "001 execute",
    "001 (123.004.000) 2026-11-22 07:32:56 Job executing on host: <127.0.0.1:9618?addrs=127.0.0.1-9618&alias=h&noUDP&sock=startd_1_1>\n" +
    '\tSlotName: slot1_1@h\n\tCondorScratchDir = "/var/lib/condor/execute/dir_1"\n\tCpus = 1\n\tMemory = 128\n...\n',
    { type: 1, proc: 4 },
  ],
  [
    "004 evicted by condor_vacate_job",
    "004 (123.000.000) 2026-11-22 07:32:56 Job was evicted. Code 1022 Subcode 0\n\t(0) CPU times\n" +
    "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
    "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n\tReason: Job vacated by schedd\n...\n",
    { type: 4 },
  ],
  [
    "004 without a code, terminated and requeued",
    "004 (123.000.000) 2026-11-22 07:32:56 Job was evicted.\n\t(0) Job terminated and was requeued\n" +
    "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
    "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n\t(1) Normal termination (return value 3)\n...\n",
    { type: 4, exitCode: 3 },
  ],
  ["005 normal", "005 (123.000.000) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 0)\n" + USAGE + "...\n", {
    type: 5,
    exitCode: 0,
  }],
  ["005 exit 137", "005 (123.000.000) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 137)\n" + USAGE + "...\n", {
    type: 5,
    exitCode: 137,
  }],
  [
    "005 by a signal",
    "005 (123.000.000) 2026-11-22 07:32:56 Job terminated.\n\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n" + USAGE + "...\n",
    { type: 5, exitSignal: 9 },
  ],
  [
    "007 shadow exception",
    "007 (123.000.000) 2026-11-22 07:32:56 Shadow exception!\n\tError from slot1_1@h: starter died\n\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n...\n",
    { type: 7 },
  ],
  ["008 generic", "008 (002.000.000) 2026-11-22 07:32:56 hello from chirp ulog\n...\n", { type: 8, cluster: 2 }],
  ["009 aborted", "009 (123.000.000) 2026-11-22 07:32:56 Job was aborted.\n\tvia condor_rm (by user condoruser)\n...\n", { type: 9 }],
  ["012 held", "012 (123.000.000) 2026-11-22 07:32:56 Job was held.\n\tvia condor_hold (by user condoruser)\n\tCode 1 Subcode 0\n...\n", { type: 12 }],
  ["013 released", "013 (123.000.000) 2026-11-22 07:32:56 Job was released.\n\tvia condor_release (by user condoruser)\n...\n", { type: 13 }],
  [
    "024 reconnect failed",
    "024 (123.000.000) 2026-11-22 07:32:56 Job reconnection failed\n    Job disconnected too long: JobLeaseDuration (2400 seconds) expired\n    Can not reconnect to slot1@h, rescheduling job\n...\n",
    { type: 24 },
  ],
  // docs/htcondor.md#observed-on-a-real-htcondor: what the schedd wrote for a chirp set_job_attr
  ["033 set, observed", '033 (002.000.000) 2026-11-22 07:32:56 Setting job attribute ChirpTestAttr to "set-by-chirp"\n...\n', {
    type: 33,
    cluster: 2,
    attribute: "ChirpTestAttr",
  }],
  [
    "033 changed",
    '033 (002.000.000) 2026-11-22 07:32:56 Changing job attribute InterLinkC0State from "c0 running 1" to "c0 exited 1 0"\n...\n',
    { type: 33, cluster: 2, attribute: "InterLinkC0State" },
  ],
];

describe("readEventLog: the events the sidecar reads (docs/htcondor.md#the-events-as-written)", () => {
  for (const [name, text, want] of GOLDEN) {
    test(name, () => {
      const r = read(text);
      expect(r.format).toBe("classic");
      expect(r.malformed + r.unknown).toBe(0);
      expect(r.events).toHaveLength(1);
      expect(r.events[0]).toMatchObject({ cluster: 123, proc: 0, subproc: 0, time: T, zone: "local", offset: 0, ...want });
      expect(r.offset).toBe(bytes(text).length);
      expect(r.pendingBytes).toBe(0);
    });
  }

  test("the whole golden log at once: offsets of each event, in order", () => {
    const all = GOLDEN.map(([, t]) => t).join("");
    const r = read(all);
    expect(r.events.map((e) => e.type)).toEqual(GOLDEN.map(([, , w]) => w.type!));
    let at = 0;
    GOLDEN.forEach(([, t], i) => {
      expect(r.events[i]!.offset).toBe(at);
      at += bytes(t).length;
    });
    expect(r.offset).toBe(at);
  });

  test("a 005 without its termination line is malformed, and the next event is still read", () => {
    const r = read("005 (1.0.0) 2026-11-22 07:32:56 Job terminated.\n\tsomething else\n...\n" + GOLDEN[0]![1]);
    expect(r.malformed).toBe(1);
    expect(r.events.map((e) => e.type)).toEqual([0]);
  });

  test("unknown events are skipped, counted, and cost no boundary", () => {
    const text = "006 (1.0.0) 2026-11-22 07:32:56 Image size of job updated: 2000\n\t1  -  MemoryUsage of job (MB)\n...\n" +
      "040 (1.0.0) 2026-11-22 07:32:56 Started transferring input files\n\tTransferring to host: <127.0.0.1>\n...\n" + GOLDEN[13]![1];
    const r = read(text);
    expect(r.unknown).toBe(2);
    expect(r.events.map((e) => e.attribute)).toEqual(["ChirpTestAttr"]);
  });
});

describe("readEventLog: dates (docs/htcondor.md#formats-of-the-log)", () => {
  const at = (header: string, opts = UTC) => read(`033 (1.0.0) ${header} Setting job attribute A to 1\n...\n`, 0, opts).events[0];
  test("ISO date, the default since 8.9, in local time converted with the caller's offset", () => {
    expect(at("2026-11-22 08:32:56", { year: 2000, localOffsetMinutes: 60 })).toMatchObject({ time: T, zone: "local" });
  });
  test("legacy MM/DD takes the caller's year", () => {
    expect(at("11/22 07:32:56")?.time).toBe(T);
    expect(at("11/22 07:32:56", { year: 2025, localOffsetMinutes: 0 })?.time).toBe(Date.UTC(2025, 10, 22, 7, 32, 56) / 1000);
  });
  test("UTC (`Z`) ignores the local offset", () => {
    expect(at("2026-11-22 07:32:56Z", { year: 2000, localOffsetMinutes: 300 })).toMatchObject({ time: T, zone: "utc" });
  });
  test("SUB_SECOND adds milliseconds", () => {
    expect(at("2026-11-22 07:32:56.250Z")?.time).toBe(T + 0.25);
    expect(at("11/22 07:32:56.250")?.time).toBe(T + 0.25);
  });
  test("an ISO date with a T, which HTCondor's reader also accepts", () => {
    expect(at("2026-11-22T07:32:56")?.time).toBe(T);
  });
  for (const bad of ["13/22 07:32:56", "2026-00-22 07:32:56", "2026-11-22 07:61:00", "11/22", "2026-11-22", "yesterday 07:32:56"]) {
    test(`bad date ${JSON.stringify(bad)} is malformed`, () => {
      const r = read(`033 (1.0.0) ${bad} Setting job attribute A to 1\n...\n`);
      expect([r.events.length, r.malformed]).toEqual([0, 1]);
    });
  }
});

describe("readEventLog: boundaries and partial events (docs/htcondor.md#following-the-log)", () => {
  const a = GOLDEN[0]![1], b = GOLDEN[4]![1];
  test("an event without its `...` line is left for later; the offset stays on the boundary", () => {
    const whole = a + b;
    for (let cut = bytes(a).length; cut < bytes(whole).length; cut++) {
      const r = readEventLog(bytes(whole).subarray(0, cut), 0, UTC);
      expect(r.events.map((e) => e.type)).toEqual([0]);
      expect(r.offset).toBe(bytes(a).length);
      expect(r.pendingBytes).toBe(cut - bytes(a).length);
    }
  });
  test("reading on from the returned offset gives the rest, with file offsets", () => {
    const first = read(a + b.slice(0, 40));
    const rest = readEventLog(bytes(a + b).subarray(first.offset), first.offset, UTC);
    expect(rest.events).toHaveLength(1);
    expect(rest.events[0]).toMatchObject({ type: 5, offset: bytes(a).length });
    expect(rest.offset).toBe(bytes(a + b).length);
  });
  test("a `...` with no LF yet is not a boundary", () => {
    const r = read(a.slice(0, -1));
    expect([r.events.length, r.offset, r.pendingBytes]).toEqual([0, 0, bytes(a).length - 1]);
  });
  test("split on LF only: a CR inside a line is part of it, `...\\r` is a sync line as in HTCondor", () => {
    const r = read('033 (1.0.0) 2026-11-22 07:32:56 Setting job attribute A to "x\ry"\r\n...\r\n' + a);
    expect(r.events.map((e) => [e.type, e.attribute])).toEqual([[33, "A"], [0, undefined]]);
  });
  test("multi-byte UTF-8 in a body keeps byte offsets right", () => {
    const text = "009 (1.0.0) 2026-11-22 07:32:56 Job was aborted.\n\tvia condor_rm — ünïcode\n...\n" + a;
    const r = read(text);
    expect(r.events[1]!.offset).toBe(bytes(text).length - bytes(a).length);
    expect(r.offset).toBe(bytes(text).length);
  });
  test("empty input", () => {
    expect(read("")).toMatchObject({ format: "empty", events: [], offset: 0, pendingBytes: 0 });
    expect(read("", 500)).toMatchObject({ format: "empty", offset: 500 });
  });
});

describe("readEventLog: hostile input (docs/htcondor.md#what-a-job-can-write-into-the-log)", () => {
  const a = GOLDEN[0]![1];
  test("a forged event for another job is parsed; trusting it is the caller's job", () => {
    const forged = "005 (777.003.000) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n";
    expect(read(forged).events[0]).toMatchObject({ type: 5, cluster: 777, proc: 3, exitCode: 0 });
  });
  test("garbage without a terminator swallows only the event it runs into", () => {
    const text = a + "garbage from a job\n000 (1.0.0) 2026-11-22 07:32:56 Job submitted from host: <x>\n...\n" + GOLDEN[4]![1];
    const r = read(text);
    expect(r.malformed).toBe(1);
    expect(r.events.map((e) => e.type)).toEqual([0, 5]);
    expect(r.format).toBe("classic");
  });
  test("junk at a saved offset is read as a malformed classic event, not as another format", () => {
    const r = readEventLog(bytes("hello\n...\n" + a), 4096, UTC);
    expect([r.format, r.malformed, r.events.length, r.offset]).toEqual(["classic", 1, 1, 4096 + 10 + bytes(a).length]);
  });
  test("a header line inside a body does not start an event: the block is malformed and names both jobs", () => {
    const text = "012 (1.0.0) 2026-11-22 07:32:56 Job was held.\n" +
      "005 (9.0.0) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 0)\n\tCode 1 Subcode 0\n...\n";
    const r = read(text);
    expect([r.events.length, r.malformed, r.named.map((j) => j.cluster)]).toEqual([0, 1, [1, 9]]);
  });
  const malformed: [string, string][] = [
    ["two-digit event number", "33 (1.0.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["four-digit event number", "0033 (1.0.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["a cluster beyond int32", "033 (99999999999.0.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["a negative proc", "033 (1.-1.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["no subproc", "033 (1.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["leading space", " 033 (1.0.0) 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["a 033 naming no attribute", "033 (1.0.0) 2026-11-22 07:32:56 Setting job attribute  to 1"],
    ["a 033 with an expression for a name", "033 (1.0.0) 2026-11-22 07:32:56 Setting job attribute A+B to 1"],
    ["a 005 with another first line", "005 (1.0.0) 2026-11-22 07:32:56 Job terminated!\n\t(1) Normal termination (return value 0)"],
    ["a 005 with a huge return value", "005 (1.0.0) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 99999999999)"],
    ["a NUL in the header", "033 (1.0.0)\u0000 2026-11-22 07:32:56 Setting job attribute A to 1"],
    ["an empty event", ""],
  ];
  for (const [name, head] of malformed) {
    test(`${name}: malformed, and the next event is read`, () => {
      const r = read(a + (head ? head + "\n" : "") + "...\n" + a);
      expect(r.malformed).toBe(1);
      expect(r.events.map((e) => e.type)).toEqual([0, 0]);
    });
  }
  test("a megabyte line without LF stays pending, nothing is guessed", () => {
    const r = read(a + "x".repeat(1 << 20));
    expect([r.events.length, r.offset, r.pendingBytes]).toEqual([1, bytes(a).length, 1 << 20]);
  });
  test("scanForBoundary finds the `...` line that ends an oversized block, chunk by chunk", () => {
    const junk = "x".repeat(1000) + "\n";
    expect(scanForBoundary(bytes(junk + "...\n" + a), 100, true).boundary).toBe(100 + junk.length + 4);
    // No boundary: the scan resumes at the last line's start, or past a long partial line.
    expect(scanForBoundary(bytes(junk), 100, true)).toEqual({ resume: 100 + junk.length, atLineStart: true });
    expect(scanForBoundary(bytes("x".repeat(10)), 0, true)).toEqual({ resume: 10, atLineStart: false });
    // A `...` split across two chunks is seen: a short partial line is read again with the next one.
    const first = scanForBoundary(bytes(junk + ".."), 0, true);
    expect(first).toEqual({ resume: junk.length, atLineStart: true });
    expect(scanForBoundary(bytes("...\n"), first.resume, first.atLineStart).boundary).toBe(junk.length + 4);
    // The rest of a line that began in the chunk before cannot be a `...` line.
    expect(scanForBoundary(bytes("...\n...\n"), 50, false).boundary).toBe(58);
  });
  test("a forged header without `...` does not hide the next event: malformed, and both ids are named", () => {
    const text = "012 (1.0.0) 2026-11-22 07:32:56 Job was held.\n" +
      "005 (77.0.0) 2026-11-22 07:32:56 Job terminated.\n\t(1) Normal termination (return value 0)\n...\n";
    const r = read(text);
    expect([r.events.length, r.malformed]).toEqual([0, 1]);
    expect(r.named).toEqual([{ cluster: 1, proc: 0 }, { cluster: 77, proc: 0 }]);
  });
  test("whitespace at a saved offset is part of a classic event, never the end of the log", () => {
    const r = readEventLog(bytes(" ".repeat(100) + "\n...\n" + a), 4096, UTC);
    expect([r.format, r.malformed, r.events.length]).toEqual(["classic", 1, 1]);
    const blank = readEventLog(bytes(" ".repeat(100)), 4096, UTC);
    expect([blank.format, blank.offset, blank.pendingBytes]).toEqual(["classic", 4096, 100]);
    expect(read(" ".repeat(100) + "\n...\n" + a)).toMatchObject({ format: "classic", malformed: 1 });
  });
});

describe("formats (docs/htcondor.md#formats-of-the-log)", () => {
  const xml = '<?xml version="1.0"?>\n<!DOCTYPE classad SYSTEM "classads.dtd">\n<c>\n    <a n="MyType"><s>SubmitEvent</s></a>\n</c>\n';
  const json = '{\n    "EventTypeNumber": 0,\n    "MyType": "SubmitEvent"\n}\n';
  const cases: [string, string, LogFormat][] = [
    ["classic", GOLDEN[0]![1], "classic"],
    ["XML", xml, "xml"],
    ["JSON", json, "json"],
    ["blank lines before JSON", "\n\n" + json, "json"],
    ["anything else", "hello\n...\n", "unknown"],
  ];
  for (const [name, text, want] of cases) {
    test(`${name} → ${want}`, () => {
      expect(detectFormat(bytes(text))).toBe(want);
      const r = read(text);
      expect(r.format).toBe(want);
      if (want !== "classic") expect([r.events.length, r.offset]).toEqual([0, 0]);
    });
  }
  test("no bytes are empty; blanks are a classic event being written (a job cannot end the log with them)", () => {
    expect(read("")).toMatchObject({ format: "empty", events: [] });
    expect(read("  \n")).toMatchObject({ format: "classic", events: [], offset: 0, pendingBytes: 3 });
    expect(detectFormat(bytes("  \n"))).toBe("empty");
  });
  test("a switch to JSON after classic events stops at the boundary before it", () => {
    const a = GOLDEN[0]![1];
    const r = read(a + json + GOLDEN[4]![1]);
    expect(r.format).toBe("json");
    expect(r.events.map((e) => e.type)).toEqual([0]);
    expect(r.offset).toBe(bytes(a).length);
  });
});

describe("compareLogFile and boundaryIntact (docs/htcondor.md#following-the-log)", () => {
  const saved = { offset: 100, inode: 7, size: 120 };
  const cases: [string, { inode: number; size: number }, FileChange][] = [
    ["grown", { inode: 7, size: 500 }, "continue"],
    ["unchanged", { inode: 7, size: 120 }, "continue"],
    ["shorter than the last size", { inode: 7, size: 110 }, "truncated"],
    ["shorter than the offset", { inode: 7, size: 0 }, "truncated"],
    ["another inode, even if larger", { inode: 8, size: 5000 }, "replaced"],
  ];
  for (const [name, now, want] of cases) test(name, () => expect(compareLogFile(saved, now)).toBe(want));
  test("the four bytes before an offset are `...\\n`", () => {
    expect(boundaryIntact(0, bytes(""))).toBe(true);
    expect(boundaryIntact(10, bytes("xx\n...\n"))).toBe(true);
    expect(boundaryIntact(10, bytes("x\n...\r\n"))).toBe(true);
    expect(boundaryIntact(10, bytes("xx\nabc\n"))).toBe(false);
    expect(boundaryIntact(10, bytes("..."))).toBe(false);
  });
});

describe("capEvents: events per job per minute (docs/htcondor.md#following-the-log)", () => {
  const ev = (cluster: number, proc = 0): JobEvent => ({ type: 33, cluster, proc, subproc: 0, time: 0, zone: "utc", offset: 0, attribute: "A" });
  test(`at most ${EVENTS_PER_JOB_PER_MINUTE} per job; the flooding job is named, others pass`, () => {
    const flood = Array.from({ length: EVENTS_PER_JOB_PER_MINUTE + 5 }, () => ev(1));
    const r = capEvents([...flood, ev(2)], emptyRateWindow(), 60_000);
    expect(r.kept.filter((e) => e.cluster === 1)).toHaveLength(EVENTS_PER_JOB_PER_MINUTE);
    expect(r.kept.filter((e) => e.cluster === 2)).toHaveLength(1);
    expect(r.limited).toEqual([{ cluster: 1, proc: 0 }]);
  });
  test("the count carries over reads within the minute and resets in the next; the window is updated in place", () => {
    const w = emptyRateWindow();
    const first = capEvents([ev(1), ev(1)], w, 60_000, { cap: 3 });
    expect(first.kept.length).toBe(2);
    const second = capEvents([ev(1), ev(1)], w, 119_999, { cap: 3 });
    expect([second.kept.length, second.limited]).toEqual([1, [{ cluster: 1, proc: 0 }]]);
    const third = capEvents([ev(1), ev(1)], w, 120_000, { cap: 3 });
    expect([third.kept.length, third.limited]).toEqual([2, []]);
    expect(w.counts.size).toBe(1);
  });
  test("events for jobs that are not followed are dropped before counting: forged ids cost no memory", () => {
    const w = emptyRateWindow();
    const forged = Array.from({ length: 10_000 }, (_, i) => ev(1000 + i));
    const r = capEvents([...forged, ev(1)], w, 0, { follows: (id) => id === "1.0" });
    expect([r.kept.map((e) => e.cluster), r.limited, w.counts.size]).toEqual([[1], [], 1]);
  });
  test("EVENT names the numbers of condor_event.h", () => {
    expect(EVENT).toMatchObject({ submit: 0, execute: 1, evicted: 4, terminated: 5, aborted: 9, held: 12, released: 13, attributeUpdate: 33 });
  });
});
