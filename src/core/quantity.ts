/**
 * Kubernetes resource quantities (`500m`, `1.5`, `129e6`, `129M`, `123Mi`, `1Gi`, …), parsed exactly.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
 *
 *   <quantity>        ::= <signedNumber><suffix>
 *   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
 *   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
 *   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
 *   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
 *   <signedNumber>    ::= [+-] <number>
 *   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *
 * Values are kept as reduced fractions of BigInts, so `0.1Gi + 0.2Gi` is exactly `0.3Gi` and
 * rounding up never turns `1Gi` into 1025 MiB through float drift.
 */
import { SidecarError } from "./errors.ts";

/** An exact rational value: `num / den`, with `den > 0` and the fraction reduced. */
export interface Quantity {
  readonly num: bigint;
  readonly den: bigint;
}

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+)|(n|u|m|k|M|G|T|P|E))?$/;

const BINARY: Record<string, bigint> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** Bounds that keep BigInts small; far beyond anything a pod can ask for. */
const MAX_DIGITS = 64;
const MAX_EXPONENT = 64;

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** Builds a reduced quantity from a fraction. */
export function fraction(num: bigint, den = 1n): Quantity {
  if (den === 0n) throw new RangeError("Cannot build a quantity with a zero denominator");
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

/** Parses a quantity; `undefined` when the text is not one. */
export function tryParseQuantity(text: string): Quantity | undefined {
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const [, sign, number = "", binary, exponent, decimal] = m;
  const [intPart = "", fracPart = ""] = number.split(".");
  const digits = (intPart + fracPart).replace(/^0+(?=\d)/, "");
  if (digits.length > MAX_DIGITS) return undefined;
  let num = BigInt(digits || "0");
  let den = 10n ** BigInt(fracPart.length);
  if (sign === "-") num = -num;
  let exp10 = 0;
  if (exponent !== undefined) {
    const e = Number(exponent);
    if (!Number.isSafeInteger(e) || Math.abs(e) > MAX_EXPONENT) return undefined;
    exp10 = e;
  } else if (decimal !== undefined) {
    exp10 = DECIMAL[decimal] ?? 0;
  }
  if (binary !== undefined) num *= 1n << (BINARY[binary] ?? 0n);
  if (exp10 >= 0) num *= 10n ** BigInt(exp10);
  else den *= 10n ** BigInt(-exp10);
  return fraction(num, den);
}

/** Parses a quantity or throws `SidecarError("invalid")` naming the text. */
export function parseQuantity(text: string): Quantity {
  const q = tryParseQuantity(text);
  if (!q) throw new SidecarError("invalid", `${JSON.stringify(text)} is not a Kubernetes quantity`);
  return q;
}

export const ZERO: Quantity = { num: 0n, den: 1n };

export function add(a: Quantity, b: Quantity): Quantity {
  return fraction(a.num * b.den + b.num * a.den, a.den * b.den);
}

export function compare(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const l = a.num * b.den;
  const r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

export function max(a: Quantity, b: Quantity): Quantity {
  return compare(a, b) >= 0 ? a : b;
}

export function isNegative(q: Quantity): boolean {
  return q.num < 0n;
}

export function isInteger(q: Quantity): boolean {
  return q.den === 1n;
}

/** The smallest integer ≥ q. */
export function ceil(q: Quantity): bigint {
  const t = q.num / q.den; // truncates toward zero
  return q.num % q.den !== 0n && q.num > 0n ? t + 1n : t;
}

/** ceil(q / unit) for a positive integer unit. */
function ceilDiv(q: Quantity, unit: bigint): bigint {
  return ceil(fraction(q.num, q.den * unit));
}

/** ceil(a / b) for a positive b, exactly. */
export function ceilRatio(a: Quantity, b: Quantity): bigint {
  if (b.num <= 0n) throw new RangeError("Cannot divide by a non-positive quantity");
  return ceil(fraction(a.num * b.den, a.den * b.num));
}

function safe(n: bigint, what: string): number {
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new SidecarError("invalid", `${what} ${n} is too large`);
  }
  return Number(n);
}

/** Whole CPUs for `request_cpus`: rounded up, at least 1 (`500m` → 1, `1.5` → 2). */
export function toCpus(q: Quantity): number {
  const n = ceil(q);
  return n < 1n ? 1 : safe(n, "CPU count");
}

/** Bytes → MiB, rounded up (`129M` → 124, `1Gi` → 1024). */
export function toMiB(q: Quantity): number {
  return safe(ceilDiv(q, 1n << 20n), "memory (MiB)");
}

/** Bytes → KiB, rounded up. */
export function toKiB(q: Quantity): number {
  return safe(ceilDiv(q, 1n << 10n), "disk (KiB)");
}

/** A quantity as a whole number rounded up (e.g. a GPU count); throws past Number's safe range. */
export function toInteger(q: Quantity): number {
  return safe(ceil(q), "value");
}

/** Exact decimal text for tests and messages: `1.5`, `0.001`; non-terminating fractions as `num/den`. */
export function formatQuantity(q: Quantity): string {
  let den = q.den;
  let twos = 0;
  let fives = 0;
  while (den % 2n === 0n) [den, twos] = [den / 2n, twos + 1];
  while (den % 5n === 0n) [den, fives] = [den / 5n, fives + 1];
  if (den !== 1n) return `${q.num}/${q.den}`;
  const scale = Math.max(twos, fives);
  const scaled = (q.num * 10n ** BigInt(scale)) / q.den;
  const neg = scaled < 0n;
  const digits = (neg ? -scaled : scaled).toString().padStart(scale + 1, "0");
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale);
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}
