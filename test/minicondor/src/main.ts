// Entry point: `bun main.ts <tool> [args...]`. Logs every call to $MINICONDOR_HOME/calls.log and applies faults.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  err,
  homeDir,
  loadConfig,
  loadFaults,
  logCall,
  otherScheddOf,
  out,
  parentPid,
  pidAlive,
  PLATFORM,
  scheddAddr,
  scheddHome,
  selection,
  VERSION,
} from "./common.ts";

const t0 = performance.now();
const tool = process.argv[2] ?? "";
const argv = process.argv.slice(3);

function finish(code: number): never {
  if (tool !== "__schedd") logCall(homeDir(), tool, argv, performance.now() - t0, code);
  process.exit(code);
}

const DOWN: Record<string, [string, number]> = {
  condor_q: [
    "Error: Could not find the local condor_schedd\n\nExtra Info: You probably saw this error because the condor_schedd is not\nrunning on the machine you are trying to query.  If the condor_schedd is not\nrunning, the Condor system will not be able to find an address and port to\nconnect to and satisfy this request.  Please make sure the Condor daemons are\nrunning and try again.\n\n",
    1,
  ],
  condor_status: ["Error: communication error\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n", 1],
  condor_submit: ["\nERROR: Can't find address of local schedd\n", 1],
  condor_rm: ["condor_rm: (null)\n", 1],
  condor_hold: ["condor_hold: (null)\n", 1],
  condor_release: ["condor_release: (null)\n", 1],
  condor_vacate_job: ["condor_vacate_job: (null)\n", 1],
  condor_transfer_data: ["condor_transfer_data: (null)\n", 1],
  condor_tail: ["Can't find address of local schedd\n", 1],
};

