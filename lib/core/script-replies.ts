import type { AcquireReply, NodeStanding } from './node';

/**
 * What the lock scripts (scripts.ts) answer, read into the node port's terms, and how Redis
 * words the errors about them: one reading for every adapter, so two clients can never disagree
 * on what a reply means.
 */

/** A granted acquire without fencing (shared: the hot path allocates nothing for it). */
export const ACQUIRED: AcquireReply = Object.freeze({ acquired: true });

/** ACQUIRE_SCRIPT's reply: `{1}` granted, or `{0, pttl}` of the blocking key (-1: no expiry). */
export function acquireReply(reply: unknown): AcquireReply {
  const [granted, pttl] = reply as [number, number?];
  return granted === 1 ? ACQUIRED : { acquired: false, pttl: pttl ?? -1 };
}

/** ACQUIRE_FENCED_SCRIPT's reply: `{1, fence}` granted, or `{0, pttl}` of the blocking key. */
export function fencedAcquireReply(reply: unknown): AcquireReply {
  const [granted, figure] = reply as [number, number | string];
  return granted === 1
    ? { acquired: true, fence: Number(figure) }
    : { acquired: false, pttl: Number(figure) };
}

/** Redis's answer to EVALSHA of a script it does not have cached. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Redis's answer when a lock key holds a value that is not a string. */
export function isWrongType(error: unknown): boolean {
  return error instanceof Error && error.message.includes('WRONGTYPE');
}

/** STANDING_SCRIPT's reply: `{stamp or '', ms to the horizon, floor}`. */
export function standingReply(reply: unknown): NodeStanding {
  const [stamp, left, floor] = reply as [string, string | number, string | number];
  return {
    stamp: stamp === '' || stamp === null ? undefined : String(stamp),
    horizonLeftMs: Number(left),
    floor: Number(floor),
  };
}

/** Redis's answer to a command the connection's ACL user may not run (`NOPERM`). */
export function isNoPermission(error: unknown): boolean {
  return error instanceof Error && /NOPERM/.test(error.message);
}
