import { describeValue, LockResourceError } from './errors';

/** One resource name or several: a lock on several is taken all-or-nothing. */
export type Resources = string | readonly string[];

/**
 * Validates the resources of a lock and puts them in canonical order: de-duplicated (a key
 * listed twice must not make the lock conflict with itself) and sorted, so that two clients
 * locking [a, b] and [b, a] write the same keys in the same order and cannot livelock.
 *
 * @param maxLength longest name accepted, in UTF-8 bytes: a name is sent to every node on
 *   every attempt, and one taken from a request body must not become a 90 KB key.
 * @throws LockResourceError for an empty list, a name that is not a non-empty string, a name
 *   longer than `maxLength`, or a name with a lone surrogate.
 */
export function normalizeResources(resources: unknown, maxLength: number): string[] {
  if (typeof resources === 'string') {
    assertResource(resources, maxLength);
    return [resources];
  }
  if (!Array.isArray(resources)) {
    throw new LockResourceError(
      `A lock resource must be a non-empty string or an array of them, got ${describeValue(resources)}`,
      resources,
    );
  }
  if (resources.length === 0) {
    throw new LockResourceError(
      'A lock needs at least one resource, got an empty array',
      resources,
    );
  }
  for (const resource of resources) assertResource(resource, maxLength);
  return resources.length === 1 ? [resources[0]] : [...new Set<string>(resources)].sort();
}

function assertResource(resource: unknown, maxLength: number): asserts resource is string {
  if (typeof resource !== 'string' || resource.length === 0) {
    // The value itself only in the log line: it may be built from a request.
    throw new LockResourceError(
      `A lock resource must be a non-empty string, got ${typeof resource === 'string' ? 'an empty string' : typeof resource}`,
      resource,
      `A lock resource must be a non-empty string, got ${describeValue(resource)}`,
    );
  }
  // A UTF-8 byte is at most one UTF-16 unit, and a unit at most 3 bytes: most names are decided
  // without encoding them.
  if (resource.length * 3 > maxLength && Buffer.byteLength(resource) > maxLength) {
    const said = `A lock resource must be at most ${maxLength} bytes long`;
    const bytes = Buffer.byteLength(resource);
    // The option's name only in the log line: a caller reads the message (architecture.md §5.12).
    throw new LockResourceError(
      `${said}, got ${bytes} bytes`,
      resource,
      `${said} (option maxResourceLength), got ${bytes} bytes`,
    );
  }
  // NUL separates a lock key from its fence counter key (fencing.ts).
  if (resource.includes('\u0000')) {
    throw new LockResourceError('A lock resource must not contain a NUL character', resource);
  }
  // A lone surrogate is encoded as U+FFFD on the wire, so "a\uD800" and "a\uDC00" would be one
  // key: two different resources silently sharing (or, worse, splitting) one lock.
  if (!isWellFormed(resource)) {
    throw new LockResourceError(
      'A lock resource must be well-formed Unicode (it contains a lone surrogate)',
      resource,
    );
  }
}

/** `String.prototype.isWellFormed` (Node ≥ 20), typed here since the build targets ES2022. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}
