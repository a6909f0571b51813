// One-line reasons by Unicode's rules (docs/threat-model.md#7-reasons-on-one-line-by-unicodes-rules): every control character (Cc: C0, DEL,
// C1 with NEL U+0085) and every line or paragraph separator (U+2028, U+2029) counts.
import { describe, expect, test } from "bun:test";
import { escapeControls, hasControlOrLineBreak, oneLine, SidecarError } from "../../src/core/errors.ts";

/** [name, character] for every kind the rule covers. */
const BREAKERS: [string, string][] = [
  ["LF", "\n"],
  ["CR", "\r"],
  ["NUL", "\u0000"],
  ["TAB", "\t"],
  ["VT", "\u000b"],
  ["FF", "\u000c"],
  ["ESC", "\u001b"],
  ["DEL", "\u007f"],
  ["NEL U+0085", "\u0085"],
  ["C1 U+009B (CSI)", "\u009b"],
  ["LINE SEPARATOR U+2028", "\u2028"],
  ["PARAGRAPH SEPARATOR U+2029", "\u2029"],
];
/** Characters that look like breaks to nobody: spaces and format characters stay. */
const KEPT: [string, string][] = [
  ["space", " "],
  ["no-break space U+00A0", "\u00a0"],
  ["zero width space U+200B", "\u200b"],
  ["é", "é"],
  ["emoji", "🦀"],
];

describe("the one control-or-line-break rule", () => {
  test.each(BREAKERS)("%s counts", (_, ch) => {
    expect(hasControlOrLineBreak(`a${ch}b`)).toBe(true);
    expect(oneLine(`a${ch}b`)).toBe("a b");
    expect(escapeControls(`a${ch}b`)).toBe(`a\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}b`);
  });
  test.each(KEPT)("%s does not", (_, ch) => {
    expect(hasControlOrLineBreak(`a${ch}b`)).toBe(false);
    expect(oneLine(`a${ch}b`)).toBe(`a${ch}b`);
    expect(escapeControls(`a${ch}b`)).toBe(`a${ch}b`);
  });
  test("runs collapse to one space and the ends are trimmed", () => {
    expect(oneLine("\u2028first\r\n\u0085\u2029second\n")).toBe("first second");
  });
  test("a SidecarError's message is one line by the same rule", () => {
    const err = new SidecarError("invalid", `pod "a\u2028b": name\u2029is bad\u0085really`);
    expect(err.message).toBe('pod "a b": name is bad really');
    expect(hasControlOrLineBreak(err.message)).toBe(false);
  });
});
