/**
 * When the sweeper sends again what looks lost (a QUEUED node's message, a completed node's
 * undelivered propagation, an entry never dispatched). Something older than the grace period may
 * be lost — or only waiting in a backlog, where every duplicate makes the backlog longer. So the
 * resend points thin out with age: grace, 2 × grace, 4 × grace, … until the interval reaches
 * `capMs`, then every `capMs`. A lost message is resent once the grace period is over; one stuck
 * in a backlog gets a handful of duplicates, not one per sweep.
 */

/** The first resend point strictly after `ageMs` (ages in ms since the thing was due). */
export function resendPointAfter(ageMs: number, graceMs: number, capMs: number): number {
  let point = graceMs;
  let step = graceMs;
  while (point <= ageMs && step < capMs) {
    point += step;
    step = Math.min(capMs, point);
  }
  if (point > ageMs) return point;
  return point + (Math.floor((ageMs - point) / capMs) + 1) * capMs;
}

/**
 * True when a resend point lies in (`previousAgeMs`, `ageMs`]: the age at this sweep has passed a
 * point the previous sweep (at `previousAgeMs`; -Infinity if none) had not reached.
 */
export function resendDue(ageMs: number, previousAgeMs: number, graceMs: number, capMs: number): boolean {
  if (ageMs < graceMs) return false;
  if (previousAgeMs < graceMs) return true;
  return resendPointAfter(previousAgeMs, graceMs, capMs) <= ageMs;
}
