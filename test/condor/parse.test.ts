// What the condor tools print, parsed strictly (docs/htcondor.md#what-condor_submit-prints,
// docs/htcondor.md#json-output, docs/htcondor.md#condor_history,
// docs/htcondor.md#job-ids-one-line-per-id).
import { adNumber, adString, classAdString } from "../../src/core/classad.ts";
import { adCount, type JsonAdSlices, parseAd, sameAd, sliceJobNumber, sliceJsonAds } from "../../src/condor/parse.ts";
import { describe, expect, test } from "bun:test";
import {
  classifySubmitFailure,
  firstErrorLine,
  parseJsonAds,
  parseRmLine,
  parseTerseSubmit,
  parseTotals,
  type RmOutcome,
  type SubmitFailure,
  submitRefusal,
  toolErrorReason,
} from "../../src/condor/parse.ts";

describe("parseTerseSubmit (docs/htcondor.md#what-condor_submit-prints)", () => {
  test("one job", () => expect(parseTerseSubmit("123.0 - 123.0\n", 1)).toEqual([{ cluster: 123, proc: 0 }]));
  test("a cluster of three (one proc per pod, in order: docs/pod-to-job.md#the-submit-file)", () =>
    expect(parseTerseSubmit("410.0 - 410.2\n", 3)).toEqual([{ cluster: 410, proc: 0 }, { cluster: 410, proc: 1 }, { cluster: 410, proc: 2 }]));
  for (const bad of ["", "Submitting job(s).\n1 job(s) submitted to cluster 5.\n", "4.0 - 4.1\n", "1.0 - 1.0\n2.0 - 2.0\n", "5.0 - 6.0\n"]) {
    test(`refuses ${JSON.stringify(bad)} for one job`, () => expect(() => parseTerseSubmit(bad, 1)).toThrow());
  }
  test("refuses a cluster of another size", () => expect(() => parseTerseSubmit("7.0 - 7.1\n", 3)).toThrow(/not one cluster of 3/));
});

describe("parseJsonAds (docs/htcondor.md#json-output, docs/htcondor.md#condor_history)", () => {
  test("condor_q with no match prints nothing", () => expect(parseJsonAds("")).toEqual([]));
  test("condor_history with no match prints [ and ]", () => expect(parseJsonAds("[\n]\n")).toEqual([]));
  test("the writer's shape: ads separated by a lone comma line, expressions as /Expr()/", () => {
    const out =
      '[\n{\n  "ClusterId": 1,\n  "JobStatus": 2,\n  "RequestDisk": "\\/Expr(MAX({ 1024 }) * 1024)\\/"\n}\n,\n{\n  "ClusterId": 2,\n  "JobStatus": 1\n}\n]\n';
    const ads = parseJsonAds(out);
    expect(ads.length).toBe(2);
    expect(adNumber(ads[0]!, "JobStatus")).toBe(2);
    expect(adString(ads[0]!, "RequestDisk")).toBeUndefined();
    expect(adNumber(ads[0]!, "RequestDisk")).toBeUndefined();
  });
});

describe("parseTotals: the summary ad of condor_q -json -totals (docs/htcondor.md#counting-without-ads)", () => {
  test("Jobs and ServerTime", () => {
    const out = '[\n{\n  "AllusersJobs": 9,\n  "ErrorCode": 0,\n  "Jobs": 3,\n  "MyType": "Summary",\n  "Owner": 0,\n  "ServerTime": 1795332741\n}\n]\n';
    expect(parseTotals(out)).toEqual({ jobs: 3, serverTime: 1795332741 });
  });
  test("no summary ad is an error, never zero jobs", () => {
    expect(() => parseTotals("")).toThrow("condor_q -totals printed no summary ad with Jobs");
    expect(() => parseTotals('[\n{\n  "ClusterId": 1\n}\n]\n')).toThrow("no summary ad");
  });
});

describe("parseRmLine (docs/htcondor.md#job-ids-one-line-per-id, docs/htcondor.md#key-observations)", () => {
  const table: [string, string, RmOutcome][] = [
    ["Job 2.0 marked for removal\n", "", "removed"],
    ["", "\nJob 2.0 not found\n", "not_found"],
    ["", "\nJob 2.0 already marked for removal\n", "already_removing"],
    ["", "Permission denied to remove job 2.0\n", "denied"],
    ["", "condor_rm: (null)\n", "unknown"],
    ["Job 12.0 marked for removal\n", "", "unknown"],
  ];
  for (const [out, err, want] of table) test(`${JSON.stringify(out + err)} → ${want}`, () => expect(parseRmLine("2.0", out, err)).toBe(want));
});

test("firstErrorLine skips the empty lines and the Submitting prefix", () => {
  expect(firstErrorLine("\nERROR: Can't find address of local schedd\n", "Submitting job(s)")).toBe("ERROR: Can't find address of local schedd");
  expect(firstErrorLine("", "")).toBe("no output");
});

