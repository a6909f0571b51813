/** A logger that keeps its lines in memory, for the tests to read what was logged. */
import type { Fields, Logger } from "../../src/logger.ts";

export function memoryLogger(): Logger & { lines: Fields[] } {
  const lines: Fields[] = [];
  const push = (level: string) => (msg: string, fields: Fields = {}) => void lines.push({ level, msg, ...fields });
  return { lines, debug: push("debug"), info: push("info"), warn: push("warn"), error: push("error") };
}
