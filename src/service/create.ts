/**
 * POST /create (docs/interlink.md#post-create): plan → render → write the pod folder →
 * condor_submit → record the job id. A pod is submitted at most once: a repeated create answers the
 * recorded job, joins a create that runs, or asks the schedd about one that was interrupted.
 */
import { type JobId, jobIdString } from "../condor/parse.ts";
import { errorText, SidecarError } from "../core/errors.ts";
import { planJob } from "../core/plan.ts";
import type { CreateRequest } from "../core/pod.ts";
import { jobCommands, renderBatch } from "../render/submit.ts";
import { renderWrapper } from "../render/wrapper.ts";
import { podDir, removePodDir, writePodFiles } from "../store/files.ts";
import type { CreateAnswer, Ctx } from "./context.ts";
import { findJobByUid } from "./find-by-uid.ts";
import { jid, secretPaths } from "./records.ts";
import { type Submitter, SubmitUndecided } from "./submitter.ts";

export function createCreateService(c: Ctx, submit: Submitter): { create(req: CreateRequest): Promise<CreateAnswer> } {
  /** The create is over without a job: its folder and its record go (best effort: the disk may be what failed). */
  function abandon(uid: string, dir: string, secrets: readonly string[]): void {
    for (const cleanup of [() => removePodDir(dir, secrets), () => c.store.abandon(uid)]) {
      try {
        cleanup();
      } catch (e) {
        c.log.error("cannot clean up after a failed create", { uid, dir, error: String(e) });
      }
    }
  }

  async function doCreate(req: CreateRequest): Promise<CreateAnswer> {
    const { uid, name, namespace } = req.pod.metadata;
    c.tracing.annotate({ "k8s.pod.uid": uid, "k8s.pod.name": name, "k8s.namespace.name": namespace });
    const existing = c.store.get(uid);
    if (existing?.phase === "submitted" || existing?.phase === "finished") return { PodUID: uid, PodJID: jid(existing) };
    if (existing?.phase === "removing" || existing?.phase === "deleted") {
      throw new SidecarError("gone", `pod "${namespace}/${name}" (${uid}) was already deleted; a late create submits nothing`);
    }
    if (existing?.phase === "creating") {
      // Left by a crash or a timed-out submit: the schedd knows whether the job exists.
      const found = await findJobByUid(c, existing);
      if (found) {
        c.store.recordJob(uid, found.cluster, found.proc, c.now());
        c.tracing.pods.submitted({ ...existing, phase: "submitted", cluster: found.cluster, proc: found.proc });
        c.queue.wake();
        return { PodUID: uid, PodJID: jobIdString(found) };
      }
      removePodDir(existing.dir, secretPaths(existing));
      c.store.abandon(uid);
    }

    const plan = c.tracing.step("plan", () => planJob(req, c.planConfig));
    const wrapper = renderWrapper(plan);
    const dir = podDir(c.dataRoot, uid);
    // Not spooled: the job writes to the sidecar's shared event log, which says when to ask about it.
    const eventLog = c.follower.logForNewJob();
    const job = { dir, label: `${plan.batchName} (uid ${uid})`, commands: jobCommands(plan, eventLog?.path) };
    const containers = [...plan.initContainers, ...plan.containers].map((ct) => ({
      name: ct.name,
      init: ct.init,
      image: ct.statusImage ?? (ct.image.kind === "host" ? "host" : ct.image.uri),
    }));
    const secrets = plan.files.filter((f) => f.secret).map((f) => f.path);
    c.store.accept({ uid, name, namespace, dir, spooled: c.spool, containers, secrets, createdAt: c.now(), eventLog: eventLog?.name });
    c.queue.noteWidth(containers);
    let id: JobId;
    try {
      const enc = new TextEncoder();
      try {
        writePodFiles(dir, [
          ...plan.files,
          { path: "job.sh", content: enc.encode(wrapper), mode: 0o700, secret: false },
          { path: "job.sub", content: enc.encode(renderBatch([job])), mode: 0o600, secret: false },
        ]);
      } catch (err) {
        throw new SidecarError("unavailable", `cannot write the job's files under ${dir}: ${errorText(err)}`);
      }
      id = await c.tracing.step("condor_submit", () => submit({ uid, job, podOptions: (plan.submit.podOptions ?? []).length > 0 }), (j) => ({
        "htcondor.job.id": jobIdString(j),
      }));
    } catch (err) {
      // The schedd may have queued it: the record stays for a repeated create, a delete or the reaper.
      if (err instanceof SubmitUndecided) throw new SidecarError("timeout", `Cannot submit job for pod "${namespace}/${name}": ${err.message}`);
      abandon(uid, dir, secrets);
      if (err instanceof SidecarError) throw new SidecarError(err.kind, `Cannot submit job for pod "${namespace}/${name}": ${err.message}`);
      throw err;
    }
    c.store.recordJob(uid, id.cluster, id.proc, c.now());
    c.tracing.pods.submitted({ uid, name, namespace, phase: "submitted", cluster: id.cluster, proc: id.proc });
    c.queue.wake({ eventLog: eventLog?.name });
    c.follower.recorded(jobIdString(id));
    for (const w of plan.warnings) c.log.warn("create", { uid, warning: w });
    return { PodUID: uid, PodJID: jobIdString(id) };
  }

  return {
    create(req) {
      const uid = req.pod.metadata.uid;
      const running = c.inflight.get(uid);
      if (running) return running;
      const p = doCreate(req);
      c.inflight.set(uid, p);
      p.finally(() => c.inflight.delete(uid)).catch(() => {});
      return p;
    },
  };
}
