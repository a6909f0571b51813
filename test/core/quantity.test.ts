// docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it (resources are maps of quantity
// strings); docs/pod-to-job.md#resources.
import { describe, expect, test } from "bun:test";
import { SidecarError } from "../../src/core/errors.ts";
import {
  add,
  ceilRatio,
  compare,
  formatQuantity,
  fraction,
  max,
  parseQuantity,
  toCpus,
  toInteger,
  toKiB,
  toMiB,
  tryParseQuantity,
} from "../../src/core/quantity.ts";

describe("parseQuantity: every Kubernetes form, exactly", () => {
  // [text, exact decimal value]
  const cases: [string, string][] = [
    ["0", "0"],
    ["1", "1"],
    ["+1", "1"],
    ["-1", "-1"],
    ["1.5", "1.5"],
    [".5", "0.5"],
    ["1.", "1"],
    ["007", "7"],
    ["500m", "0.5"],
    ["1m", "0.001"],
    ["100u", "0.0001"],
    ["5n", "0.000000005"],
    ["1k", "1000"],
    ["129M", "129000000"],
    ["1G", "1000000000"],
    ["2T", "2000000000000"],
    ["1P", "1000000000000000"],
    ["1E", "1000000000000000000"],
    ["1Ki", "1024"],
    ["123Mi", "128974848"],
    ["1Gi", "1073741824"],
    ["0.5Gi", "536870912"],
    ["0.1Gi", "107374182.4"],
    ["1Ti", "1099511627776"],
    ["1Pi", "1125899906842624"],
    ["1Ei", "1152921504606846976"],
    ["129e6", "129000000"],
    ["129E6", "129000000"],
    ["1e3", "1000"],
    ["1e+3", "1000"],
    ["1e-3", "0.001"],
    ["1.5e2", "150"],
    ["12345678901234567890", "12345678901234567890"],
  ];
  test.each(cases)("%p = %p", (text, value) => {
    expect(formatQuantity(parseQuantity(text))).toBe(value);
  });

  const invalid = ["", " 1", "1 ", "1.2.3", "abc", "1Kb", "1KI", "1mi", "1e", "1E+", "Gi", "--1", "1i", "0x10", "1,5", "1e999", "1 Gi", "∞", "1K"];
  test.each(invalid)("%p is not a quantity", (text) => {
    expect(tryParseQuantity(text)).toBeUndefined();
    let err: unknown;
    try {
      parseQuantity(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SidecarError);
    expect((err as SidecarError).kind).toBe("invalid");
    expect((err as SidecarError).message).toContain("is not a Kubernetes quantity");
  });
});

describe("arithmetic is exact", () => {
  test("0.1Gi + 0.2Gi == 0.3Gi", () => {
    expect(compare(add(parseQuantity("0.1Gi"), parseQuantity("0.2Gi")), parseQuantity("0.3Gi"))).toBe(0);
  });
  test("100m + 200m == 300m (no float drift)", () => {
    expect(formatQuantity(add(parseQuantity("100m"), parseQuantity("200m")))).toBe("0.3");
  });
  test("max and compare", () => {
    expect(formatQuantity(max(parseQuantity("1Gi"), parseQuantity("1G")))).toBe("1073741824");
    expect(compare(parseQuantity("1000m"), parseQuantity("1"))).toBe(0);
    expect(compare(parseQuantity("1k"), parseQuantity("1Ki"))).toBe(-1);
  });
  test("ceilRatio", () => {
    expect(ceilRatio(parseQuantity("1Gi"), parseQuantity("1Mi"))).toBe(1024n);
    expect(ceilRatio(parseQuantity("1G"), parseQuantity("1Mi"))).toBe(954n);
    expect(ceilRatio(fraction(1n, 3n), fraction(1n))).toBe(1n);
  });
});

describe("helpers round up", () => {
  // [quantity, cpus]
  const cpus: [string, number][] = [
    ["0", 1],
    ["1m", 1],
    ["500m", 1],
    ["1", 1],
    ["1001m", 2],
    ["1.5", 2],
    ["2", 2],
    ["2.000000001", 3],
    ["64", 64],
  ];
  test.each(cpus)("cpu %p → %p CPUs", (q, n) => expect(toCpus(parseQuantity(q))).toBe(n));

  const mib: [string, number][] = [
    ["1", 1],
    ["1Mi", 1],
    ["1048577", 2],
    ["129M", 124],
    ["129e6", 124],
    ["123Mi", 123],
    ["1Gi", 1024],
    ["0.5Gi", 512],
    ["1G", 954],
    ["0", 0],
  ];
  test.each(mib)("memory %p → %p MiB", (q, n) => expect(toMiB(parseQuantity(q))).toBe(n));

  const kib: [string, number][] = [
    ["1", 1],
    ["1Ki", 1],
    ["1025", 2],
    ["1Gi", 1048576],
    ["10G", 9765625],
    ["1.5Mi", 1536],
  ];
  test.each(kib)("disk %p → %p KiB", (q, n) => expect(toKiB(parseQuantity(q))).toBe(n));

  test("toInteger rounds up, and refuses values past Number's safe range", () => {
    expect(toInteger(parseQuantity("2"))).toBe(2);
    expect(toInteger(parseQuantity("1500m"))).toBe(2);
    expect(() => toInteger(parseQuantity("1e30"))).toThrow(SidecarError);
    expect(() => toMiB(parseQuantity("1e40"))).toThrow("too large");
  });
});
