// The header-value rule for probes and hooks (docs/pod-to-job.md#probes-and-hooks): HTTP's
// own (RFC 9110 §5.5), not the one-line rule of error reasons.
import { describe, expect, test } from "bun:test";
import { headerValueProblem } from "../../src/core/http-header.ts";
import { planJob } from "../../src/core/plan.ts";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { testPlanConfig } from "../fixtures/config.ts";
import { dataEntry, expectInvalid, makeCreateRequest } from "../fixtures/pods.ts";

describe("headerValueProblem", () => {
  test.each([
    ["an ordinary value", "Bearer abc"],
    ["an empty value", ""],
    ["HTAB inside", "a\tb"],
    ["only HTAB", "\t"],
    ["NEL (U+0085)", "a\u0085b"],
    ["LINE SEPARATOR (U+2028)", "a\u2028b"],
    ["PARAGRAPH SEPARATOR (U+2029)", "a\u2029b"],
    ["other C1 controls", "\u0080\u009f"],
    ["non-ASCII text and emoji", "é ✓ 😀"],
    ["quotes and shell syntax", `'"$(x)\`;`],
  ])("sends %s", (_what, value) => {
    expect(headerValueProblem(value)).toBeUndefined();
  });

  test.each([
    ["NUL", "a\0b", "U+0000"],
    ["CR", "a\rb", "U+000D"],
    ["LF", "a\nb", "U+000A"],
    ["CR LF (header injection)", "x\r\nX-Evil: 1", "U+000D"],
    ["SOH", "\x01", "U+0001"],
    ["BS", "\b", "U+0008"],
    ["VT", "\v", "U+000B"],
    ["ESC", "\x1b[31m", "U+001B"],
    ["US", "\x1f", "U+001F"],
    ["DEL", "a\x7f", "U+007F"],
  ])("refuses %s", (_what, value, cp) => {
    expect(headerValueProblem(value)).toBe(`must not contain ${cp} (HTTP allows no control character in a header value but HTAB)`);
  });

  test("refuses a lone surrogate, which has no UTF-8 form", () => {
    expect(headerValueProblem("a\ud800b")).toBe("is not valid Unicode (it holds a lone surrogate)");
  });
});

describe("planJob applies the rule to probe and hook header values (docs/pod-to-job.md#probes-and-hooks)", () => {
  const withHeader = (value: string) =>
    makeCreateRequest({
      spec: {
        containers: [{
          name: "main",
          image: "busybox",
          readinessProbe: { httpGet: { port: 80, httpHeaders: [{ name: "X-Probe", value }] } },
          lifecycle: { postStart: { httpGet: { port: 80, httpHeaders: [{ name: "X-Hook", value }] } } },
        }],
      },
      container: [dataEntry("main", {})],
    });
  const plan = (value: string) => planJob(parseCreateRequest(withHeader(value)), testPlanConfig());

  test.each(["", "\t", "a\tb", "a\u0085b", "a\u2028b", "a\u2029b"])("keeps %j as it is", (value) => {
    const c = plan(value).containers[0]!;
    expect(c.readinessProbe?.handler).toMatchObject({ kind: "httpGet", headers: [["X-Probe", value]] });
    expect(c.postStart).toMatchObject({ kind: "httpGet", headers: [["X-Hook", value]] });
  });

  // NUL never gets this far: the request parser refuses it in any string.
  test.each([["a\0b", "must not contain NUL"], ["a\rb", "must not contain U+000D"], ["\x1b", "must not contain U+001B"], ["\x7f", "must not contain U+007F"]])(
    "refuses %j with a 400 naming the field",
    (value, why) => {
      const err = expectInvalid(() => plan(value), "readinessProbe.httpGet.httpHeaders[0].value");
      expect(err.message).toContain(why);
      expect(err.message).not.toMatch(/[\p{Cc}\p{Zl}\p{Zp}]/u);
    },
  );
});
