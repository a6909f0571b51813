import { describe, expect, test } from "bun:test";
import { raw, sh, shQuote } from "../../src/render/sh.ts";
import { scaleDefaultTimeout } from "../helpers/sidecar.ts";

// Each case runs bash: a guard against a hang, not bun's 5 s.
await scaleDefaultTimeout(30_000);

/** What bash makes of words: runs `printf '%s\0' <words>` and splits on NUL. */
function bashWords(script: string): string[] {
  const r = Bun.spawnSync(["/bin/bash", "-c", `printf '%s\\0' ${script}`], { env: {} });
  expect(r.exitCode).toBe(0);
  const out = r.stdout.toString();
  return out.split("\0").slice(0, -1);
}

const hostile: [string, string][] = [
  ["plain", "hello"],
  ["empty", ""],
  ["space", "a b  c"],
  ["single quote", "it's"],
  ["only quotes", "'''"],
  ["double quote", 'say "hi"'],
  ["dollar", "$HOME ${PATH} $1 $@ $$"],
  ["backticks", "`touch /tmp/sh-test-marker`"],
  ["command substitution", "$(touch /tmp/sh-test-marker)"],
  ["backslash", "a\\b\\\\c\\"],
  ["newline", "line1\nline2\n"],
  ["carriage return and tab", "a\r\tb"],
  ["unicode", "é ☃ 日本 🙂"],
  ["leading dash", "-rf"],
  ["glob", "* ? [a-z] ~"],
  ["operators", "; && || | > < & ( ) { } !"],
  ["history and comments", "!! # not a comment"],
  ["mixed", `'"$ \`$(touch marker)\` \n é`],
];

describe("shQuote", () => {
  test.each(hostile)("%s round-trips through bash", (_name, value) => {
    expect(bashWords(shQuote(value))).toEqual([value]);
  });

  test("uses single quotes and '\\'' for a quote", () => {
    expect(shQuote("it's")).toBe(`'it'\\''s'`);
    expect(shQuote("")).toBe("''");
    expect(shQuote("a b")).toBe("'a b'");
  });

  test("refuses NUL", () => {
    expect(() => shQuote("a\0b")).toThrow(/NUL/);
  });
});

describe("sh", () => {
  test("quotes each interpolation as one word", () => {
    expect(sh`exec ${"python3"} ${["-c", 'print("hi")']}`).toBe(`exec 'python3' '-c' 'print("hi")'`);
  });

  test("every hostile value stays one word, arrays stay several", () => {
    const values = hostile.map(([, v]) => v);
    expect(bashWords(sh`${values}`)).toEqual(values);
    expect(bashWords(sh`${values[0]!} ${values[5]!}`)).toEqual([values[0]!, values[5]!]);
  });

  test("an empty array is no word at all", () => {
    expect(sh`cmd ${[]}`).toBe("cmd ");
    expect(bashWords(sh`${[]} x`)).toEqual(["x"]);
  });

  test("numbers are digits", () => {
    expect(sh`sleep ${5} ${0} ${-3} ${1.5}`).toBe("sleep 5 0 -3 1.5");
  });

  test.each([NaN, Infinity, 1e21])("refuses the number %p", (n) => {
    expect(() => sh`x ${n}`).toThrow(TypeError);
  });

  test.each([null, undefined])("refuses %p", (v) => {
    expect(() => sh`x ${v as unknown as string}`).toThrow(/interpolation #0/);
    expect(() => sh`x ${["a", v as unknown as string]}`).toThrow(TypeError);
  });

  test("refuses other types", () => {
    expect(() => sh`x ${true as unknown as string}`).toThrow(TypeError);
    expect(() => sh`x ${{} as unknown as string}`).toThrow(TypeError);
    expect(() => sh`x ${[["nested"]] as unknown as string[]}`).toThrow(TypeError);
  });

  test("refuses NUL in a value", () => {
    expect(() => sh`x ${"a\0"}`).toThrow(/NUL/);
  });

  test("raw() is spliced as is, and only raw()", () => {
    expect(sh`${raw('"$HOME"')}/${"x y"}`).toBe(`"$HOME"/'x y'`);
    expect(sh`${["a", raw("$b")]}`).toBe(`'a' $b`);
    expect(sh`${"$b"}`).toBe(`'$b'`);
  });

  test("no marker is ever created by running quoted values", () => {
    const dir = Bun.spawnSync(["mktemp", "-d"]).stdout.toString().trim();
    const values = [`$(touch ${dir}/m1)`, `\`touch ${dir}/m2\``, `'; touch ${dir}/m3; '`, `"; touch ${dir}/m4; "`];
    const r = Bun.spawnSync(["/bin/bash", "-c", sh`printf '%s\n' ${values} >/dev/null`], { cwd: dir });
    expect(r.exitCode).toBe(0);
    const ls = Bun.spawnSync(["ls", "-A", dir]).stdout.toString();
    Bun.spawnSync(["rm", "-rf", "--", dir]);
    expect(ls).toBe("");
  });
});
