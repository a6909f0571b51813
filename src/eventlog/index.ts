/**
 * The job event log, in one folder for both modes (docs/status.md#following-the-event-log): the
 * sidecar (service/follow.ts) and the HTCJob operator (operator/events.ts) import only this face.
 *
 * - parse.ts: the pure reader of the log's bytes (events, boundaries, formats, the per-job cap);
 * - files.ts: the shared logs on disk (the `events/` folder, read without following a symlink);
 * - follow.ts: the engine that keeps the logs' records, reads them as the folder changes and at
 *   least every POLL_MS, and runs its user's pass.
 */
export {
  createEventLogFollow,
  type EventLogBooks,
  type EventLogFollow,
  type EventLogRecord,
  LOG_KEEP_MS,
  POLL_MS,
  SETTLE_DELAYS_MS,
  SWEEP_AGE_MS,
} from "./follow.ts";
export { eventsDir } from "./files.ts";
export { readEventLog } from "./parse.ts";
