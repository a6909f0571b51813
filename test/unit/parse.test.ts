// What the condor tools print, parsed strictly (spec: htcondor-cli §1.1, §2.2, §3, §4.1).
import { describe, expect, test } from "bun:test";
import { type RmOutcome, adNumber, adString, classAdString, firstErrorLine, parseJsonAds, parseRmLine, parseTerseSubmit } from "../../src/condor/parse.ts";

describe("parseTerseSubmit (spec: htcondor-cli §1.1)", () => {
  test("one job", () => expect(parseTerseSubmit("123.0 - 123.0\n")).toEqual({ cluster: 123, proc: 0 }));
  for (const bad of ["", "Submitting job(s).\n1 job(s) submitted to cluster 5.\n", "4.0 - 4.1\n", "1.0 - 1.0\n2.0 - 2.0\n"]) {
    test(`refuses ${JSON.stringify(bad)}`, () => expect(() => parseTerseSubmit(bad)).toThrow());
  }
});

describe("parseJsonAds (spec: htcondor-cli §2.2, §3)", () => {
  test("condor_q with no match prints nothing", () => expect(parseJsonAds("")).toEqual([]));
  test("condor_history with no match prints [ and ]", () => expect(parseJsonAds("[\n]\n")).toEqual([]));
  test("the writer's shape: ads separated by a lone comma line, expressions as /Expr()/", () => {
    const out = '[\n{\n  "ClusterId": 1,\n  "JobStatus": 2,\n  "RequestDisk": "\\/Expr(MAX({ 1024 }) * 1024)\\/"\n}\n,\n{\n  "ClusterId": 2,\n  "JobStatus": 1\n}\n]\n';
    const ads = parseJsonAds(out);
    expect(ads.length).toBe(2);
    expect(adNumber(ads[0]!, "JobStatus")).toBe(2);
    expect(adString(ads[0]!, "RequestDisk")).toBeUndefined();
    expect(adNumber(ads[0]!, "RequestDisk")).toBeUndefined();
  });
});

describe("parseRmLine (spec: htcondor-cli §4.1, observed)", () => {
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

test("classAdString escapes quotes and backslashes", () => {
  expect(classAdString('a"b\\c')).toBe('"a\\"b\\\\c"');
});
