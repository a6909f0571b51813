// Small ClassAd expression language: tokenizer, parser, evaluator, unparser,
// and the writers used by condor_q / condor_history (-json, -long, -af).
// docs/htcondor.md#conventions-of-every-tool (constraint syntax), docs/htcondor.md#json-output (JSON writer),
// docs/htcondor.md#autoformat-output (-af)

export type Val =
  | { t: "u" }
  | { t: "e" }
  | { t: "i"; v: number }
  | { t: "r"; v: number }
  | { t: "s"; v: string }
  | { t: "b"; v: boolean }
  | { t: "l"; v: Val[] };

export type Node =
  | { k: "lit"; v: Val; src?: string }
  | { k: "attr"; scope: "" | "my" | "target"; name: string }
  | { k: "un"; op: string; a: Node }
  | { k: "bin"; op: string; a: Node; b: Node }
  | { k: "cond"; c: Node; a: Node; b: Node }
  | { k: "elvis"; a: Node; b: Node }
  | { k: "call"; name: string; args: Node[] }
  | { k: "list"; items: Node[] }
  | { k: "idx"; a: Node; i: Node }
  | { k: "paren"; a: Node };

export const UNDEF: Val = { t: "u" };
export const ERR: Val = { t: "e" };
export const int = (v: number): Val => ({ t: "i", v: Math.trunc(v) });
export const real = (v: number): Val => ({ t: "r", v });
export const str = (v: string): Val => ({ t: "s", v });
export const bool = (v: boolean): Val => ({ t: "b", v });

// ---------------------------------------------------------------- tokenizer
type Tok = { k: "num"; v: Val; src: string } | { k: "str"; v: string } | { k: "id"; v: string } | { k: "op"; v: string } | { k: "end" };

const OPS = [
  "=?=",
  "=!=",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "<<",
  ">>",
  "<",
  ">",
  "+",
  "-",
  "*",
  "/",
  "%",
  "!",
  "(",
  ")",
  "{",
  "}",
  "[",
  "]",
  ",",
  ".",
  "?",
  ":",
  ";",
  "=",
  "&",
  "|",
  "^",
  "~",
];

export class ParseError extends Error {}

function tokenize(src: string, oldEscapes: boolean): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if ((c >= "0" && c <= "9") || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^(?:0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)/.exec(src.slice(i))!;
      const t = m[0];
      i += t.length;
      if (/^0[xX]/.test(t)) out.push({ k: "num", v: int(parseInt(t, 16)), src: t });
      else if (/[.eE]/.test(t)) out.push({ k: "num", v: real(parseFloat(t)), src: t });
      else out.push({ k: "num", v: int(parseInt(t, 10)), src: t });
      continue;
    }
    if (c === '"') {
      let s = "";
      i++;
      let closed = false;
      while (i < n) {
        const d = src[i]!;
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === "\\" && i + 1 < n) {
          const e = src[i + 1]!;
          if (oldEscapes) {
            if (e === '"') {
              s += '"';
              i += 2;
              continue;
            }
            s += d;
            i++;
            continue;
          }
          i += 2;
          switch (e) {
            case "n":
              s += "\n";
              break;
            case "t":
              s += "\t";
              break;
            case "r":
              s += "\r";
              break;
            case "b":
              s += "\b";
              break;
            case "f":
              s += "\f";
              break;
            case "\\":
              s += "\\";
              break;
            case '"':
              s += '"';
              break;
            case "'":
              s += "'";
              break;
            case "/":
              s += "/";
              break;
            default:
              s += e;
          }
          continue;
        }
        s += d;
        i++;
      }
      if (!closed) throw new ParseError("unterminated string");
      out.push({ k: "str", v: s });
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      out.push({ k: "id", v: m[0] });
      i += m[0].length;
      continue;
    }
    if (c === "'") {
      // quoted attribute name 'foo bar'
      const j = src.indexOf("'", i + 1);
      if (j < 0) throw new ParseError("unterminated quoted name");
      out.push({ k: "id", v: src.slice(i + 1, j) });
      i = j + 1;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ParseError(`bad character ${c}`);
    out.push({ k: "op", v: op });
    i += op.length;
  }
  out.push({ k: "end" });
  return out;
}

