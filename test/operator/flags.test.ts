// The operator's own flags (src/operator/main.ts parseOperatorArgs; docs/operator.md#running-it).
import { describe, expect, test } from "bun:test";
import { UsageError } from "../../src/flags.ts";
import { parseOperatorArgs } from "../../src/operator/main.ts";

const op = (args: string[]) => {
  const r = parseOperatorArgs(args);
  if (r === "help") throw new Error("help");
  return r.op;
};

describe("operator flags", () => {
  test("--lease-duration: whole seconds, at least 3; absent means client-go's 15", () => {
    expect(op([]).leaseDurationSeconds).toBeUndefined();
    expect(op(["--lease-duration", "6"]).leaseDurationSeconds).toBe(6);
    expect(op(["--lease-duration=3"]).leaseDurationSeconds).toBe(3);
    expect(op(["--lease-duration", "86400"]).leaseDurationSeconds).toBe(86_400);
    expect(op(["--lease-duration", "6", "--lease-namespace", "ops"])).toMatchObject({ leaseDurationSeconds: 6, leaseNamespace: "ops" });
  });

  test.each(["2", "0", "-5", "1.5", "15s", "abc", "86401", "1e3", "6\n--kubeconfig=/x"])("--lease-duration %p is refused in one line", (v) => {
    let err: unknown;
    try {
      parseOperatorArgs(["--lease-duration", v]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const message = (err as Error).message;
    expect(message).toStartWith("--lease-duration: whole seconds from 3 to 86400");
    expect(message).not.toContain("\n");
  });
});
