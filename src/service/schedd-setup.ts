/**
 * The schedds the sidecar submits to, set up at start (docs/schedds.md): each one's access, spool
 * mode and data folder, the claim each data folder keeps of the schedd whose pods it holds, and the
 * start-time check of a schedd name that is a host name. The router in front of their services is
 * schedds.ts.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Condor } from "../condor/tools.ts";
import { errorText } from "../core/errors.ts";
import { ConfigError, type FileConfig } from "../config.ts";
import { type CliOptions, condorAccess, isRemote, UsageError } from "../flags.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../runtime/sleep.ts";
import type { Runtime } from "../runtime/types.ts";
import { credentialFileKind, type Prepared } from "../mode-setup.ts";
import { ensureDir } from "../store/files.ts";
import { openStore, type Store } from "../store/store.ts";

/** One schedd the sidecar submits to: how to reach it, whether its jobs are spooled, and its data folder. */
export interface Member {
  sd?: FileConfig["Schedds"][number];
  /** Its name as configured ("" for HTCondor's own default schedd). */
  name: string;
  prepared: Prepared;
  root: string;
  /** How start-up errors name it. */
  label: string;
  /**
   * What its PodJIDs begin with (docs/schedds.md#job-ids): nothing for the schedd of DataRootFolder,
   * whose pods keep the `<cluster>.<proc>` they had with one schedd; `<schedd>#` for the others.
   */
  jidPrefix: string;
}

/**
 * The schedds of `Schedds` (docs/schedds.md), or the one of --schedd-name (or none): with one, the
 * sidecar is exactly what it is without the list. Each has its own access (-name, -pool) and spool
 * mode; the first keeps DataRootFolder, the others get folders of their own.
 */
export function scheddMembers(runtime: Runtime, o: CliOptions, p: Prepared): Member[] {
  if (p.config.Schedds.length > 0 && o.scheddName !== undefined) {
    throw new ConfigError(`SidecarConfig.yaml: Schedds: cannot be used together with --schedd-name ${o.scheddName}: list that schedd in Schedds`);
  }
  if (p.config.Schedds.length === 0) {
    return [{ name: o.scheddName ?? "", prepared: p, root: p.dataRoot, label: `--schedd-name ${o.scheddName}`, jidPrefix: "" }];
  }
  return p.config.Schedds.map((sd, i) => {
    const access = condorAccess(
      { ...o, scheddName: sd.Name, collectorHost: sd.Pool || o.collectorHost },
      runtime.hostname(),
      o.proxy ? credentialFileKind(o.proxy) : undefined,
      p.access.tokenCopy?.dir ?? join(p.dataRoot, "idtokens"),
    );
    const spoolMode = sd.Spool ?? p.spoolMode;
    const spool = spoolMode === "always" || (spoolMode === "auto" && access.remoteSchedd);
    const root = i === 0 ? p.dataRoot : join(p.dataRoot, "schedds", sd.Name.replace(/[^A-Za-z0-9._@-]/g, "_"));
    return {
      sd,
      name: sd.Name,
      prepared: { ...p, access, spoolMode, spool },
      root,
      label: `SidecarConfig.yaml: Schedds.${i}.Name ${sd.Name}`,
      jidPrefix: i === 0 ? "" : `${sd.Name}#`,
    };
  });
}

/**
 * Whether two schedd names, as -name takes them, name one schedd: the same name without regard to
 * case (HTCondor compares them so), or "" (HTCondor's default schedd: no -name) and a name without
 * "@" that is this host. Without "@" a name is a host name, and the schedd of a host that sets no
 * SCHEDD_NAME is named after the host (build_valid_daemon_name, src/condor_utils/get_daemon_name.cpp):
 * it is the one the tools reach with no -name (Daemon::getDaemonInfo compares the name with the
 * local schedd's).
 */
export function sameSchedd(a: string, b: string, localHost: string): boolean {
  if (a.toLowerCase() === b.toLowerCase()) return true;
  const named = a === "" ? b : b === "" ? a : undefined;
  return named !== undefined && !named.includes("@") && !named.startsWith("<") && !isRemote(named, localHost);
}

const describe = (name: string) => (name === "" ? `HTCondor's default schedd (no --schedd-name)` : `schedd "${name}"`);

