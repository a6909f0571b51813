// Entry point: `bun main.ts <tool> [args...]`. Logs every call to $MINICONDOR_HOME/calls.log and applies faults.
import * as fs from "node:fs";
import * as path from "node:path";
import { err, homeDir, loadConfig, loadFaults, out, PLATFORM, scheddAddr, VERSION } from "./common.ts";

const t0 = performance.now();
const tool = process.argv[2] ?? "";
const argv = process.argv.slice(3);

function logCall(code: number): void {
  if (tool === "__schedd") return;
  try {
    const home = homeDir();
    fs.mkdirSync(home, { recursive: true });
    const ms = Math.round(performance.now() - t0);
    fs.appendFileSync(path.join(home, "calls.log"), `${new Date().toISOString()} ${tool} ${JSON.stringify(argv)} ${ms} ${code}\n`);
  } catch { /* ignore */ }
}

function finish(code: number): never {
  logCall(code);
  process.exit(code);
}

const DOWN: Record<string, [string, number]> = {
  condor_q: ["Error: Could not find the local condor_schedd\n\nExtra Info: You probably saw this error because the condor_schedd is not\nrunning on the machine you are trying to query.  If the condor_schedd is not\nrunning, the Condor system will not be able to find an address and port to\nconnect to and satisfy this request.  Please make sure the Condor daemons are\nrunning and try again.\n\n", 1],
  condor_status: ["Error: communication error\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n", 1],
  condor_submit: ["\nERROR: Can't find address of local schedd\n", 1],
  condor_rm: ["condor_rm: (null)\n", 1],
  condor_hold: ["condor_hold: (null)\n", 1],
  condor_release: ["condor_release: (null)\n", 1],
  condor_transfer_data: ["condor_transfer_data: (null)\n", 1],
  condor_tail: ["Can't find address of local schedd\n", 1],
};

function failText(addr: string): Record<string, [string, string, number]> {
  return {
    condor_q: ["", `\n-- Failed to fetch ads from: ${addr} : ${loadConfig().host}\nSECMAN:2007:Failed to end classad message.\n`, 1],
    condor_submit: ["Submitting job(s)", `\nERROR: Failed to connect to local queue manager\nCEDAR:6001:Failed to connect to ${addr}\n`, 1],
    condor_history: ["", "Unable to send history command to remote schedd;\nTypically, either the schedd is not responding, does not authorize you, or does not support remote history.\n", 1],
    condor_rm: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_hold: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_release: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_status: ["", `Error: communication error\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n`, 1],
    condor_tail: ["", `Failed to connect to starter: CEDAR:6001:Failed to connect to ${addr}\n`, 1],
    condor_transfer_data: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nERROR: Failed to spool job files.\n`, 1],
    condor_chirp: ["\tError: 5 (Input/output error)\n", "cannot chirp_connect to condor_starter\n", 255],
    condor_version: ["", "ERROR: injected failure\n", 1],
  };
}

async function main(): Promise<number> {
  if (tool === "__schedd") {
    const { scheddMain } = await import("./schedd.ts");
    await scheddMain(argv[0] ?? homeDir());
    return 0;
  }
  if (tool === "condor_chirp") {
    // jobs have no MINICONDOR_HOME: find it through the chirp config
    const { readChirpConfig } = await import("./chirp.ts");
    const c = readChirpConfig();
    if (c) process.env.MINICONDOR_HOME = c.home;
  }
  const faults = loadFaults();
  const mode = faults.tools?.[tool] ?? faults.tools?.["all"] ?? "";
  if (mode === "hang") {
    process.on("SIGTERM", () => finish(143));
    process.on("SIGINT", () => finish(130));
    for (;;) await Bun.sleep(60_000);
  }
  if (mode.startsWith("slow:")) await Bun.sleep(Number(mode.slice(5)) || 0);
  if (faults.scheddDown && DOWN[tool]) {
    const [text, code] = DOWN[tool]!;
    err(text);
    return code;
  }
  if (mode === "fail") {
    const f = failText(scheddAddr(loadConfig()))[tool] ?? ["", `ERROR: ${tool} failed\n`, 1];
    out(f[0]);
    err(f[1]);
    return f[2];
  }
  if (mode === "warn") err(`WARNING: Saw slow DNS query, which may impact entire system: getaddrinfo(${loadConfig().host}) took 2.000000 seconds.\n`);

  switch (tool) {
    case "condor_submit": return (await import("./submit.ts")).condorSubmit(argv);
    case "condor_q": return (await import("./query.ts")).condorQ(argv);
    case "condor_history": return (await import("./query.ts")).condorHistory(argv);
    case "condor_status": return (await import("./query.ts")).condorStatus(argv);
    case "condor_rm": case "condor_hold": case "condor_release": return (await import("./actions.ts")).condorRm(tool, argv);
    case "condor_transfer_data": return (await import("./actions.ts")).condorTransferData(argv);
    case "condor_tail": return (await import("./actions.ts")).condorTail(argv);
    case "condor_chirp": return (await import("./chirp.ts")).condorChirp(argv);
    case "condor_version": out(VERSION + "\n" + PLATFORM + "\n"); return 0;
    default: err(`minicondor: unknown tool '${tool}'\n`); return 1;
  }
}

main().then(finish, (e: unknown) => {
  err(`${tool}: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
  finish(1);
});
