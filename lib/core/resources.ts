import { describeValue, LockResourceError } from './errors';

/** One resource name or several: a lock on several is taken all-or-nothing. */
export type Resources = string | readonly string[];

/**
 * Validates the resources of a lock and puts them in canonical order: de-duplicated (a key
 * listed twice must not make the lock conflict with itself) and sorted, so that two clients
 * locking [a, b] and [b, a] write the same keys in the same order and cannot livelock.
 *
 * @throws LockResourceError for an empty list, or a name that is not a non-empty string.
 */
export function normalizeResources(resources: unknown): string[] {
  if (typeof resources === 'string') {
    assertResource(resources);
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
  for (const resource of resources) assertResource(resource);
  return resources.length === 1 ? [resources[0]] : [...new Set<string>(resources)].sort();
}

function assertResource(resource: unknown): asserts resource is string {
  if (typeof resource !== 'string' || resource.length === 0) {
    throw new LockResourceError(
      `A lock resource must be a non-empty string, got ${describeValue(resource)}`,
      resource,
    );
  }
}