// ---------------------------------------------------------------- parser
class Parser {
  p = 0;
  constructor(private toks: Tok[]) {}
  peek(): Tok {
    return this.toks[this.p]!;
  }
  isOp(v: string): boolean {
    const t = this.peek();
    return t.k === "op" && t.v === v;
  }
  isKw(v: string): boolean {
    const t = this.peek();
    return t.k === "id" && t.v.toLowerCase() === v;
  }
  eat(v: string): void {
    if (!this.isOp(v)) throw new ParseError(`expected ${v}`);
    this.p++;
  }
  expr(): Node {
    const c = this.or();
    if (this.isOp("?")) {
      this.p++;
      if (this.isOp(":")) {
        this.p++;
        return { k: "elvis", a: c, b: this.expr() };
      }
      const a = this.expr();
      this.eat(":");
      const b = this.expr();
      return { k: "cond", c, a, b };
    }
    return c;
  }
  binLevel(ops: string[], next: () => Node, kws: string[] = []): Node {
    let a = next();
    for (;;) {
      const t = this.peek();
      let op: string | undefined;
      if (t.k === "op" && ops.includes(t.v)) op = t.v;
      else if (t.k === "id" && kws.includes(t.v.toLowerCase())) op = t.v.toLowerCase();
      if (!op) return a;
      this.p++;
      const b = next();
      a = { k: "bin", op, a, b };
    }
  }
  or(): Node {
    return this.binLevel(["||"], () => this.and());
  }
  and(): Node {
    return this.binLevel(["&&"], () => this.bor());
  }
  bor(): Node {
    return this.binLevel(["|"], () => this.bxor());
  }
  bxor(): Node {
    return this.binLevel(["^"], () => this.band());
  }
  band(): Node {
    return this.binLevel(["&"], () => this.eq());
  }
  eq(): Node {
    return this.binLevel(["==", "!=", "=?=", "=!="], () => this.rel(), ["is", "isnt"]);
  }
  rel(): Node {
    return this.binLevel(["<", "<=", ">", ">="], () => this.shift());
  }
  shift(): Node {
    return this.binLevel(["<<", ">>"], () => this.add());
  }
  add(): Node {
    return this.binLevel(["+", "-"], () => this.mul());
  }
  mul(): Node {
    return this.binLevel(["*", "/", "%"], () => this.unary());
  }
  unary(): Node {
    const t = this.peek();
    if (t.k === "op" && (t.v === "!" || t.v === "-" || t.v === "+" || t.v === "~")) {
      this.p++;
      const a = this.unary();
      if (t.v === "-" && a.k === "lit" && (a.v.t === "i" || a.v.t === "r")) {
        return { k: "lit", v: { t: a.v.t, v: -a.v.v } as Val, src: a.src !== undefined ? "-" + a.src : undefined };
      }
      return { k: "un", op: t.v, a };
    }
    return this.postfix();
  }
  postfix(): Node {
    let a = this.primary();
    for (;;) {
      if (this.isOp("[")) {
        this.p++;
        const i = this.expr();
        this.eat("]");
        a = { k: "idx", a, i };
      } else if (this.isOp(".") && a.k === "attr") {
        // nested selection a.b: flatten into the attribute name (rare)
        this.p++;
        const t = this.peek();
        if (t.k !== "id") throw new ParseError("expected name");
        this.p++;
        a = { k: "attr", scope: a.scope, name: a.name + "." + t.v };
      } else return a;
    }
  }
  primary(): Node {
    const t = this.peek();
    if (t.k === "num") {
      this.p++;
      return { k: "lit", v: t.v, src: t.src };
    }
    if (t.k === "str") {
      this.p++;
      return { k: "lit", v: str(t.v) };
    }
    if (t.k === "op" && t.v === "(") {
      this.p++;
      const a = this.expr();
      this.eat(")");
      return { k: "paren", a };
    }
    if (t.k === "op" && t.v === "{") {
      this.p++;
      const items: Node[] = [];
      if (!this.isOp("}")) {
        for (;;) {
          items.push(this.expr());
          if (this.isOp(",")) {
            this.p++;
            continue;
          }
          break;
        }
      }
      this.eat("}");
      return { k: "list", items };
    }
    if (t.k === "id") {
      this.p++;
      const lw = t.v.toLowerCase();
      if (lw === "true") return { k: "lit", v: bool(true) };
      if (lw === "false") return { k: "lit", v: bool(false) };
      if (lw === "undefined") return { k: "lit", v: UNDEF };
      if (lw === "error") return { k: "lit", v: ERR };
      if (this.isOp("(")) {
        this.p++;
        const args: Node[] = [];
        if (!this.isOp(")")) {
          for (;;) {
            args.push(this.expr());
            if (this.isOp(",")) {
              this.p++;
              continue;
            }
            break;
          }
        }
        this.eat(")");
        return { k: "call", name: t.v, args };
      }
      if ((lw === "my" || lw === "target") && this.isOp(".")) {
        this.p++;
        const u = this.peek();
        if (u.k !== "id") throw new ParseError("expected attribute name");
        this.p++;
        return { k: "attr", scope: lw as "my" | "target", name: u.v };
      }
      return { k: "attr", scope: "", name: t.v };
    }
    throw new ParseError("unexpected token");
  }
}

