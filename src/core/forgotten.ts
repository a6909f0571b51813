/**
 * Pods that interLink forgot (docs/status.md#pods-interlink-forgot). interLink's virtual kubelet
 * asks about every pod it still tracks, one pod per `/status` call, in rounds
 * (docs/interlink.md#how-often-the-virtual-kubelet-asks); a pod whose `/delete` failed is dropped
 * and never named again. So a pod whose job is still queued or running, and that no call has named
 * while calls about other pods kept coming, has been forgotten.
 *
 * Time here is status-call activity, not the wall clock: the activity clock advances only by the
 * gaps between two calls that name pods, and a gap longer than `maxGapMs` is silence that counts
 * for nothing. A round ends when a pod is named a second time since the round began. A silent
 * interLink (no calls at all, or only pings) therefore forgets nothing, however long it stays
 * silent. Pure: the time comes in as an argument, the state is the caller's.
 */

/** The rules, from SidecarConfig's `ForgottenPods` (milliseconds). */
export interface ForgetRules {
  /** Activity without the pod named before it counts as forgotten. */
  afterMs: number;
  /** Rounds of the virtual kubelet's loop, at least, without the pod named. */
  rounds: number;
  /** A gap between two calls longer than this is silence: it does not advance the clock. */
  maxGapMs: number;
  /** Activity without the pod named before its job is removed; 0: never removed. */
  removeAfterMs: number;
}

/** How much status activity the sidecar has seen (one per sidecar, shared by its schedds). */
export interface StatusActivity {
  /** Milliseconds of activity so far. */
  activeMs: number;
  /** Completed rounds so far. */
  round: number;
  /** When the last call naming a pod came (epoch ms). */
  lastCallAt?: number;
  /** The pods named in the round under way. */
  thisRound: Set<string>;
}

/** Where the activity clock stood when a pod was last named (or first seen). */
export interface Mark {
  activeMs: number;
  round: number;
}

export function newActivity(): StatusActivity {
  return { activeMs: 0, round: 0, thisRound: new Set() };
}

export const markOf = (a: StatusActivity): Mark => ({ activeMs: a.activeMs, round: a.round });

/**
 * A status call named these pods at `now`: the clock advances by the gap since the last such call
 * (unless it was silence), and a pod named twice closes the round. No pods (a ping): nothing moves.
 */
export function noteNamed(a: StatusActivity, uids: readonly string[], now: number, maxGapMs: number): void {
  if (uids.length === 0) return;
  if (a.lastCallAt !== undefined) {
    const gap = now - a.lastCallAt;
    if (gap > 0 && gap <= maxGapMs) a.activeMs += gap;
  }
  a.lastCallAt = Math.max(now, a.lastCallAt ?? now);
  for (const uid of uids) {
    if (a.thisRound.has(uid)) {
      a.round++;
      a.thisRound.clear();
    }
    a.thisRound.add(uid);
  }
}

/** A pod judged forgotten. */
export interface Forgotten {
  uid: string;
  /** Seconds of activity since the pod was last named. */
  idleSeconds: number;
  /** Rounds since the pod was last named. */
  rounds: number;
  /** Whether its job is due for removal (`removeAfterMs`). */
  remove: boolean;
}

/**
 * Which of `candidates` (pods whose job is known to be queued or running) are forgotten. A
 * candidate never named is marked now (its clock starts when it is first seen, and again after a
 * restart); the marks of pods no longer candidates are dropped.
 */
export function judgeForgotten(candidates: readonly string[], marks: Map<string, Mark>, a: StatusActivity, rules: ForgetRules): Forgotten[] {
  const keep = new Set(candidates);
  for (const uid of marks.keys()) if (!keep.has(uid)) marks.delete(uid);
  const out: Forgotten[] = [];
  for (const uid of candidates) {
    let m = marks.get(uid);
    if (!m) marks.set(uid, m = markOf(a));
    const idleMs = a.activeMs - m.activeMs;
    const rounds = a.round - m.round;
    if (idleMs < rules.afterMs || rounds < rules.rounds) continue;
    out.push({ uid, idleSeconds: Math.floor(idleMs / 1000), rounds, remove: rules.removeAfterMs > 0 && idleMs >= rules.removeAfterMs });
  }
  return out;
}
