// Kubernetes `$(VAR)` expansion (k8s.io/kubernetes/third_party/forked/golang/expansion): `$$` → `$`,
// `$(NAME)` → its value when defined, else left as written; any other `$` is kept.

export function expandK8s(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== "$" || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === "$") {
      out += "$";
    } else if (rest[0] === "(") {
      const close = rest.indexOf(")", 1);
      if (close === -1) {
        out += "$(";
      } else {
        const name = rest.slice(1, close);
        out += lookup(name) ?? `$(${name})`;
        advance = close + 1;
      }
    } else {
      out += "$" + rest[0];
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}