const cache = new Map<string, Node>();
export function parse(src: string, oldEscapes = false): Node {
  const key = (oldEscapes ? "o" : "n") + src;
  const c = cache.get(key);
  if (c) return c;
  const toks = tokenize(src, oldEscapes);
  if (toks.length === 1) throw new ParseError("empty expression");
  const p = new Parser(toks);
  const n = p.expr();
  if (p.peek().k !== "end") throw new ParseError("trailing garbage");
  if (cache.size > 20000) cache.clear();
  cache.set(key, n);
  return n;
}
export function tryParse(src: string, oldEscapes = false): Node | null {
  try {
    return parse(src, oldEscapes);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- ads
export class Ad {
  // An ad read from the queue keeps the object it came as until it is changed or asked for a name
  // spelled otherwise: a tool reads every ad of the queue to test a constraint, and building the
  // case-insensitive index of each was most of a condor_q's time at 20,000 jobs.
  private raw: Record<string, string> | null = null;
  private index: Map<string, [string, string]> | null = null; // lower -> [Name, text]
  private get m(): Map<string, [string, string]> {
    if (!this.index) {
      this.index = new Map();
      if (this.raw) { for (const k in this.raw) this.index.set(k.toLowerCase(), [k, this.raw[k]!]); }
    }
    return this.index;
  }
  static fromObject(o: Record<string, string>): Ad {
    const a = new Ad();
    a.raw = o;
    return a;
  }
  toObject(): Record<string, string> {
    if (this.raw) return { ...this.raw };
    const o: Record<string, string> = {};
    for (const [n, t] of this.m.values()) o[n] = t;
    return o;
  }
  get(name: string): string | undefined {
    if (this.raw && Object.hasOwn(this.raw, name)) return this.raw[name];
    return this.m.get(name.toLowerCase())?.[1];
  }
  has(name: string): boolean {
    if (this.raw && Object.hasOwn(this.raw, name)) return true;
    return this.m.has(name.toLowerCase());
  }
  name(name: string): string | undefined {
    if (this.raw && Object.hasOwn(this.raw, name)) return name;
    return this.m.get(name.toLowerCase())?.[0];
  }
  /** set the ClassAd text of an attribute (keeps the original spelling if present) */
  setText(name: string, text: string): void {
    const m = this.m;
    this.raw = null;
    const lw = name.toLowerCase();
    const old = m.get(lw);
    m.set(lw, [old ? old[0] : name, text]);
  }
  set(name: string, v: Val | string | number | boolean | null): void {
    this.setText(name, literalText(v));
  }
  delete(name: string): void {
    const m = this.m;
    this.raw = null;
    m.delete(name.toLowerCase());
  }
  names(): string[] {
    if (this.raw) return Object.keys(this.raw);
    return [...this.m.values()].map((x) => x[0]);
  }
  /** evaluate an attribute of this ad */
  eval(name: string, target?: Ad): Val {
    return evalAttr(this, target, name, 0);
  }
  str(name: string): string | undefined {
    const v = this.eval(name);
    return v.t === "s" ? v.v : undefined;
  }
  num(name: string): number | undefined {
    const v = this.eval(name);
    return v.t === "i" || v.t === "r" ? v.v : undefined;
  }
  bool(name: string): boolean | undefined {
    const v = this.eval(name);
    return v.t === "b" ? v.v : undefined;
  }
  clone(): Ad {
    return Ad.fromObject(this.toObject());
  }
}

export function literalText(v: Val | string | number | boolean | null): string {
  if (v === null) return "undefined";
  if (typeof v === "string") return quoteString(v);
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : fmtRealLong(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  return unparseVal(v);
}

// ---------------------------------------------------------------- evaluation
type Ctx = { my: Ad; target?: Ad; depth: number };

function evalAttr(my: Ad, target: Ad | undefined, name: string, depth: number): Val {
  const text = my.get(name);
  if (text === undefined) return UNDEF;
  if (depth > 40) return ERR;
  const n = tryParse(text);
  if (!n) return ERR;
  return ev(n, { my, target, depth: depth + 1 });
}

export function evaluate(n: Node, my: Ad, target?: Ad): Val {
  return ev(n, { my, target, depth: 0 });
}
export function evalExpr(src: string, my: Ad, target?: Ad): Val {
  return evaluate(parse(src), my, target);
}

export function isTrue(v: Val): boolean {
  return (v.t === "b" && v.v) || ((v.t === "i" || v.t === "r") && v.v !== 0);
}

function toBool(v: Val): Val {
  if (v.t === "b" || v.t === "u" || v.t === "e") return v;
  if (v.t === "i" || v.t === "r") return bool(v.v !== 0);
  return ERR;
}

function num(v: Val): number | null {
  if (v.t === "i" || v.t === "r") return v.v;
  if (v.t === "b") return v.v ? 1 : 0;
  return null;
}

function identical(a: Val, b: Val): boolean {
  if (a.t !== b.t) {
    if ((a.t === "i" || a.t === "r") && (b.t === "i" || b.t === "r")) return a.v === b.v;
    return false;
  }
  switch (a.t) {
    case "u":
    case "e":
      return true;
    case "l": {
      const bl = (b as { v: Val[] }).v;
      return a.v.length === bl.length && a.v.every((x, i) => identical(x, bl[i]!));
    }
    default:
      return a.v === (b as { v: unknown }).v;
  }
}

function compare(op: string, a: Val, b: Val): Val {
  if (a.t === "e" || b.t === "e") return ERR;
  if (a.t === "u" || b.t === "u") return UNDEF;
  if (a.t === "s" && b.t === "s") {
    const x = a.v.toLowerCase(), y = b.v.toLowerCase();
    const c = x < y ? -1 : x > y ? 1 : 0;
    return bool(cmpRes(op, c));
  }
  if (a.t === "b" && b.t === "b" && (op === "==" || op === "!=")) return bool(op === "==" ? a.v === b.v : a.v !== b.v);
  const x = num(a), y = num(b);
  if (x === null || y === null || a.t === "s" || b.t === "s" || a.t === "l" || b.t === "l") return ERR;
  return bool(cmpRes(op, x < y ? -1 : x > y ? 1 : 0));
}
function cmpRes(op: string, c: number): boolean {
  switch (op) {
    case "==":
      return c === 0;
    case "!=":
      return c !== 0;
    case "<":
      return c < 0;
    case "<=":
      return c <= 0;
    case ">":
      return c > 0;
    default:
      return c >= 0;
  }
}

function arith(op: string, a: Val, b: Val): Val {
  if (a.t === "e" || b.t === "e") return ERR;
  if (a.t === "u" || b.t === "u") return UNDEF;
  if (!((a.t === "i" || a.t === "r") && (b.t === "i" || b.t === "r"))) return ERR;
  const isInt = a.t === "i" && b.t === "i";
  const x = a.v, y = b.v;
  let r: number;
  switch (op) {
    case "+":
      r = x + y;
      break;
    case "-":
      r = x - y;
      break;
    case "*":
      r = x * y;
      break;
    case "/":
      if (y === 0) return isInt ? ERR : real(x / y);
      r = isInt ? Math.trunc(x / y) : x / y;
      break;
    case "%":
      if (y === 0) return ERR;
      r = isInt ? x % y : x % y;
      break;
    default:
      return ERR;
  }
  return isInt ? int(r) : real(r);
}

function ev(n: Node, c: Ctx): Val {
  switch (n.k) {
    case "lit":
      return n.v;
    case "paren":
      return ev(n.a, c);
    case "attr": {
      if (n.scope === "my") return evalAttr(c.my, c.target, n.name, c.depth);
      if (n.scope === "target") return c.target ? evalAttr(c.target, c.my, n.name, c.depth) : UNDEF;
      if (c.my.has(n.name)) return evalAttr(c.my, c.target, n.name, c.depth);
      if (c.target && c.target.has(n.name)) return evalAttr(c.target, c.my, n.name, c.depth);
      return UNDEF;
    }
    case "list":
      return { t: "l", v: n.items.map((x) => ev(x, c)) };
    case "idx": {
      const a = ev(n.a, c), i = ev(n.i, c);
      if (a.t === "u" || i.t === "u") return UNDEF;
      if (a.t !== "l" || i.t !== "i") return ERR;
      return a.v[i.v] ?? ERR;
    }
    case "un": {
      const a = ev(n.a, c);
      if (n.op === "!") {
        const b = toBool(a);
        return b.t === "b" ? bool(!b.v) : b;
      }
      if (n.op === "-") {
        if (a.t === "i") return int(-a.v);
        if (a.t === "r") return real(-a.v);
        return a.t === "u" ? UNDEF : ERR;
      }
      if (n.op === "+") return a.t === "i" || a.t === "r" || a.t === "u" ? a : ERR;
      if (n.op === "~") return a.t === "i" ? int(~a.v) : a.t === "u" ? UNDEF : ERR;
      return ERR;
    }
    case "cond": {
      const cv = toBool(ev(n.c, c));
      if (cv.t === "b") return cv.v ? ev(n.a, c) : ev(n.b, c);
      return cv;
    }
    case "elvis": {
      const a = ev(n.a, c);
      return a.t === "u" ? ev(n.b, c) : a;
    }
    case "bin": {
      const op = n.op;
      if (op === "&&" || op === "||") {
        const a = toBool(ev(n.a, c));
        if (a.t === "e") return ERR;
        if (a.t === "b") {
          if (op === "&&" && !a.v) return bool(false);
          if (op === "||" && a.v) return bool(true);
        }
        const b = toBool(ev(n.b, c));
        if (b.t === "e") return ERR;
        if (a.t === "u") {
          if (b.t === "b" && (op === "&&" ? !b.v : b.v)) return b;
          return UNDEF;
        }
        return b;
      }
      const a = ev(n.a, c), b = ev(n.b, c);
      switch (op) {
        case "=?=":
        case "is":
          return bool(identical(a, b) && (a.t !== "s" || a.v === (b as { v: string }).v));
        case "=!=":
        case "isnt":
          return bool(!(identical(a, b) && (a.t !== "s" || a.v === (b as { v: string }).v)));
        case "==":
        case "!=":
        case "<":
        case "<=":
        case ">":
        case ">=":
          return compare(op, a, b);
        case "+":
        case "-":
        case "*":
        case "/":
        case "%":
          return arith(op, a, b);
        case "&":
        case "|":
        case "^":
        case "<<":
        case ">>": {
          if (a.t === "u" || b.t === "u") return UNDEF;
          if (a.t !== "i" || b.t !== "i") return ERR;
          const r = op === "&" ? a.v & b.v : op === "|" ? a.v | b.v : op === "^" ? a.v ^ b.v : op === "<<" ? a.v << b.v : a.v >> b.v;
          return int(r);
        }
      }
      return ERR;
    }
    case "call":
      return callFn(n.name.toLowerCase(), n.args, c);
  }
}

function valToString(v: Val): string | null {
  switch (v.t) {
    case "s":
      return v.v;
    case "i":
      return String(v.v);
    case "r":
      return fmtRealLong(v.v);
    case "b":
      return v.v ? "true" : "false";
    default:
      return null;
  }
}

function versionCmp(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => parseInt(x, 10) || 0), pb = b.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d < 0 ? -1 : 1;
  }
  return 0;
}

function callFn(name: string, argn: Node[], c: Ctx): Val {
  const args = () => argn.map((a) => ev(a, c));
  const a0 = () => (argn[0] ? ev(argn[0], c) : ERR);
  switch (name) {
    case "isundefined":
      return bool(a0().t === "u");
    case "iserror":
      return bool(a0().t === "e");
    case "isstring":
      return bool(a0().t === "s");
    case "isinteger":
      return bool(a0().t === "i");
    case "isreal":
      return bool(a0().t === "r");
    case "isboolean":
      return bool(a0().t === "b");
    case "islist":
      return bool(a0().t === "l");
    case "time":
      return int(Date.now() / 1000);
    case "ifthenelse": {
      const cv = toBool(a0());
      if (cv.t !== "b") return cv;
      const n = cv.v ? argn[1] : argn[2];
      return n ? ev(n, c) : ERR;
    }
    case "member":
    case "identicalmember": {
      const [x, l] = args();
      if (!x || !l) return ERR;
      if (l.t === "u" || x.t === "u") return UNDEF;
      if (l.t !== "l") return ERR;
      for (const e of l.v) {
        if (name === "member") {
          const r = compare("==", x, e);
          if (r.t === "b" && r.v) return bool(true);
        } else if (identical(x, e)) return bool(true);
      }
      return bool(false);
    }
    case "regexp": {
      const [p, s, o] = args();
      if (!p || !s) return ERR;
      if (p.t === "u" || s.t === "u") return UNDEF;
      if (p.t !== "s" || s.t !== "s") return ERR;
      const opts = o && o.t === "s" ? o.v : "";
      try {
        return bool(new RegExp(p.v, opts.toLowerCase().includes("i") ? "i" : "").test(s.v));
      } catch {
        return ERR;
      }
    }
    case "strcat": {
      let s = "";
      for (const v of args()) {
        if (v.t === "u") return UNDEF;
        const t = valToString(v);
        if (t === null) return ERR;
        s += t;
      }
      return str(s);
    }
    case "tolower":
    case "toupper": {
      const v = a0();
      if (v.t === "u") return UNDEF;
      const t = valToString(v);
      if (t === null) return ERR;
      return str(name === "tolower" ? t.toLowerCase() : t.toUpperCase());
    }
    case "size":
    case "length": {
      const v = a0();
      if (v.t === "u") return UNDEF;
      if (v.t === "s") return int(v.v.length);
      if (v.t === "l") return int(v.v.length);
      return ERR;
    }
    case "substr": {
      const [s, o, l] = args();
      if (!s || !o) return ERR;
      if (s.t === "u") return UNDEF;
      if (s.t !== "s" || o.t !== "i") return ERR;
      let off = o.v < 0 ? Math.max(0, s.v.length + o.v) : o.v;
      let end = s.v.length;
      if (l && l.t === "i") end = l.v < 0 ? s.v.length + l.v : off + l.v;
      if (off > s.v.length) off = s.v.length;
      return str(s.v.slice(off, Math.max(off, end)));
    }
    case "int": {
      const v = a0();
      if (v.t === "i") return v;
      if (v.t === "r") return int(v.v);
      if (v.t === "b") return int(v.v ? 1 : 0);
      if (v.t === "s") {
        const x = parseFloat(v.v);
        return Number.isNaN(x) ? ERR : int(x);
      }
      return v.t === "u" ? UNDEF : ERR;
    }
    case "real": {
      const v = a0();
      if (v.t === "i" || v.t === "r") return real(v.v);
      if (v.t === "b") return real(v.v ? 1 : 0);
      if (v.t === "s") {
        const x = parseFloat(v.v);
        return Number.isNaN(x) ? ERR : real(x);
      }
      return v.t === "u" ? UNDEF : ERR;
    }
    case "string": {
      const v = a0();
      if (v.t === "u") return UNDEF;
      const t = valToString(v);
      return t === null ? str(unparseVal(v)) : str(t);
    }
    case "floor":
    case "ceiling":
    case "round": {
      const v = a0();
      if (v.t === "u") return UNDEF;
      const x = num(v);
      if (x === null || v.t === "b") return ERR;
      return int(name === "floor" ? Math.floor(x) : name === "ceiling" ? Math.ceil(x) : Math.round(x));
    }
    case "abs": {
      const v = a0();
      if (v.t === "i") return int(Math.abs(v.v));
      if (v.t === "r") return real(Math.abs(v.v));
      return v.t === "u" ? UNDEF : ERR;
    }
    case "pow": {
      const [x, y] = args();
      if (!x || !y) return ERR;
      if (x.t === "u" || y.t === "u") return UNDEF;
      if (x.t === "i" && y.t === "i" && y.v >= 0) return int(x.v ** y.v);
      const a = num(x), b = num(y);
      return a === null || b === null ? ERR : real(a ** b);
    }
    case "min":
    case "max":
    case "sum":
    case "avg": {
      let vals = args();
      if (vals.length === 1 && vals[0]!.t === "l") vals = (vals[0] as { v: Val[] }).v;
      if (vals.length === 0) return name === "sum" ? int(0) : UNDEF;
      let acc: Val | null = null;
      for (const v of vals) {
        if (v.t === "u") continue;
        if (v.t !== "i" && v.t !== "r") return ERR;
        if (!acc) {
          acc = v;
          continue;
        }
        if (name === "sum" || name === "avg") acc = arith("+", acc, v);
        else {
          const r = compare("<", v, acc);
          if (r.t === "b" && (name === "min" ? r.v : !r.v && !identical(v, acc))) acc = v;
        }
      }
      if (!acc) return UNDEF;
      if (name === "avg") return real((acc as { v: number }).v / vals.length);
      return acc;
    }
    case "split": {
      const [s, d] = args();
      if (!s) return ERR;
      if (s.t === "u") return UNDEF;
      if (s.t !== "s") return ERR;
      const delims = d && d.t === "s" ? d.v : " ,";
      const parts = s.v.split(new RegExp("[" + delims.replace(/[\]\\^-]/g, "\\$&") + "]+")).filter((x) => x !== "");
      return { t: "l", v: parts.map(str) };
    }
    case "stringlistmember":
    case "stringlistimember": {
      const [x, l, d] = args();
      if (!x || !l) return ERR;
      if (x.t === "u" || l.t === "u") return UNDEF;
      if (x.t !== "s" || l.t !== "s") return ERR;
      const delims = d && d.t === "s" ? d.v : " ,";
      const parts = l.v.split(new RegExp("[" + delims.replace(/[\]\\^-]/g, "\\$&") + "]+")).filter((y) => y !== "");
      return bool(parts.some((p) => (name === "stringlistimember" ? p.toLowerCase() === x.v.toLowerCase() : p === x.v)));
    }
    case "stringlistsize": {
      const [l, d] = args();
      if (!l) return ERR;
      if (l.t === "u") return UNDEF;
      if (l.t !== "s") return ERR;
      const delims = d && d.t === "s" ? d.v : " ,";
      return int(l.v.split(new RegExp("[" + delims.replace(/[\]\\^-]/g, "\\$&") + "]+")).filter((y) => y !== "").length);
    }
    case "versionge":
    case "versiongt":
    case "versionle":
    case "versionlt":
    case "versioneq":
    case "versioncmp": {
      const [a, b] = args();
      if (!a || !b) return ERR;
      if (a.t === "u" || b.t === "u") return UNDEF;
      if (a.t !== "s" || b.t !== "s") return ERR;
      const r = versionCmp(a.v, b.v);
      switch (name) {
        case "versionge":
          return bool(r >= 0);
        case "versiongt":
          return bool(r > 0);
        case "versionle":
          return bool(r <= 0);
        case "versionlt":
          return bool(r < 0);
        case "versioneq":
          return bool(r === 0);
        default:
          return int(r);
      }
    }
    case "debug":
      return a0();
    default:
      return ERR;
  }
}

