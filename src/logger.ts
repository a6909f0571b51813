/** Structured logging: one line per event, JSON or text, to a sink (stderr in production). */
import type { LogFormat, LogLevel } from "./flags.ts";

export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(opts: { level: LogLevel; format: LogFormat; write: (line: string) => void; now?: () => Date }): Logger {
  const now = opts.now ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields: Fields = {}) => {
    if (RANK[level] < RANK[opts.level]) return;
    const time = now().toISOString();
    if (opts.format === "json") {
      opts.write(JSON.stringify({ time, level, msg, ...fields }));
    } else {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k}=${typeof v === "string" && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`)
        .join(" ");
      opts.write(`${time} ${level.toUpperCase().padEnd(5)} ${msg}${extra ? ` ${extra}` : ""}`);
    }
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

/** A logger whose every line also carries `fields` (e.g. the schedd a service talks to). */
export function withFields(log: Logger, fields: Fields): Logger {
  return {
    debug: (m, f) => log.debug(m, { ...fields, ...f }),
    info: (m, f) => log.info(m, { ...fields, ...f }),
    warn: (m, f) => log.warn(m, { ...fields, ...f }),
    error: (m, f) => log.error(m, { ...fields, ...f }),
  };
}
