// Which job a recorded job id names now (docs/threat-model.md#a-job-id-is-not-an-identity).
import { describe, expect, test } from "bun:test";
import type { JobAd } from "../../src/core/classad.ts";
import { ownedConstraint, type Ownership, ownership, procConstraint, type RecordedJob } from "../../src/core/job-identity.ts";

const SIDECAR = "site-a";
const GID = "peer@h#3.0#1764400000";
const rec: RecordedJob = { cluster: 3, proc: 0, uid: "pod-a", globalJobId: GID, queuedSince: 1764399990 };
const legacy: RecordedJob = { ...rec, globalJobId: undefined };
const ours: JobAd = { ClusterId: 3, ProcId: 0, GlobalJobId: GID, QDate: 1764400000, InterLinkPodUID: "pod-a", InterLinkSidecarId: SIDECAR };
// The schedd's queue started over: another job holds 3.0 now.
const stranger: JobAd = { ClusterId: 3, ProcId: 0, GlobalJobId: "peer@h#3.0#1764500000", QDate: 1764500000, InterLinkPodUID: "x", InterLinkSidecarId: "other" };

describe("ownership of the ad at a recorded id", () => {
  const table: [string, RecordedJob, JobAd, Ownership][] = [
    ["the pod's job", rec, ours, { kind: "ours", rewrote: [] }],
    ["the pod's job that chirped another pod's UID: tampering", rec, { ...ours, InterLinkPodUID: "pod-b" }, { kind: "ours", rewrote: ["InterLinkPodUID"] }],
    ["the pod's job that hid from its sidecar", rec, { ...ours, InterLinkSidecarId: "x" }, { kind: "ours", rewrote: ["InterLinkSidecarId"] }],
    ["the pod's job that rewrote its GlobalJobId but kept the UID: tampering", rec, { ...ours, GlobalJobId: "x" }, {
      kind: "ours",
      rewrote: ["GlobalJobId"],
    }],
    ["another job with the same id (a queue that started over)", rec, stranger, { kind: "foreign", found: stranger.GlobalJobId as string }],
    ["another job of this very sidecar with the same id (a store restored from a backup)", rec, {
      ...stranger,
      InterLinkSidecarId: SIDECAR,
      InterLinkPodUID: "pod-b",
    }, { kind: "foreign", found: stranger.GlobalJobId as string }],
    ["an ad without GlobalJobId is not the recorded job", rec, Object.fromEntries(Object.entries(stranger).filter(([k]) => k !== "GlobalJobId")), {
      kind: "foreign",
      found: undefined,
    }],
    ["a record older than the column: the pod's UID on a job queued since its create proves it, and the identity is learned", legacy, ours, {
      kind: "ours",
      rewrote: [],
      learned: GID,
    }],
    ["a record older than the column: a GlobalJobId not of the schedd's form for this id is not learned", legacy, { ...ours, GlobalJobId: "x#9.0#1" }, {
      kind: "ours",
      rewrote: [],
    }],
    ["a record older than the column: the form without the queue time is learned", legacy, { ...ours, GlobalJobId: "peer@h#3.0" }, {
      kind: "ours",
      rewrote: [],
      learned: "peer@h#3.0",
    }],
    ["a record older than the column: a job queued before its create began is not proved", legacy, { ...ours, QDate: 1764399000 }, {
      kind: "foreign",
      found: GID,
    }],
    ["a record older than the column: a job without the pod's UID is not proved (nothing is removed)", legacy, { ...ours, InterLinkPodUID: "pod-b" }, {
      kind: "foreign",
      found: GID,
    }],
    ["a record older than the column: a stranger", legacy, stranger, { kind: "foreign", found: stranger.GlobalJobId as string }],
  ];
  for (const [name, r, ad, want] of table) test(name, () => expect(ownership(r, ad, SIDECAR)).toEqual(want));
});

describe("the constraint that names a job proved ours (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours)", () => {
  test.each<[string, Parameters<typeof ownedConstraint>[0], string]>([
    ["with the recorded identity", rec, `ClusterId == 3 && ProcId == 0 && (GlobalJobId == "${GID}" || InterLinkPodUID == "pod-a")`],
    ["a record without one: the pod's UID", legacy, `ClusterId == 3 && ProcId == 0 && InterLinkPodUID == "pod-a"`],
    [
      "values are ClassAd strings",
      { ...rec, uid: 'a"b\\', globalJobId: 'g"' },
      `ClusterId == 3 && ProcId == 0 && (GlobalJobId == "g\\"" || InterLinkPodUID == "a\\"b\\\\")`,
    ],
  ])("%s", (_name, r, want) => expect(ownedConstraint(r)).toBe(want));

  test("an HTCJob's proc: its id, the HTCJob's UID and the submit's token", () => {
    expect(procConstraint({ cluster: 7, proc: 2, uid: "u", submitToken: "t" })).toBe(
      'ClusterId == 7 && ProcId == 2 && HTCJobUID == "u" && HTCJobSubmitToken == "t"',
    );
    expect(procConstraint({ cluster: 7, proc: 2, uid: "u" })).toBe('ClusterId == 7 && ProcId == 2 && HTCJobUID == "u"');
  });

  test.each([[-1, 0], [1.5, 0], [1, -2], [Number.NaN, 0]])("%p.%p is not a job id: refused", (cluster, proc) => {
    expect(() => ownedConstraint({ cluster, proc, uid: "u" })).toThrow(/not a job id/);
    expect(() => procConstraint({ cluster, proc, uid: "u" })).toThrow(/not a job id/);
  });
});
