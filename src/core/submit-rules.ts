/**
 * The rules for what may be written into a submit description: command names and values. The
 * submit renderer (render/submit.ts) applies them; the planner (the submit-options annotation)
 * and the config (ExtraLines) check with them first, so that a bad line is refused where it
 * came from (docs/htcondor.md#submit-file-rules).
 */

/** A submit command name (condor_submit's own commands and macros). */
const COMMAND = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A ClassAd attribute name: what follows `MY.` (or `+`) in a job-attribute line. */
const ATTRIBUTE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Commands that define the job's contract with the wrapper and the sidecar; an extra line must
 * not replace them (`DOLLAR` would change how every escaped `$` expands).
 */
const RESERVED = new Set(
  [
    "queue",
    "include",
    "dollar",
    "universe",
    "executable",
    "transfer_executable",
    "arguments",
    "args",
    "environment",
    "env",
    "getenv",
    "output",
    "error",
    "log",
    // The shared event log (docs/status.md#following-the-event-log): its format is every job's,
    // and DAGMan's second log would write the job's events elsewhere.
    "log_xml",
    "dagman_log",
    "input",
    "transfer_output_files",
    "transfer_input_files",
    "should_transfer_files",
    "when_to_transfer_output",
    "want_io_proxy",
    "initialdir",
    "iwd",
  ],
);

/**
 * Job attributes those commands set: `MY.Environment = "…"` would replace `environment` just as
 * well, so the same contract forbids them as `MY.X` / `+X`. InterLink* (the pod's identity, its
 * container states) is ours too, and the schedd's own bookkeeping is not the pod's to write.
 */
const RESERVED_ATTRIBUTES = new Set(
  [
    "cmd",
    "arguments",
    "args",
    "environment",
    "env",
    "in",
    "out",
    "err",
    "userlog",
    "userlogusexml",
    "dagmannodeslog",
    "iwd",
    "jobuniverse",
    "transferexecutable",
    "transferin",
    "transferinput",
    "transferoutput",
    "shouldtransferfiles",
    "whentotransferoutput",
    "wantioproxy",
    "owner",
    "user",
    "clusterid",
    "procid",
    "jobstatus",
  ],
);

/**
 * Submit commands (lower case) and the job attributes behind them that name files or credentials
 * of the submit host, which condor_submit reads or, with `-spool`, uploads into the job's sandbox
 * (HTCondor's submit_utils.h and condor_attributes.h). A pod or an HTCJob that could set one could
 * send itself whatever the sidecar's user can read: its token, its kubeconfig, another pod's
 * secrets. The site's own ExtraLines may use them; an allowlist for users may not.
 */
const READS_SUBMIT_HOST = new Set([
  "x509userproxy",
  "use_x509userproxy",
  "scitokens_file",
  "public_input_files",
  "transfer_plugins",
  "transfer_checkpoint_files",
  "transfer_output_remaps",
  "output_destination",
  "encrypt_input_files",
  "dont_encrypt_input_files",
  "jar_files",
  "aws_access_key_id_file",
  "aws_secret_access_key_file",
  "s3_access_key_id_file",
  "s3_secret_access_key_file",
  "gs_access_key_id_file",
  "gs_secret_access_key_file",
  "ec2_access_key_id",
  "ec2_secret_access_key",
  "ec2_user_data_file",
  "ec2_keypair_file",
  "ec2_key_pair_file",
  "gce_auth_file",
  "gce_metadata_file",
  "gce_json_file",
  "azure_auth_file",
  "my.x509userproxy",
  "my.scitokensfile",
  "my.publicinputfiles",
  "my.transferplugins",
  "my.transferoutputremaps",
  "my.outputdestination",
  "my.encryptinputfiles",
  "my.dontencryptinputfiles",
  "my.ec2accesskeyid",
  "my.ec2secretaccesskey",
  "my.ec2keypairfile",
  "my.ec2userdatafile",
  "my.gceauthfile",
  "my.gcemetadatafile",
  "my.gcejsonfile",
  "my.azureauthfile",
]);

/**
 * Why a command may not be on a users' allowlist (`Channels.SubmitOptions`, `HTCJob.SubmitOptions`)
 * although the renderer can write it, or undefined.
 */
export function userSubmitKeyProblem(key: string): string | undefined {
  const r = submitKey(key);
  if (!("key" in r)) return r.problem;
  if (READS_SUBMIT_HOST.has(r.key.toLowerCase())) {
    return "it names files or credentials of the submit host, which condor_submit would read or upload for the job; only the site's ExtraLines may set it";
  }
  return undefined;
}

/**
 * The one rule for a submit command name, used by the renderer, the submit-options annotation
 * and the config's ExtraLines: the canonical key, or why it cannot be written.
 *
 * `+X` and `MY.X` are the same thing to condor_submit (docs/htcondor.md#submit-file-rules); both
 * are written `MY.X`, so that the reserved-name checks see one spelling and a pod cannot reach
 * `MY.InterLinkPodUID` by writing `+InterLinkPodUID`.
 */
export function submitKey(key: string): { key: string } | { problem: string; reserved: boolean } {
  const attr = key.startsWith("+") ? key.slice(1) : /^my\./i.test(key) ? key.slice(3) : undefined;
  if (attr !== undefined) {
    if (!ATTRIBUTE.test(attr)) return { problem: "not a job attribute name (+Name or MY.Name: letters, digits and '_')", reserved: false };
    const lower = attr.toLowerCase();
    // HTCJob…: an HTCJob's identity and its operator's (src/operator/htcjob-plan.ts).
    if (lower.startsWith("interlink") || lower.startsWith("htcjob") || RESERVED_ATTRIBUTES.has(lower)) {
      return { problem: "it is set by the sidecar", reserved: true };
    }
    return { key: `MY.${attr}` };
  }
  if (!COMMAND.test(key)) return { problem: "not a submit command name (letters, digits and '_'; +Name or MY.Name for job attributes)", reserved: false };
  // InterLink… commands are the sidecar's macros (a batch's per-job values, render/submit.ts).
  if (RESERVED.has(key.toLowerCase()) || key.toLowerCase().startsWith("interlink")) return { problem: "it is set by the sidecar", reserved: true };
  return { key };
}

/**
 * The one rule for a submit value: why it cannot be written, or undefined. condor_submit reads
 * the file line by line: a line ends at `\n` (a NUL ends what it reads of one), the whitespace
 * C's isspace() sees at its end (space, \t, \v, \f, \r) is trimmed, and a line that then ends
 * in `\` continues onto the next one, which becomes part of the value (observed on HTCondor 25:
 * `rank = 1 \` took in the next line; docs/htcondor.md#submitting-many-pods-at-once). A value that
 * could do any of that would change another line of the file. Any Unicode space after the backslash
 * counts, so that no locale's idea of a space matters.
 */
export function submitValueProblem(value: string): string | undefined {
  if (/[\r\n\0]/.test(value)) return "must not contain a line break or NUL";
  if (/\\\s*$/.test(value)) return "must not end in '\\', which would continue it onto the next line of the submit file";
  return undefined;
}
