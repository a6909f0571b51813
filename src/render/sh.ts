/**
 * `sh`: the only way text reaches a bash script.
 *
 * Every interpolation becomes one bash word in single quotes; an array becomes several words;
 * numbers are written as digits; `null`/`undefined` throw instead of silently vanishing.
 * {@link raw} is the only way to splice text unquoted, and is meant for constant code fragments
 * written in this repository, never for data that came with a pod.
 *
 * @example
 * sh`exec ${"python3"} ${["-c", 'print("hi")']}` // → exec 'python3' '-c' 'print("hi")'
 */

const RAW = Symbol("sh.raw");

/** Text spliced into a script unquoted (constant code, never user data). */
export interface Raw {
  readonly [RAW]: string;
}

export type ShWord = string | number | Raw;
export type ShValue = ShWord | readonly ShWord[];

/** Marks constant code so {@link sh} splices it as is. */
export function raw(code: string): Raw {
  return { [RAW]: code };
}

function isRaw(v: unknown): v is Raw {
  return typeof v === "object" && v !== null && RAW in v;
}

/**
 * One bash word for any string: `'…'`, with each `'` written as `'\''`.
 * Newlines are kept (they are literal inside single quotes); NUL cannot exist in a bash word and throws.
 */
export function shQuote(s: string): string {
  if (typeof s !== "string") throw new TypeError(`shQuote expects a string, got ${typeof s}`);
  if (s.includes("\0")) throw new TypeError(`Cannot quote for bash: the value contains a NUL byte: ${JSON.stringify(s)}`);
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function word(v: unknown, at: number): string {
  if (v === null || v === undefined) {
    throw new TypeError(`sh: interpolation #${at} is ${v}`);
  }
  if (isRaw(v)) return v[RAW];
  if (typeof v === "string") return shQuote(v);
  if (typeof v === "number") {
    const s = String(v);
    if (!Number.isFinite(v) || !/^-?\d+(\.\d+)?$/.test(s)) {
      throw new TypeError(`sh: interpolation #${at} is not a plain number: ${s}`);
    }
    return s;
  }
  throw new TypeError(`sh: interpolation #${at} has unsupported type ${typeof v}`);
}

/** Renders a template, quoting every interpolation (see the module comment). */
export function sh(strings: TemplateStringsArray, ...values: readonly ShValue[]): string {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += Array.isArray(v) ? (v as readonly unknown[]).map((w) => word(w, i)).join(" ") : word(v, i);
    out += strings[i + 1] ?? "";
  });
  return out;
}