// ---------------------------------------------------------------- formatting
/** printf("%.<p>G") */
export function fmtG(x: number, p: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "NAN" : x > 0 ? "INF" : "-INF";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const e = Math.floor(Math.log10(Math.abs(x)));
  let s: string;
  const exp = Number(x.toExponential(p - 1).split("e")[1]);
  if (exp < -4 || exp >= p) {
    s = x.toExponential(p - 1);
    let [m, ex] = s.split("e") as [string, string];
    if (m.includes(".")) m = m.replace(/0+$/, "").replace(/\.$/, "");
    const sign = ex.startsWith("-") ? "-" : "+";
    ex = ex.replace(/^[+-]/, "");
    if (ex.length < 2) ex = "0" + ex;
    s = `${m}E${sign}${ex}`;
  } else {
    s = x.toFixed(Math.max(0, p - 1 - exp));
    if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  }
  void e;
  return s;
}
/** JSON writer for reals: %.16G, ".0" added when it looks like an integer (docs/htcondor.md#json-output) */
export function fmtRealJson(x: number): string {
  const s = fmtG(x, 16);
  return /^-?\d+$/.test(s) ? s + ".0" : s;
}
/** ClassAd long-form / -af writer for reals */
export function fmtRealLong(x: number): string {
  const s = fmtG(x, 15);
  return /^-?\d+$/.test(s) ? s + ".0" : s;
}

