import type { LockLostError, LockSession } from '../core';

/**
 * Locks kept past their work for `minHold`, by lock manager: what the manager's shutdown releases
 * at once (otherwise closing it would report them lost).
 */
const kept = new WeakMap<object, Set<() => Promise<unknown>>>();

/**
 * Ends a `@Locked` call's lock no earlier than `minHold` ms after it was acquired (ShedLock's
 * `lockAtLeastFor`). A job that took 1 ms would otherwise free its tick's lock at once, and an
 * instance whose clock is a few hundred ms behind would fire the same tick then and run it
 * again. The call itself returns now: the lock stays held (and auto-extended) in the
 * background, then is released; the caller learns only of a loss during its work.
 *
 * @param owner the lock manager, for {@link releaseKeptLocks} at shutdown.
 * @returns what `session.end()` would: the LockLostError if the lock was lost during the work.
 */
export function endAfterMinHold(
  session: LockSession,
  minHold: number,
  acquiredAt: number,
  owner: object,
): Promise<LockLostError | undefined> {
  const left = minHold - (performance.now() - acquiredAt);
  if (left <= 0 || !session.lock.isValid()) return session.end();
  let set = kept.get(owner);
  if (set === undefined) kept.set(owner, (set = new Set()));
  const locks = set;
  const release = () => {
    clearTimeout(timer);
    locks.delete(release);
    return session.end();
  };
  const timer = setTimeout(() => void release(), left);
  // A kept lock must not keep a process alive that has nothing else to do.
  timer.unref();
  locks.add(release);
  return Promise.resolve(session.lock.lostReason);
}

/** Releases at once every lock {@link endAfterMinHold} keeps for `owner` (its shutdown). */
export async function releaseKeptLocks(owner: object): Promise<void> {
  const set = kept.get(owner);
  if (set === undefined) return;
  await Promise.all([...set].map((release) => release()));
}
