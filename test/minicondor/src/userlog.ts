// Job event log ("user log") in HTCondor's text format.
import * as fs from "node:fs";
import type { Ad } from "./classad.ts";
import { fmtDateLog, nowSec } from "./common.ts";

const p3 = (n: number) => String(n).padStart(3, "0");

export function ulog(ad: Ad, code: number, text: string, body = "", t = nowSec()): void {
  const file = ad.str("UserLog");
  if (!file) return;
  const c = ad.num("ClusterId") ?? 0, p = ad.num("ProcId") ?? 0;
  const rec = `${p3(code)} (${p3(c)}.${p3(p)}.000) ${fmtDateLog(t)} ${text}\n${body}...\n`;
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