export function quoteString(s: string): string {
  let o = '"';
  for (const ch of s) {
    switch (ch) {
      case '"':
        o += '\\"';
        break;
      case "\\":
        o += "\\\\";
        break;
      case "\n":
        o += "\\n";
        break;
      case "\t":
        o += "\\t";
        break;
      case "\r":
        o += "\\r";
        break;
      default:
        o += ch;
    }
  }
  return o + '"';
}

export function unparseVal(v: Val): string {
  switch (v.t) {
    case "u":
      return "undefined";
    case "e":
      return "error";
    case "i":
      return String(v.v);
    case "r":
      return fmtRealLong(v.v);
    case "s":
      return quoteString(v.v);
    case "b":
      return v.v ? "true" : "false";
    case "l":
      return "{ " + v.v.map(unparseVal).join(",") + " }";
  }
}

export function unparse(n: Node): string {
  switch (n.k) {
    case "lit":
      return n.src !== undefined && n.v.t === "r" ? n.src : unparseVal(n.v);
    case "attr":
      return (n.scope === "my" ? "MY." : n.scope === "target" ? "TARGET." : "") + n.name;
    case "paren":
      return "(" + unparse(n.a) + ")";
    case "un":
      return n.op + unparse(n.a);
    case "bin":
      return unparse(n.a) + " " + n.op + " " + unparse(n.b);
    case "cond":
      return unparse(n.c) + " ? " + unparse(n.a) + " : " + unparse(n.b);
    case "elvis":
      return unparse(n.a) + " ?: " + unparse(n.b);
    case "call":
      return n.name + "(" + n.args.map(unparse).join(",") + ")";
    case "list":
      return "{ " + n.items.map(unparse).join(",") + " }";
    case "idx":
      return unparse(n.a) + "[" + unparse(n.i) + "]";
  }
}