/**
 * Each data folder says in its file `schedd` whose pods it holds (docs/schedds.md#each-data-folder-holds-one-schedds-pods),
 * with one schedd too: a store holds the jobs of one schedd (job ids are per schedd), and a
 * changed --schedd-name or a reordered `Schedds` must not hand them to another. The file is
 * written when the folder is first used, and checked at every start after. A folder from before
 * the file (`records` pods in its store) is the configured schedd's when there is one; with a
 * list of several it could be any of them, so the start is refused until the sidecar has started
 * once with that schedd alone. `members`: all of them (the message names the right order).
 */
export function claimDataRoot(m: Member, members: readonly Member[], records: number, localHost: string): void {
  const file = join(m.root, "schedd");
  const list = members.length > 1;
  if (!existsSync(file)) {
    if (records > 0 && list && m === members[0]) {
      throw new ConfigError(
        `SidecarConfig.yaml: Schedds: the data folder ${m.root} holds ${records} pods of a version that did not record their schedd, which the list cannot tell: start once as before, with that schedd alone (--schedd-name, or neither for HTCondor's default schedd), which records it in ${file}; then list it first in Schedds and the others after it`,
      );
    }
    return writeFileSync(file, `${m.name}\n`, { mode: 0o600 });
  }
  const owner = readFileSync(file, "utf8").trim();
  if (sameSchedd(owner, m.name, localHost)) return;
  const holder = members.find((x) => sameSchedd(owner, x.name, localHost));
  const others = members.filter((x) => x !== holder).map((x) => `"${x.name}"`).join(", ");
  const how = !list
    ? `start with that schedd as before (${owner === "" ? "no --schedd-name" : `--schedd-name ${owner}`})${
      m.name === "" ? "" : `, or list it first in Schedds and "${m.name}" after it`
    }`
    : holder
    ? `keep "${holder.name}" (the schedd of the data folder) first in Schedds and add ${others} after it`
    : `list that schedd first in Schedds and the others after it`;
  throw new ConfigError(
    `${list ? "SidecarConfig.yaml: Schedds" : m.name === "" ? "no --schedd-name" : m.label}: the data folder ${m.root} holds the pods of ${
      describe(owner)
    }, not of ${describe(m.name)} (job ids are per schedd): ${how}; if both name the same schedd, write the new name into ${file}`,
  );
}

/**
 * Each member's data folder and store, opened in the order of the list, each folder's claim checked
 * (claimDataRoot) once its store says how many pods it holds. A refused claim closes what was
 * opened: the start stops there, before any schedd is asked anything.
 */
export function openMemberStores(runtime: Runtime, members: readonly Member[]): Store[] {
  const stores: Store[] = [];
  for (const m of members) {
    ensureDir(m.root);
    ensureDir(join(m.root, "pods"));
    const storePath = join(m.root, "state.db");
    const store = openStore(runtime.openSqlite(storePath), storePath);
    stores.push(store);
    try {
      claimDataRoot(m, members, Object.values(store.countByPhase()).reduce((a, b) => a + b, 0), runtime.hostname());
    } catch (err) {
      stores.forEach((s) => s.close());
      throw err;
    }
  }
  return stores;
}

/**
 * A --schedd-name without "@" is a host name that every condor tool resolves before it does
 * anything else (docs/htcondor.md#a-schedd-name-without--is-a-host-name): one that does not
 * resolve makes every call fail, so the sidecar refuses to start with it. condor_q itself is
 * asked, so that HTCondor's own resolver and configuration decide, and asked again for
 * `waitMs` (ScheddNameResolveSeconds: a name server may come up after the sidecar). Anything else
 * condor_q says, a collector or schedd that does not answer included, is the ping's business.
 */
export async function checkScheddName(condor: Condor, name: string, label: string, log: Logger, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let wait = 1_000;; wait = Math.min(2 * wait, 8_000)) {
    let said: string | undefined;
    try {
      await condor.query({ constraint: "false", attributes: ["ClusterId"] });
      return;
    } catch (err) {
      said = /condor_q exited with \S+: (.*\bunknown host\b.*)$/.exec(errorText(err))?.[1];
      if (said === undefined) return;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new UsageError(
        `${label}: condor_q says "${said}" (still after ${
          waitMs / 1000
        } s): a schedd name without "@" is a host name, and this one does not resolve; give a host name that does, or name@host`,
      );
    }
    log.warn(`${label.replace(/ \S+$/, "")} does not resolve (yet); asking again`, {
      scheddName: name,
      condorQ: said,
      retryInSeconds: Math.min(wait, left) / 1000,
    });
    await sleep(Math.min(wait, left), new AbortController().signal);
  }
}
