import { LockReentryError } from '../errors';
import type { ReentrantLock } from '../lease/lock';
import type { LockScope } from '../lease/lock-session';

/**
 * The lock the async context `scope` already holds on `names`, as a nested handle when
 * reentrancy is on; `undefined` when the context holds none of them.
 *
 * A context that holds some of them and may not (or cannot) reuse its lock gets a
 * LockReentryError: waiting would be waiting for itself. So does a nested call that asks for
 * what the lock lacks — more resources, or a fencing token the outer lock was taken without:
 * it must not get silently less than it asked for (architecture.md §5.9).
 */
export function nestedLock(
  scope: LockScope | undefined,
  names: readonly string[],
  reentrant: boolean,
  fencing: boolean,
): ReentrantLock | undefined {
  for (; scope !== undefined; scope = scope.outer) {
    const root = scope.lock.root;
    if (!root.isHeld) continue;
    const held = new Set(root.resources);
    if (!names.some((name) => held.has(name))) continue;
    if (!reentrant) {
      throw new LockReentryError(
        names,
        'this async context already holds it (an enclosing using() or @Locked call), ' +
          'and would wait for itself; pass reentrant: true to reuse that lock',
        root.resources,
      );
    }
    if (!names.every((name) => held.has(name))) {
      throw new LockReentryError(
        names,
        'this async context holds only part of it; a nested lock cannot ask for more',
        root.resources,
      );
    }
    if (fencing && root.fencingToken === undefined) {
      throw new LockReentryError(
        names,
        'this async context holds it without a fencing token (taken with fencing off); ' +
          'a nested lock cannot ask for one: take the outer lock with fencing: true',
        root.resources,
      );
    }
    return root.borrow(names);
  }
  return undefined;
}