describe("toolErrorReason keeps the lines that say the schedd refused the credential (docs/htcondor.md#what-each-tool-reads-for-each-method)", () => {
  const jwt = "eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ.eyJpc3MiOiJwb29sLmV4YW1wbGUiLCJzdWIiOiJhIn0.c2lnbmF0dXJlc2lnbmF0dXJl";
  const table: [string, string, string, string][] = [
    [
      "condor_q, no token or a bad signature",
      "\n-- Failed to fetch ads from: <10.0.0.5:9618?addrs=10.0.0.5-9618> : localhost\nAUTHENTICATE:1003:Failed to authenticate with any method\nAUTHENTICATE:1004:Failed to authenticate using IDTOKENS\n",
      "",
      "-- Failed to fetch ads from: <10.0.0.5:9618?addrs=10.0.0.5-9618> : localhost; AUTHENTICATE:1003:Failed to authenticate with any method; AUTHENTICATE:1004:Failed to authenticate using IDTOKENS",
    ],
    [
      "condor_submit, after its banner",
      "\nERROR: Failed to connect to queue manager sched1@pool.example\nAUTHENTICATE:1003:Failed to authenticate with any method\nAUTHENTICATE:1004:Failed to authenticate using IDTOKENS\n",
      "Submitting job(s)",
      "ERROR: Failed to connect to queue manager sched1@pool.example; AUTHENTICATE:1003:Failed to authenticate with any method; AUTHENTICATE:1004:Failed to authenticate using IDTOKENS",
    ],
    [
      "a connection refused says no more than before",
      "\n-- Failed to fetch ads from: <127.0.0.1:9618> : h\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n",
      "",
      "-- Failed to fetch ads from: <127.0.0.1:9618> : h",
    ],
    [
      "a token in an error-stack line is withheld",
      `\n-- Failed to fetch ads from: <a> : h\nAUTHENTICATE:1004:Failed to authenticate using IDTOKENS with ${jwt}\n`,
      "",
      "-- Failed to fetch ads from: <a> : h; AUTHENTICATE:1004:Failed to authenticate using IDTOKENS with [token withheld]",
    ],
    ["nothing printed", "", "", "no output"],
  ];
  for (const [name, stderr, stdout, want] of table) test(name, () => expect(toolErrorReason(stderr, stdout)).toBe(want));
});

test("classAdString escapes quotes and backslashes", () => {
  expect(classAdString('a"b\\c')).toBe('"a\\"b\\\\c"');
});

// What condor_submit prints when it fails (all exit 1), by whose side must act (docs/threat-model.md#6-a-submit-value-ending-in--continues-onto-the-next-line).
describe("classifySubmitFailure (docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#key-observations)", () => {
  const table: [string, string, SubmitFailure][] = [
    // HTCondor's side: finding, reaching or committing to the schedd
    // (docs/htcondor.md#condor_submit-exit-codes-and-errors; docs/htcondor.md#key-observations
    // "Pool down").
    ["no local schedd", "\nERROR: Can't find address of local schedd\n", "schedd"],
    ["no named schedd", "\nERROR: Can't find address of schedd sched1@submit.example.org\n", "schedd"],
    ["connection refused", "\nERROR: Failed to connect to local queue manager\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n", "schedd"],
    ["authentication", "\nERROR: Failed to connect to queue manager sched1\nAUTHENTICATE:1003:Failed to authenticate with any method\n", "schedd"],
    ["commit refused", '\nERROR: Failed to commit job submission into the queue.\nERROR: Setting job owner to "root" is not permitted\n', "schedd"],
    ["queueing refused", "\nERROR: Failed to queue job.\n", "schedd"],
    ["spooling failed", "\nERROR: Failed to spool job files.\n", "schedd"],
    // The sidecar's side: the files it wrote.
    ["no submit file (observed)", "\nERROR: Failed to open command file (job.sub) (No such file or directory)\n", "files"],
    ["no executable", "\nERROR: Can't access executable file /data/pods/u/job.sh: No such file or directory\n", "files"],
    ["no folder (observed)", "ERROR: No such directory: /data/pods/u/nonexistent\n", "files"],
    // The description itself.
    ["a value joined the next line (observed)", "ERROR: Parse error in expression: \n\tRank = 1 priority = 2\n\t", "description"],
    ["a line that does not parse (observed)", "\nERROR: on Line 2 of bad.sub: \n\nERROR: Failed to parse command file (line 2).\n", "description"],
    ["$ENV(...) kept literal: not an expression", "\nERROR: Parse error in expression: \n\tRank = $ENV(HOME)\n\t", "description"],
    ["not an integer", "\nERROR: priority=$ENV(HOME) is invalid, must eval to an integer.\n", "description"],
    ["hold with -spool (observed)", "\nERROR: Cannot set hold to 'true' when using -remote or -spool\n", "description"],
    ["the config reader", 'Submit file Error "job.sub", Line 40: Illegal Identifier: <a-b>\n', "description"],
    [
      "after a deprecation warning",
      "\nWarning: Use of multiple queue statements in a single submit file is deprecated.\nERROR: Parse error in expression: \n\tRank = (\n\t",
      "description",
    ],
    // Neither.
    ["only a warning", "WARNING: the line 'x = 1' was unused by condor_submit. Is it a typo?\n", "unknown"],
    ["nothing", "", "unknown"],
    ["killed", "Terminated\n", "unknown"],
  ];
  test.each(table.map(([name, stderr, want]) => [name, want, stderr] as const))(
    "%s → %s",
    (_, want, stderr) => expect(classifySubmitFailure(stderr)).toBe(want),
  );
});