/** Canonical text of an expression (or null if it does not parse). */
export function canonical(src: string, oldEscapes = false): string | null {
  const n = tryParse(src, oldEscapes);
  return n ? unparse(n) : null;
}

/** Is this node a literal value (for JSON: value vs "\/Expr(...)\/")? */
function literalOf(n: Node): Val | null {
  if (n.k === "lit") return n.v;
  if (n.k === "list") {
    const out: Val[] = [];
    for (const it of n.items) {
      const v = literalOf(it);
      if (!v) return null;
      out.push(v);
    }
    return { t: "l", v: out };
  }
  return null;
}

export function jsonString(s: string): string {
  let o = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') o += '\\"';
    else if (ch === "\\") o += "\\\\";
    else if (c < 0x20) {
      o += ch === "\n"
        ? "\\n"
        : ch === "\t"
        ? "\\t"
        : ch === "\r"
        ? "\\r"
        : ch === "\b"
        ? "\\b"
        : ch === "\f"
        ? "\\f"
        : "\\u" + c.toString(16).padStart(4, "0");
    } else o += ch;
  }
  return o + '"';
}

function jsonVal(v: Val, indent: string): string {
  switch (v.t) {
    case "u":
      return "null";
    case "i":
      return String(v.v);
    case "r":
      return fmtRealJson(v.v);
    case "s":
      return jsonString(v.v);
    case "b":
      return v.v ? "true" : "false";
    case "l":
      return "[\n" + v.v.map((x) => indent + "  " + jsonVal(x, indent + "  ")).join(",\n") + "\n" + indent + "]";
    case "e":
      return '"\\/Expr(error)\\/"';
  }
}

