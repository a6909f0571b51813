// The watch's questions and how it reads their answers (src/core/watch.ts;
// docs/status.md#following-spooled-jobs, docs/htcondor.md#what-changed-since).
import { describe, expect, test } from "bun:test";
import { changedSince, leftSince, liveCount, nextSince, operatorJobs, sidecarJobs, timeForged } from "../../src/core/watch.ts";

describe("the constraints", () => {
  test("what changed: either time in the window, neither later than the schedd's time(); jobs that wrote an expression left out", () => {
    expect(changedSince({ oldest: 12, since: 1795000000 })).toBe(
      "ClusterId >= 12 && ((EnteredCurrentStatus >= 1795000000 && EnteredCurrentStatus <= time()) || (InterLinkStateTime >= 1795000000 && InterLinkStateTime <= time()))",
    );
    expect(changedSince({ oldest: 12, since: 5, quiet: [{ cluster: 12, proc: 3 }, { cluster: 14, proc: 0 }] })).toBe(
      "ClusterId >= 12 && ((EnteredCurrentStatus >= 5 && EnteredCurrentStatus <= time()) || (InterLinkStateTime >= 5 && InterLinkStateTime <= time())) && !((ClusterId == 12 && ProcId == 3) || (ClusterId == 14 && ProcId == 0))",
    );
  });
  test("the count and the history search select the caller's jobs (a sidecar's, an operator's), its id quoted as a ClassAd string", () => {
    expect(liveCount({ mine: sidecarJobs('a"b\\c'), oldest: 7 })).toBe(
      'InterLinkSidecarId == "a\\"b\\\\c" && ClusterId >= 7 && JobStatus != 3 && JobStatus != 4',
    );
    expect(leftSince({ mine: sidecarJobs("sc"), oldest: 7, since: 99 })).toBe('InterLinkSidecarId == "sc" && ClusterId >= 7 && EnteredCurrentStatus >= 99');
    expect(liveCount({ mine: operatorJobs("op-1"), oldest: 3 })).toBe('HTCJobOperatorId == "op-1" && ClusterId >= 3 && JobStatus != 3 && JobStatus != 4');
  });
});

describe("nextSince: the next window's start", () => {
  test.each(
    [
      ["no ad: the window stays", [], 200, undefined],
      ["one ad, a short call: a second before its stamp", [{ ServerTime: 1000 }], 200, 999],
      ["the earliest stamp of the answer", [{ ServerTime: 1002 }, { ServerTime: 1000 }, { ServerTime: 1001 }], 200, 999],
      ["a call of 2.5 s: three seconds before", [{ ServerTime: 1000 }], 2500, 997],
      ["a stamp that is no whole number is not a stamp", [{ ServerTime: "/Expr(time())/" }, { ServerTime: 1000.5 }], 100, undefined],
    ] as const,
  )("%s", (_what, ads, ms, want) => {
    expect(nextSince(ads as never, ms)).toBe(want);
  });
});

describe("timeForged: an ad that came back without a time in the window", () => {
  test.each(
    [
      ["a status change in the window", { EnteredCurrentStatus: 1000, ServerTime: 1001 }, false],
      ["a chirped time in the window", { EnteredCurrentStatus: 10, InterLinkStateTime: 1001, ServerTime: 1001 }, false],
      ["an expression (time()), printed unevaluated", { EnteredCurrentStatus: 10, InterLinkStateTime: "/Expr(time())/", ServerTime: 1001 }, true],
      ["an expression as the status time", { EnteredCurrentStatus: "/Expr(time())/", ServerTime: 1001 }, true],
      ["a time after the schedd's stamp", { EnteredCurrentStatus: 10, InterLinkStateTime: 4102444800, ServerTime: 1001 }, true],
      ["a fraction of a second", { EnteredCurrentStatus: 10, InterLinkStateTime: 1000.5, ServerTime: 1001 }, true],
    ] as const,
  )("%s", (_what, ad, want) => {
    expect(timeForged(ad as never, 1000)).toBe(want);
  });
});