describe("submitRefusal: condor_submit's own words, on one line", () => {
  test("the refused expression follows its error line", () => {
    expect(submitRefusal("ERROR: Parse error in expression: \n\tRank = 1 priority = 2\n\t")).toBe("ERROR: Parse error in expression: Rank = 1 priority = 2");
  });
  test("warnings are left out, errors kept in order", () => {
    const stderr =
      "\nWARNING: the line 'a = 1' was unused by condor_submit. Is it a typo?\n\nERROR: on Line 2 of job.sub: \n\nERROR: Failed to parse command file (line 2).\n";
    expect(submitRefusal(stderr)).toBe("ERROR: on Line 2 of job.sub: ERROR: Failed to parse command file (line 2).");
  });
  test("long output is cut", () => expect(submitRefusal(`ERROR: ${"x".repeat(1000)}`, 20)).toBe(`ERROR: ${"x".repeat(13)}…`));
});

describe("sliceJsonAds: each ad's place in the bytes, unparsed (docs/htcondor.md#json-output)", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const all = (s: JsonAdSlices) => Array.from({ length: adCount(s) }, (_, i) => parseAd(s, i));
  const two = '[\n{\n  "ClusterId": 1,\n  "HoldReason": "a, b\\n,\\nc",\n  "ProcId": 0\n}\n,\n{\n  "ClusterId": 2,\n  "ProcId": 0\n}\n]\n';
  test("the writer's own shape: split at the comma lines, a string's escaped newlines kept", () => {
    const s = sliceJsonAds(enc(two));
    expect(adCount(s)).toBe(2);
    expect(all(s)).toEqual([{ ClusterId: 1, HoldReason: "a, b\n,\nc", ProcId: 0 }, { ClusterId: 2, ProcId: 0 }]);
  });
  test.each([["condor_q: nothing", ""], ["condor_history: nothing", "[\n]\n"]])("%s → no ad", (_, out) => expect(adCount(sliceJsonAds(enc(out)))).toBe(0));
  test("one ad", () => expect(all(sliceJsonAds(enc('[\n{\n  "ClusterId": 7\n}\n]\n')))).toEqual([{ ClusterId: 7 }]));
  test("another shape is parsed whole", () =>
    expect(all(sliceJsonAds(enc('[{"ClusterId":1},{"ClusterId":2}]')))).toEqual([{ ClusterId: 1 }, { ClusterId: 2 }]));
  test("a multibyte character survives", () => expect(all(sliceJsonAds(enc('[\n{\n  "X": "é€"\n}\n]\n')))).toEqual([{ X: "é€" }]));
  test("a job id is read off the bytes, a quoted look-alike in a string value is not", () => {
    const s = sliceJsonAds(
      enc(
        '[\n{\n  "HoldReason": "\\"ClusterId\\": 9, \\"ProcId\\": 9",\n  "XClusterId": 8,\n  "ClusterId": 12,\n  "ProcId": 3\n}\n,\n{\n  "ClusterId": 4\n}\n]\n',
      ),
    );
    expect([0, 1].map((i) => [sliceJobNumber(s, i, "ClusterId"), sliceJobNumber(s, i, "ProcId")])).toEqual([[12, 3], [4, undefined]]);
  });
  test("the same ad is told from a changed one by its bytes, wherever it sits", () => {
    const a = sliceJsonAds(enc('[\n{\n  "ClusterId": 1,\n  "JobStatus": 1\n}\n,\n{\n  "ClusterId": 2,\n  "JobStatus": 1\n}\n]\n'));
    const b = sliceJsonAds(enc('[\n{\n  "ClusterId": 2,\n  "JobStatus": 1\n}\n,\n{\n  "ClusterId": 1,\n  "JobStatus": 2\n}\n]\n'));
    expect([sameAd(a, 1, b, 0), sameAd(a, 0, b, 1)]).toEqual([true, false]);
  });
});
