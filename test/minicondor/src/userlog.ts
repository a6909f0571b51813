// Job event log ("user log") in HTCondor's text format, or XML or JSON when the config's
// userlogFormatOptions (DEFAULT_USERLOG_FORMAT_OPTIONS) says so (write_user_log.cpp doWriteEvent).
import * as fs from "node:fs";
import type { Ad } from "./classad.ts";
import { fmtDateLog, loadConfig, nowSec } from "./common.ts";

const p3 = (n: number) => String(n).padStart(3, "0");

/** condor_event.h's event names, as MyType in the XML and JSON forms. */
const EVENT_TYPES: Record<number, string> = {
  0: "SubmitEvent",
  1: "ExecuteEvent",
  4: "JobEvictedEvent",
  5: "JobTerminatedEvent",
  8: "GenericEvent",
  9: "JobAbortedEvent",
  12: "JobHeldEvent",
  13: "JobReleasedEvent",
  33: "AttributeUpdateEvent",
};

/** The format words, as HTCondor parses the knob: a list split on spaces and commas, case-blind, `!` negates. */
function formatOptions(): Set<string> {
  const words = loadConfig().userlogFormatOptions.split(/[\s,]+/).filter(Boolean).map((w) => w.toUpperCase());
  return new Set(words.filter((w) => !w.startsWith("!")));
}

function isoUtc(t: number, sub: boolean): string {
  const d = new Date(t * 1000).toISOString(); // 2026-11-22T07:32:56.250Z
  return sub ? d : d.replace(/\.\d{3}Z$/, "");
}

function classicTime(t: number, o: Set<string>): string {
  if (!o.has("UTC")) return fmtDateLog(t) + (o.has("SUB_SECOND") ? `.${String(Math.floor((t % 1) * 1000)).padStart(3, "0")}` : "");
  const d = new Date(t * 1000).toISOString().replace("T", " ");
  return (o.has("SUB_SECOND") ? d : d.replace(/\.\d{3}Z$/, "Z"));
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function ulog(ad: Ad, code: number, text: string, body = "", t = nowSec()): void {
  const file = ad.str("UserLog");
  if (!file) return;
  const c = ad.num("ClusterId") ?? 0, p = ad.num("ProcId") ?? 0;
  const o = formatOptions();
  const attrs: [string, string | number][] = [
    ["MyType", EVENT_TYPES[code] ?? "FutureEvent"],
    ["EventTypeNumber", code],
    ["EventTime", isoUtc(t, o.has("SUB_SECOND")).replace(/Z$/, "")],
    ["Cluster", c],
    ["Proc", p],
    ["Subproc", 0],
    ["Info", text],
  ];
  let rec: string;
  if (o.has("XML")) {
    const one = ([k, v]: [string, string | number]) => `    <a n="${k}">${typeof v === "number" ? `<i>${v}</i>` : `<s>${xmlEscape(v)}</s>`}</a>\n`;
    const prolog = fs.existsSync(file) && fs.statSync(file).size > 0 ? "" : `<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n`;
    rec = `${prolog}<c>\n${attrs.map(one).join("")}</c>\n`;
  } else if (o.has("JSON")) {
    rec = `{\n${attrs.map(([k, v]) => `  "${k}": ${JSON.stringify(v)}`).join(",\n")}\n}\n`;
  } else {
    rec = `${p3(code)} (${p3(c)}.${p3(p)}.000) ${classicTime(t, o)} ${text}\n${body}...\n`;
  }
  try {
    fs.appendFileSync(file, rec);
  } catch { /* unwritable log: real HTCondor would hold the job; ignore */ }
}

const ZERO_USAGE = "Usr 0 00:00:00, Sys 0 00:00:00";

/** The body of 005 after its termination line (condor_event.cpp TerminatedEvent::formatBody). */
export function usageBlock(ad: Ad): string {
  const z = ZERO_USAGE;
  return `\t\t${z}  -  Run Remote Usage\n\t\t${z}  -  Run Local Usage\n\t\t${z}  -  Total Remote Usage\n\t\t${z}  -  Total Local Usage\n` +
    `\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n` +
    resourcesBlock(ad);
}

/** 004's first line: the code only when the vacate has one (JobEvictedEvent::formatBody). */
export function evictedText(ad: Ad): string {
  const code = ad.num("VacateReasonCode") ?? 0;
  return code !== 0 ? `Job was evicted. Code ${code} Subcode ${ad.num("VacateReasonSubCode") ?? 0}` : "Job was evicted.";
}

/** 004's body for a job stopped without a checkpoint (baseshadow.cpp logEvictEvent, JobEvictedEvent::formatBody). */
export function evictedBody(ad: Ad): string {
  const reason = ad.str("VacateReason");
  return `\t(0) CPU times\n\t\t${ZERO_USAGE}  -  Run Remote Usage\n\t\t${ZERO_USAGE}  -  Run Local Usage\n` +
    `\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n` +
    (reason ? `\tReason: ${reason}\n` : "") + resourcesBlock(ad);
}

function resourcesBlock(ad: Ad): string {
  const cpus = ad.num("RequestCpus") ?? 1, mem = ad.num("RequestMemory") ?? 128, disk = ad.num("RequestDisk") ?? 1024;
  return `\tPartitionable Resources :    Usage  Request Allocated \n` +
    `\t   Cpus                 :                 ${String(cpus).padStart(1)}         ${cpus} \n` +
    `\t   Disk (KB)            :        0  ${String(disk).padStart(7)}   ${disk} \n` +
    `\t   Memory (MB)          :        0  ${String(mem).padStart(7)}   ${mem} \n`;
}