function failText(addr: string): Record<string, [string, string, number]> {
  return {
    condor_q: ["", `\n-- Failed to fetch ads from: ${addr} : ${loadConfig().host}\nSECMAN:2007:Failed to end classad message.\n`, 1],
    // stdout: see submitBanner
    condor_submit: ["", `\nERROR: Failed to connect to local queue manager\nCEDAR:6001:Failed to connect to ${addr}\n`, 1],
    condor_history: [
      "",
      "Unable to send history command to remote schedd;\nTypically, either the schedd is not responding, does not authorize you, or does not support remote history.\n",
      1,
    ],
    condor_rm: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_hold: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_release: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_vacate_job: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nFailed to connect to schedd\n`, 1],
    condor_status: ["", `Error: communication error\nCEDAR:6001:Failed to connect to <127.0.0.1:9618>\n`, 1],
    condor_tail: ["", `Failed to connect to starter: CEDAR:6001:Failed to connect to ${addr}\n`, 1],
    condor_transfer_data: ["", `\nCEDAR:6001:Failed to connect to ${addr}\nERROR: Failed to spool job files.\n`, 1],
    condor_chirp: ["\tError: 5 (Input/output error)\n", "cannot chirp_connect to condor_starter\n", 255],
    condor_version: ["", "ERROR: injected failure\n", 1],
  };
}

/**
 * `-name <local>@<host>` of one of the pool's other schedds (config.json `schedds`): the call works on
 * that schedd's home, with its own queue, history, job ids and spool. Whether `-name` was given.
 */
function selectSchedd(): boolean {
  if (tool === "condor_status" || tool === "condor_version" || tool === "condor_chirp") return false;
  const i = argv.indexOf("-name");
  const name = i >= 0 ? argv[i + 1] : undefined;
  if (name === undefined) return false;
  const local = otherScheddOf(name, loadConfig());
  if (local !== undefined) {
    const home = scheddHome(homeDir(), local);
    fs.mkdirSync(home, { recursive: true });
    process.env.MINICONDOR_HOME = home;
  }
  selection.stopped = loadFaults(homeDir(), false).stopped === true;
  return true;
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
  const named = selectSchedd();
  const faults = loadFaults();
  const mode = faults.tools?.[tool] ?? faults.tools?.["all"] ?? "";
  if (mode === "hang") await waitUntil(() => false, 250);
  // gate:<name>: the call waits until the file <name> exists in its home, then goes on as usual: a
  // test holds one call back while it lines up others behind it, and then lets it go
  if (mode.startsWith("gate:")) await waitUntil(() => fs.existsSync(path.join(homeDir(), mode.slice(5))), 50);
  if (mode.startsWith("slow:")) await Bun.sleep(Number(mode.slice(5)) || 0);
  // slowafter:<ms> (condor_submit): the jobs are queued first, then the tool sleeps before it prints and
  // exits, as a condor_submit killed by its caller's timeout after the schedd committed the job
  const slowAfter = tool === "condor_submit" && mode.startsWith("slowafter:") ? Number(mode.slice(10)) || 0 : 0;
  // slowcommit:<ms> (condor_submit): the session holds the queue that much longer, so the next condor_submit
  // waits for it as on a schedd that serves one submit at a time (docs/htcondor.md#one-submit-at-a-time)
  const holdMs = tool === "condor_submit" && mode.startsWith("slowcommit:") ? Number(mode.slice(11)) || 0 : 0;
  // A stopped schedd: named, it is not in the collector, and each tool says so as for a name it never
  // knew (the tools' own checks, through selection.stopped); the local one, unnamed, as when the pool is down.
  // condor_status asks the collector, which still answers.
  if (faults.stopped && !named && tool !== "condor_status" && DOWN[tool]) {
    const [text, code] = DOWN[tool]!;
    err(text);
    return code;
  }
  if (faults.scheddDown && DOWN[tool]) {
    const [text, code] = DOWN[tool]!;
    err(text);
    return code;
  }
  if (mode === "fail") {
    const f = failText(scheddAddr(loadConfig()))[tool] ?? ["", `ERROR: ${tool} failed\n`, 1];
    if (tool === "condor_submit") out((await import("./submit.ts")).submitBanner(argv));
    out(f[0]);
    err(f[1]);
    return f[2];
  }
  if (mode === "warn") err(`WARNING: Saw slow DNS query, which may impact entire system: getaddrinfo(${loadConfig().host}) took 2.000000 seconds.\n`);
  // A schedd that asks for authentication: every tool that talks to it or to the collector
  // (condor_chirp talks to the starter, condor_version to nobody).
  const security = loadConfig().security;
  if (security && tool !== "condor_chirp" && tool !== "condor_version") {
    const stack = (await import("./security.ts")).authenticate(security, tool);
    if (stack !== undefined) {
      const f = failText(scheddAddr(loadConfig()))[tool] ?? ["", `ERROR: ${tool} failed\n`, 1];
      if (tool === "condor_submit") out((await import("./submit.ts")).submitBanner(argv));
      out(f[0]);
      err(f[1].replace(/CEDAR:6001:Failed to connect to \S+|SECMAN:2007:Failed to end classad message\./, stack));
      return f[2];
    }
  }

  switch (tool) {
    case "condor_submit":
      return (await import("./submit.ts")).condorSubmit(argv, { afterCommit: slowAfter > 0 ? () => sleepAfterCommit(slowAfter) : undefined, holdMs });
    case "condor_q":
      return (await import("./query.ts")).condorQ(argv);
    case "condor_history":
      return (await import("./query.ts")).condorHistory(argv);
    case "condor_status":
      return (await import("./query.ts")).condorStatus(argv);
    case "condor_rm":
    case "condor_hold":
    case "condor_release":
    case "condor_vacate_job":
      return (await import("./actions.ts")).condorRm(tool, argv);
    case "condor_transfer_data":
      return (await import("./actions.ts")).condorTransferData(argv);
    case "condor_tail":
      return (await import("./actions.ts")).condorTail(argv);
    case "condor_chirp":
      return (await import("./chirp.ts")).condorChirp(argv);
    case "condor_version":
      return condorVersion(argv);
    default:
      err(`minicondor: unknown tool '${tool}'\n`);
      return 1;
  }
}

/**
 * Waits until `done()` (hang: never), asking every `everyMs`. A real hung tool waits on its peer
 * forever; this one gives up (exit 143) once nobody can be waiting for it: its home was deleted
 * (the test is over) or its caller died (orphans outlive killed sidecars).
 */
async function waitUntil(done: () => boolean, everyMs: number): Promise<void> {
  process.on("SIGTERM", () => finish(143));
  process.on("SIGINT", () => finish(130));
  const home = homeDir();
  const caller = parentPid(process.pid);
  while (!done()) {
    await Bun.sleep(everyMs);
    const now = parentPid(process.pid);
    if (!fs.existsSync(home) || now === null || now <= 1 || now !== caller || (caller !== null && !pidAlive(caller))) finish(143);
  }
  process.removeAllListeners("SIGTERM");
  process.removeAllListeners("SIGINT");
}

/** The sleep of fault slowafter: a kill is logged as such; a deleted home (test over) ends it early. */
async function sleepAfterCommit(ms: number): Promise<void> {
  process.on("SIGTERM", () => finish(143));
  process.on("SIGINT", () => finish(130));
  const home = homeDir();
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await Bun.sleep(Math.min(250, end - Date.now()));
    if (!fs.existsSync(home)) finish(143);
  }
}

/** src/condor_tools/version.cpp of htcondor/htcondor: options are told apart by their second letter only. */
function condorVersion(args: string[]): number {
  const usage = (rval: number) => {
    err(
      "Usage: condor_version [options]\n   If no options are specified, print the version and platform strings\n   where the tool was built." +
        "  Valid options are:\n   -help\t(this message)\n   -arch\t(print the ARCH string)\n   -opsys\t(print the OPSYS string)\n",
    );
    return rval;
  };
  let arch = false, opsys = false, opsysFirst = false;
  for (const a of args) {
    if (!a.startsWith("-")) {
      err(`ERROR: invalid argument: '${a}'\n`);
      return usage(1);
    }
    switch (a[1]) {
      case "a":
        arch = true;
        break;
      case "o":
        opsys = true;
        if (!arch) opsysFirst = true;
        break;
      case "h":
        return usage(0);
      default:
        err(`ERROR: unrecognized argument: '${a}'\n`);
        return usage(1);
    }
  }
  // CondorVersionInfo splits the platform string "X86_64-Debian_12" into arch and opsys
  const [archV, opsysV] = PLATFORM.replace(/^\$CondorPlatform: /, "").replace(/ \$$/, "").split("-") as [string, string];
  if (opsysFirst) out(opsysV + "\n");
  if (arch) out(archV + "\n");
  if (!opsysFirst && opsys) out(opsysV + "\n");
  if (arch || opsys) return 0;
  out(VERSION + "\n" + PLATFORM + "\n");
  return 0;
}

main().then(finish, (e: unknown) => {
  err(`${tool}: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
  finish(1);
});
