// HTCondor argument/environment syntaxes. docs/htcondor.md#submit-file-rules
export class SyntaxError2 extends Error {}

/** Parse a V2 "raw" string (what the Arguments/Environment attributes hold): whitespace separates,
 *  '...' groups whitespace, '' inside quotes is a literal ', backslash and " are plain characters. */
export function parseV2Raw(raw: string): string[] {
  const out: string[] = [];
  let cur = "";
  let inTok = false;
  let i = 0;
  while (i < raw.length) {
    const c = raw[i]!;
    if (c === "'") {
      inTok = true;
      i++;
      let closed = false;
      while (i < raw.length) {
        if (raw[i] === "'") {
          if (raw[i + 1] === "'") {
            cur += "'";
            i += 2;
            continue;
          }
          i++;
          closed = true;
          break;
        }
        cur += raw[i++];
      }
      if (!closed) throw new SyntaxError2(`Unbalanced quote starting here: '${raw}`);
    } else if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      if (inTok) out.push(cur);
      cur = "";
      inTok = false;
      i++;
    } else {
      cur += c;
      inTok = true;
      i++;
    }
  }
  if (inTok) out.push(cur);
  return out;
}

/** submit-file value in V2 quoted form ("..." with "" for ") → raw V2 string, or null if not V2 */
export function v2QuotedToRaw(v: string): string | null {
  const t = v.trim();
  if (t.length < 2 || !t.startsWith('"') || !t.endsWith('"')) return null;
  const inner = t.slice(1, -1);
  let out = "";
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!;
    if (c === '"') {
      if (inner[i + 1] === '"') {
        out += '"';
        i++;
        continue;
      }
      throw new SyntaxError2(`Found illegal unescaped double-quote: ${t}`);
    }
    out += c;
  }
  return out;
}

/** Old (V1) argument syntax: split on whitespace, \" → " */
export function parseV1Args(s: string): string[] {
  return s.split(/[ \t]+/).filter((x) => x !== "").map((x) => x.replace(/\\"/g, '"'));
}

/** quote one token for a V2 raw string */
export function quoteV2Token(a: string): string {
  const d = a.replace(/'/g, "''");
  return /[ \t'\n]/.test(a) || a === "" ? `'${d}'` : d;
}
export function joinV2Raw(args: string[]): string {
  return args.map(quoteV2Token).join(" ");
}

export function parseEnvV2Raw(raw: string): [string, string][] {
  return parseV2Raw(raw).map((t) => {
    const i = t.indexOf("=");
    if (i <= 0) throw new SyntaxError2(`ERROR: Missing '=' after environment variable '${t}'.`);
    return [t.slice(0, i), t.slice(i + 1)];
  });
}
export function parseEnvV1(s: string): [string, string][] {
  return s.split(";").filter((x) => x.trim() !== "").map((t) => {
    const i = t.indexOf("=");
    if (i <= 0) throw new SyntaxError2(`ERROR: Missing '=' after environment variable '${t}'.`);
    return [t.slice(0, i), t.slice(i + 1)];
  });
}
export function envToV2Raw(env: [string, string][]): string {
  return env.map(([k, v]) => quoteV2Token(`${k}=${v}`)).join(" ");
}
