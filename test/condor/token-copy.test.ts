// The private token directory of --token-file, and what the ping reads of a token directory, on
// real files laid out as a Kubernetes Secret volume lays them out (docs/htcondor.md#idtokens-a-token-directory).
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCredential, tokenCopier } from "../../src/condor/credentials.ts";

const root = mkdtempSync(join(tmpdir(), "token-copy-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A Secret volume: the key is a link to `..data/key`, and `..data` a link to a timestamped folder swapped at each update. */
function secretVolume(dir: string, key: string, value: string, generation: number): string {
  mkdirSync(dir, { recursive: true });
  const gen = join(dir, `..2026_11_27_${generation}`);
  mkdirSync(gen);
  writeFileSync(join(gen, key), value);
  chmodSync(join(gen, key), 0o444);
  symlinkSync(`..2026_11_27_${generation}`, join(dir, "..data_tmp"));
  renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
  if (!existsSync(join(dir, key))) symlinkSync(`..data/${key}`, join(dir, key));
  return join(dir, key);
}

describe("tokenCopier", () => {
  test("a 0600 copy in a 0700 folder, copied again when the Secret changes, removed while it is missing", () => {
    const vol = join(root, "vol");
    const from = secretVolume(vol, "token", "first-token\n", 1);
    const dir = join(root, "data", "idtokens");
    const sync = tokenCopier({ from, dir });
    sync();
    expect(readFileSync(join(dir, "token"), "utf8")).toBe("first-token\n");
    expect(statSync(join(dir, "token")).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual(["token"]);

    secretVolume(vol, "token", "second-token\n", 2);
    sync();
    expect(readFileSync(join(dir, "token"), "utf8")).toBe("second-token\n");

    rmSync(vol, { recursive: true });
    sync();
    expect(readdirSync(dir)).toEqual([]);

    secretVolume(vol, "token", "third-token\n", 3);
    sync();
    expect(readFileSync(join(dir, "token"), "utf8")).toBe("third-token\n");
  });

  test("a folder left with a wider mode is made private again; a stale copy of an earlier run is replaced", () => {
    const from = join(root, "plain-token");
    writeFileSync(from, "fresh\n");
    const dir = join(root, "data2", "idtokens");
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, "token"), "stale\n", { mode: 0o644 });
    tokenCopier({ from, dir })();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(dir, "token"), "utf8")).toBe("fresh\n");
    expect(statSync(join(dir, "token")).mode & 0o777).toBe(0o600);
  });

  test("a copy that cannot be made is an error that names the paths, not the token", () => {
    const from = join(root, "t3");
    writeFileSync(from, "sEcReT\n");
    const blocker = join(root, "blocker");
    writeFileSync(blocker, "");
    expect(() => tokenCopier({ from, dir: join(blocker, "idtokens") })()).toThrow(
      new RegExp(`^cannot copy the IDTOKEN file ${from} into ${blocker}/idtokens: ENOTDIR$`),
    );
  });
});

describe("readCredential of a token directory", () => {
  test("each entry as stat sees it through its links; ..data is a directory", () => {
    const vol = join(root, "dirvol");
    secretVolume(vol, "pool", "a-token\n", 1);
    const r = readCredential({ kind: "idtoken-dir", path: vol }, 1000);
    if (r.kind !== "dir" || !r.entries) throw new Error("expected entries");
    const byName = Object.fromEntries(r.entries.map((e) => [e.name, e]));
    expect(byName["..data"]!.directory).toBe(true);
    expect(byName["pool"]).toMatchObject({ directory: false, text: "a-token\n", uid: process.getuid!() });
    expect(byName["pool"]!.mode! & 0o777).toBe(0o444);
    expect(readCredential({ kind: "idtoken-dir", path: join(root, "none") }, 1000)).toEqual({ kind: "dir", uid: 1000, entries: undefined });
  });
});
