// The one execute machine: a partitionable slot plus one dynamic slot per running job.
import * as fs from "node:fs";
import { Ad } from "./classad.ts";
import { type Config, nowSec, PLATFORM, type RunRow, VERSION } from "./common.ts";

export type Free = { cpus: number; memory: number; gpus: number; disk: number; gpuIds: string[] };

export function gpuId(i: number): string {
  return "GPU-" + (0xa0c0de00 + i).toString(16).padStart(8, "0");
}

export function freeResources(cfg: Config, runs: RunRow[]): Free {
  const used = new Set<string>();
  let cpus = cfg.cpus, memory = cfg.memory, gpus = cfg.gpus;
  for (const r of runs) {
    cpus -= r.cpus;
    memory -= r.memory;
    gpus -= r.gpus;
    for (const g of r.gpu_ids ? r.gpu_ids.split(",") : []) used.add(g);
  }
  const gpuIds: string[] = [];
  for (let i = 0; i < cfg.gpus; i++) if (!used.has(gpuId(i))) gpuIds.push(gpuId(i));
  return { cpus, memory, gpus, disk: cfg.disk, gpuIds };
}

export function hasContainerRuntime(cfg: Config): boolean {
  try {
    fs.accessSync(cfg.apptainer, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function machineAd(cfg: Config, free: Free, runs: RunRow[]): Ad {
  const a = new Ad();
  const host = cfg.host;
  const cont = hasContainerRuntime(cfg);
  a.set("MyType", "Machine");
  a.set("TargetType", "Job");
  a.set("Name", `slot1@${host}`);
  a.set("Machine", host);
  a.set("SlotID", 1);
  a.set("SlotType", "Partitionable");
  a.set("PartitionableSlot", true);
  a.set("Arch", "X86_64");
  a.set("OpSys", "LINUX");
  a.set("OpSysAndVer", "Debian12");
  a.set("CondorVersion", VERSION);
  a.set("CondorPlatform", PLATFORM);
  a.set("Cpus", free.cpus);
  a.set("Memory", free.memory);
  a.set("Disk", free.disk);
  a.set("GPUs", free.gpus);
  a.set("AssignedGPUs", free.gpuIds.join(","));
  a.set("TotalCpus", cfg.cpus);
  a.set("TotalMemory", cfg.memory);
  a.set("TotalDisk", cfg.disk);
  a.set("TotalGPUs", cfg.gpus);
  a.set("TotalSlotCpus", cfg.cpus);
  a.set("TotalSlotMemory", cfg.memory);
  a.set("TotalSlotGPUs", cfg.gpus);
  a.set("DetectedCpus", cfg.cpus);
  a.set("DetectedMemory", cfg.memory);
  a.set("DetectedGPUs", cfg.gpus);
  a.set("NumDynamicSlots", runs.length);
  a.set("State", "Unclaimed");
  a.set("Activity", "Idle");
  a.setText("LoadAvg", "0.0");
  a.setText("CondorLoadAvg", "0.0");
  a.set("EnteredCurrentActivity", nowSec());
  a.set("HasFileTransfer", true);
  a.set("FileSystemDomain", cfg.sharedFileSystem ? host : `${host}.execute`);
  a.set("UidDomain", host);
  a.set("StartdIpAddr", `<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=${host}&noUDP&sock=startd_1_1>`);
  a.set("HasContainer", cont);
  a.set("HasSingularity", cont);
  a.set("HasSIF", cont);
  a.set("HasSandboxImage", cont);
  a.set("HasDockerURL", cont);
  a.set("HasDocker", false);
  a.set("Start", true);
  a.setText("Requirements", "START");
  a.set("MyAddress", `<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=${host}&noUDP&sock=startd_1_1>`);
  return a;
}

export function dynamicSlotAd(cfg: Config, r: RunRow, owner: string): Ad {
  const a = new Ad();
  const host = cfg.host;
  a.set("MyType", "Machine");
  a.set("TargetType", "Job");
  a.set("Name", `slot1_${r.slot}@${host}`);
  a.set("Machine", host);
  a.set("SlotID", 1);
  a.set("SlotType", "Dynamic");
  a.set("DynamicSlot", true);
  a.set("Arch", "X86_64");
  a.set("OpSys", "LINUX");
  a.set("CondorVersion", VERSION);
  a.set("Cpus", r.cpus);
  a.set("Memory", r.memory);
  a.set("GPUs", r.gpus);
  a.set("AssignedGPUs", r.gpu_ids);
  a.set("TotalCpus", cfg.cpus);
  a.set("TotalMemory", cfg.memory);
  a.set("TotalGPUs", cfg.gpus);
  a.set("State", "Claimed");
  a.set("Activity", "Busy");
  a.setText("LoadAvg", "1.0");
  a.set("JobId", `${r.cluster}.${r.proc}`);
  a.set("RemoteOwner", `${owner}@${host}`);
  a.set("RemoteUser", `${owner}@${host}`);
  a.set("EnteredCurrentActivity", r.started);
  return a;
}