/** JSON text for one attribute's stored ClassAd text (docs/htcondor.md#json-output value table) */
export function jsonOfText(text: string | undefined, indent = "  "): string {
  if (text === undefined) return "null";
  const n = tryParse(text);
  if (!n) return jsonString("/Expr(" + text + ")/").replace(/\//g, "\\/");
  const lit = literalOf(n);
  if (lit && lit.t !== "e") return jsonVal(lit, indent);
  return '"\\/Expr(' + jsonString(unparse(n)).slice(1, -1) + ')\\/"';
}

const ciCompare = (a: string, b: string) => {
  const x = a.toLowerCase(), y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};
export const sortNamesCI = (names: string[]) => [...names].sort(ciCompare);

/** One ad in the JSON writer's shape: "{\n  \"A\": 1,\n  \"B\": 2\n}" */
export function adToJson(ad: Ad, attrs?: string[]): string {
  let names: string[];
  if (attrs) {
    const seen = new Set<string>();
    names = [];
    for (const a of attrs) {
      if (seen.has(a.toLowerCase())) continue;
      seen.add(a.toLowerCase());
      names.push(ad.name(a) ?? a);
    }
  } else names = ad.names();
  names = sortNamesCI(names);
  const lines = names.map((n) => "  " + jsonString(n) + ": " + jsonOfText(ad.get(n)));
  return "{\n" + lines.join(",\n") + (lines.length ? "\n" : "") + "}";
}
export function adToJsonLine(ad: Ad, attrs?: string[]): string {
  const names = sortNamesCI(attrs ? attrs.map((a) => ad.name(a) ?? a) : ad.names());
  return "{" + names.map((n) => jsonString(n) + ":" + jsonOfText(ad.get(n)).replace(/\n\s*/g, "")).join(",") + "}";
}

export function adToLong(ad: Ad, attrs?: string[]): string {
  let names = attrs ? attrs.filter((a) => ad.has(a)).map((a) => ad.name(a)!) : ad.names();
  names = sortNamesCI(names);
  return names.map((n) => `${n} = ${ad.get(n)}\n`).join("");
}

/** -af value rendering (evaluated; strings bare; undefined → "undefined") */
export function afValue(v: Val, quote = false): string {
  switch (v.t) {
    case "u":
      return "undefined";
    case "e":
      return "error";
    case "i":
      return String(v.v);
    case "r":
      return fmtRealLong(v.v);
    case "s":
      return quote ? quoteString(v.v) : v.v;
    case "b":
      return v.v ? "true" : "false";
    case "l":
      return unparseVal(v);
  }
}
