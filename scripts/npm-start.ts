/**
 * `npm start`: runs the sidecar from the sources. With HTCondor installed (condor_submit in
 * PATH) it runs against it with ./SidecarConfig.yaml. Without, it says so loudly and runs
 * against the bundled emulator (test/minicondor), whose jobs are local processes on this
 * machine. The compiled binary itself never falls back: this script is the only place that does.
 */
import { accessSync, constants, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const args = process.argv.slice(2);
const hasCondor = (process.env.PATH ?? "").split(delimiter).some((d) => {
  try {
    accessSync(join(d, "condor_submit"), constants.X_OK);
    return true;
  } catch {
    return false;
  }
});

const argv = [process.execPath, join(root, "src", "main.bun.ts")];
const env: Record<string, string | undefined> = { ...process.env };
if (hasCondor || args.includes("--condor-bin")) {
  argv.push(...args);
} else {
  const dev = join(root, ".minicondor");
  mkdirSync(dev, { recursive: true });
  const config = join(dev, "SidecarConfig.yaml");
  if (!existsSync(config)) {
    writeFileSync(
      config,
      [
        "# Written by npm start for the bundled emulator; edit freely (it is not tracked).",
        "DataRootFolder: ./data",
        `ContainerRuntime: ${join(root, "test", "minicondor", "shims", "apptainer")}`,
        "Restart:",
        "  BackoffInitialSeconds: 2",
        "  BackoffMaxSeconds: 10",
        "",
      ].join("\n"),
    );
  }
  env.MINICONDOR_HOME = env.MINICONDOR_HOME ?? join(dev, "home");
  if (process.getuid?.() === 0) env.MINICONDOR_ALLOW_ROOT = "1";
  const banner = [
    "",
    "############################################################################",
    "#  No HTCondor found (condor_submit is not in PATH).",
    "#  npm start runs the sidecar against the BUNDLED EMULATOR (test/minicondor):",
    "#  pods run as local processes on this machine, not on an HTCondor pool.",
    "#  For a real pool: install HTCondor, or build the binary (npm run build)",
    "#  and run dist/htcondor-sidecar on a submit node.",
    "############################################################################",
    `   emulator state: ${env.MINICONDOR_HOME}`,
    `   config:         ${config}`,
    "",
  ];
  process.stderr.write(`${banner.join("\n")}\n`);
  argv.push("--condor-bin", join(root, "test", "minicondor", "bin"), "--config", config, "--log-format", "text", ...args);
}

const child = Bun.spawn(argv, { env, stdin: "inherit", stdout: "inherit", stderr: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => child.kill(sig));
process.exit(await child.exited);
