import { createHash } from 'node:crypto';

/**
 * The Lua scripts, one constant each. Everything variable reaches them through KEYS and ARGV
 * (never string-built), so a resource name can never inject code, and scripts are cached by
 * SHA on the server.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  /** SHA1 of `source`, for EVALSHA. */
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Acquire. KEYS: the lock's keys (sorted). ARGV[1]: owner value, ARGV[2]: ttl in ms.
 *
 * All-or-nothing on this node: every key is checked before any is written, so a lock on
 * [a, b] never leaves `a` set here when `b` is held by someone else — which also means a node
 * that answers "held" wrote nothing and needs no release.
 *
 * A key that already holds *our* value counts as free: an earlier attempt of the same
 * acquisition may have landed after its timeout, and must not block its own retry.
 *
 * Returns {1} when every key now holds our value with a fresh PX ttl, or {0, pttl} with the
 * remaining lease of the first blocking key (-1 if it has no expiry). The reply is a table so
 * that fencing (a second element on success) slots in without changing its shape.
 */
export const ACQUIRE_SCRIPT = script(
  'acquire',
  `
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}
`,
);

/**
 * Extend. KEYS: the lock's keys. ARGV[1]: owner value, ARGV[2]: new ttl in ms.
 *
 * Compare-and-PEXPIRE, all-or-nothing: extends only if every key still holds our value.
 * A key that expired or was taken over is not re-created: if we no longer hold a node we
 * must not claim it back behind another owner's quorum. Returns 1 or 0.
 */
export const EXTEND_SCRIPT = script(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
);

/**
 * Release. KEYS: the lock's keys. ARGV[1]: owner value.
 *
 * Compare-and-delete per key: a key that expired and was re-acquired by someone else is
 * never deleted. Returns how many keys were deleted.
 */
export const RELEASE_SCRIPT = script(
  'release',
  `
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
  end
end
return released
`,
);
