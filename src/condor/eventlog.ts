/**
 * A forwarder, only for test/minicondor/fidelity.test.ts, which still names this path while its
 * folder is being changed elsewhere: the job event log reader is src/eventlog/parse.ts. Nothing
 * in src/ imports this file; it goes once that test imports src/eventlog/parse.ts.
 */
export { readEventLog } from "../eventlog/index.ts";
