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
 * Any existing key blocks, our own value included: every attempt has a fresh owner value, so
 * a key holding this attempt's value can only be a duplicate delivery of this very command,
 * and counting it again would count a vote whose lease this command did not set.
 *
 * GET (not EXISTS) on purpose: a key of another type makes it fail with WRONGTYPE, which the
 * adapter reports as a key conflict instead of as "held" forever.
 *
 * Returns {1} when every key now holds our value with a fresh PX ttl, or {0, pttl} with the
 * remaining lease of the first blocking key (-1 if it has no expiry). The reply is a table so
 * that fencing (a second element on success) slots in without changing its shape.
 */
export const ACQUIRE_SCRIPT = script(
  'acquire',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) then
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
 * Release. KEYS: the lock's keys. ARGV[1]: owner value. ARGV[2]: the release's announcement id
 * ('' for none).
 *
 * Compare-and-delete per key: a key that expired and was re-acquired by someone else is
 * never deleted. Returns how many keys were deleted.
 *
 * With an id in ARGV[2], each deleted key is announced on the channel of the same name (DESIGN
 * §5.8) with the id as the message — one id per release, the same on every node, so a waiter
counts a release once however many nodes announce it (never the owner value, which would let
a listener release the lock) — and waiters retry at once instead of at their next poll. `pcall`: a user whose ACL
 * forbids PUBLISH still releases (its waiters fall back to polling).
 */
export const RELEASE_SCRIPT = script(
  'release',
  `
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
    if ARGV[2] ~= '' then redis.pcall('PUBLISH', KEYS[i], ARGV[2]) end
  end
end
return released
`,
);

/**
 * Acquire with fencing, phase 1 (DESIGN §5.6). KEYS: the lock's keys, then their fence counter
 * keys in the same order. ARGV[1]: owner value, ARGV[2]: ttl in ms.
 *
 * As {@link ACQUIRE_SCRIPT}, and on success also returns F = max(every counter, this server's
 * TIME in µs), as a decimal string (Lua numbers are doubles: `tostring` would print 1.7e+15).
 * Seeding from the server's time keeps tokens increasing even after a node lost its counters
 * in a restart, as long as its clock does not step back past the last token.
 */
export const ACQUIRE_FENCED_SCRIPT = script(
  'acquire-fenced',
  `
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
local time = redis.call('TIME')
local f = tonumber(time[1]) * 1000000 + tonumber(time[2])
for i = n + 1, #KEYS do
  local c = tonumber(redis.call('GET', KEYS[i]) or '0')
  if c > f then f = c end
end
return {1, string.format('%.0f', f)}
`,
);

/**
 * Fencing phase 2 (DESIGN §5.6). KEYS: the lock's keys, then their fence counter keys. ARGV[1]:
 * owner value, ARGV[2]: the token T (decimal string), ARGV[3]: how long a counter is kept (ms).
 *
 * Only while every lock key still holds our value (a holder paused past its expiry gets no
 * token): counter = max(counter, T). Any later holder's quorum meets this one in a node where
 * this write happened while our key existed, and its phase 1 there runs after our key is gone,
 * so it reads ≥ T. Counters expire after ARGV[3] of disuse: by then the server's TIME, which
 * seeds phase 1, is far past any token they held. Returns 1 or 0.
 */
export const FENCE_SCRIPT = script(
  'fence',
  `
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local t = tonumber(ARGV[2])
for i = n + 1, #KEYS do
  local c = tonumber(redis.call('GET', KEYS[i]) or '0')
  if t > c then
    redis.call('SET', KEYS[i], ARGV[2], 'PX', ARGV[3])
  else
    redis.call('PEXPIRE', KEYS[i], ARGV[3])
  end
end
return 1
`,
);

/** Every script, for SCRIPT LOAD when a connection becomes ready. */
export const LOCK_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE_SCRIPT,
  EXTEND_SCRIPT,
  RELEASE_SCRIPT,
  ACQUIRE_FENCED_SCRIPT,
  FENCE_SCRIPT,
];
