import { script, type LuaScript } from './lua-script';
import {
  ACQUIRE_QUEUED_SCRIPT,
  HAND_OFF_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  markStart,
  PLAIN_RESERVATION,
  RESERVATION_PREFIX,
  UNCONTENDED_HAND_OFF_SCRIPT,
} from './queue-scripts';
import { HORIZON_SCRIPT, RESTORE_FLOOR_SCRIPT, STANDING_SCRIPT } from './standing-scripts';
import { HANDED_ON } from '../lease/owner-value';
import { CLEANUP_MARK } from '../acquisition/release-notices';

export type { LuaScript } from './lua-script';
export {
  ACQUIRE_QUEUED_SCRIPT,
  HAND_OFF_SCRIPT,
  UNCONTENDED_HAND_OFF_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  RESERVATION_PREFIX,
  HORIZON_SCRIPT,
  RESTORE_FLOOR_SCRIPT,
  STANDING_SCRIPT,
};

/** The byte a fair lock's owner value starts with (owner-value.ts HANDED_ON), as Lua's `string.byte` reads it. */
const HANDED_ON_BYTE = HANDED_ON.charCodeAt(0);
/** {@link PLAIN_RESERVATION} as a Lua string literal (its NULs escaped), for the scripts' compares. */
const PLAIN_TURN = `'${PLAIN_RESERVATION.replace(/\0/g, '\\0')}'`;

/**
 * Lua that marks `key` as waited for by acquisitions outside the fair queues (issue 24 item 1):
 * `key` + NUL + `p` holds when the oldest of them started waiting, on this server's clock (its
 * time minus `age` ms), and the value they waited behind (`started|holder`), kept `keep` ms past
 * the key's lease. A fair hand-off by that holder reads it (HAND_OFF_SCRIPT): plain waiters that
 * waited longer than every queued group get the next turn. Built from the lock key inside the
 * script, as the queue key is built from it by the client.
 *
 * The mark names its holder so that it dies with it: a mark left by a waiter served elsewhere,
 * or made against a failed attempt's key, names a value that no hand-off will release, where an
 * unnamed one gave a later holder's hand-off a turn for waiters that were gone, and idled the
 * key a reservation's lease (fair search, "mixed fairness", `0:3 8:2`, `0:1 1:1 17:3`). A hand-off
 * or claim that passes the key on carries the mark to the next value (queue-scripts.ts
 * CARRY_MARK). A mark naming another value is replaced.
 *
 * Only a key that may be handed on is marked: one with a fair queue (`K\0w`), or held by a fair
 * holder (`cur`, its value, starts with '.': owner-value.ts HANDED_ON), whose release
 * swaps it to the next waiter of its own process with nobody queued on the node (before: plain
 * waiters starved behind such a chain). Elsewhere the key's release frees it.
 */
function plainMark(key: string, cur: string, age: string, keep: string): string {
  return `
if string.byte(${cur}, 1) == ${HANDED_ON_BYTE} or redis.call('EXISTS', ${key} .. '\\0w') == 1 then
  local p = ${key} .. '\\0p'
  local time = redis.call('TIME')
  local started = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000 - tonumber(${age})
  local m = redis.call('GET', p)
  local marked = math.huge
  ${markStart('m', cur, 'marked')}
  local keep = math.max(redis.call('PTTL', ${key}), 0) + tonumber(${keep})
  if started < marked or redis.call('PTTL', p) < keep then
    redis.call('SET', p, string.format('%.3f', math.min(started, marked)) .. '|' .. ${cur}, 'PX', keep)
  end
end
`;
}

/**
 * Lua that returns {0, pttl} when a key among KEYS[1..n] blocks the acquire, with the lease of the
 * first that does. With `age` (ARGV[age], a waiting acquisition outside the fair queues), a key
 * reserved for those waiters counts as free, and a key blocking alone is marked (plainMark).
 * Blocked by more than one, it marks none: it could not use a turn on one of them, which would
 * idle that key a reservation's lease while the queued waiter behind it waited (issue 24: a
 * waiter for `a` behind a waiter for [a, b], b held, took ~4 s). It marks the other once that
 * one is free.
 */
function blockingKeys(n: string, age: string, keep: string): string {
  return `
local blocking, blockingValue, blockers = nil, nil, 0
for i = 1, ${n} do
  local cur = redis.call('GET', KEYS[i])
  if cur and not (${age} and cur == ${PLAIN_TURN}) then
    if not ${age} then return {0, redis.call('PTTL', KEYS[i])} end
    blockers = blockers + 1
    if blockers == 1 then blocking, blockingValue = KEYS[i], cur end
  end
end
if blocking then
  local cur = blockingValue
  if blockers == 1 then ${plainMark('blocking', 'cur', age, keep)} end
  return {0, redis.call('PTTL', blocking)}
end
`;
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
 *
 * A waiting acquisition outside the fair queues (issue 24 item 1: see {@link PLAIN_WAIT_SCRIPT})
 * also passes ARGV[3]: how long it has waited (ms), ARGV[4]: how long its mark is kept (ms). It
 * takes a key reserved for the plain waiters as free, and marks a key that alone blocks it
 * ({@link blockingKeys}).
 */
export const ACQUIRE_SCRIPT = script(
  'acquire',
  `${blockingKeys('#KEYS', 'ARGV[3]', 'ARGV[4]')}
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}
`,
);

/**
 * A waiting acquisition's single-key attempt met a key (issue 24 item 1): the single-key acquire
 * (`SET NX`) found it set, and this runs in place of its `PTTL`. KEYS[1]: the lock key. ARGV[1]:
 * owner value, ARGV[2]: ttl in ms, ARGV[3]: how long the acquisition has waited (ms), ARGV[4]: how
 * long its mark is kept (ms).
 *
 * A key reserved for the plain waiters (`\0r\0p`: a fair hand-off gave them the turn) is taken
 * as a free key would be: {1}. Any other existing key is marked as waited for (see
 * {@link plainMark}), and the reply is {0, pttl}. A key gone by now is left for the next attempt:
 * {0, 0}.
 */
export const PLAIN_WAIT_SCRIPT = script(
  'plain-wait',
  `
local cur = redis.call('GET', KEYS[1])
if not cur then return {0, 0} end
if cur == ${PLAIN_TURN} then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
${plainMark('KEYS[1]', 'cur', 'ARGV[3]', 'ARGV[4]')}
return {0, redis.call('PTTL', KEYS[1])}
`,
);

/**
 * Extend. KEYS: the lock's keys. ARGV[1]: owner value, ARGV[2]: new ttl in ms.
 *
 * Compare-and-PEXPIRE, all-or-nothing: extends only if every key still holds our value.
 * A key that expired or was taken over is not re-created: if we no longer hold a node we
 * must not claim it back behind another owner's quorum. Returns 1 or 0.
 *
 * Never shortens a lease: an extension to a ttl shorter than what is left (an auto-extension
 * after `extend(30_000)`) that reaches only some nodes would otherwise leave those nodes
 * expiring before the validity the holder still relies on, and a second holder could take them
 * (the simulation found it once leases could be lengthened).
 */
export const EXTEND_SCRIPT = script(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
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
 * With an id in ARGV[2], each deleted key is announced on the channel of the same name (architecture.md
 * §5.8) with the id as the message — one id per release, the same on every node, so a waiter
counts a release once however many nodes announce it (never the owner value, which would let
a listener release the lock) — and waiters retry at once instead of at their next poll. `pcall`: a user whose ACL
 * forbids PUBLISH still releases (its waiters fall back to polling).
 *
 * A holder's release (not a failed attempt's cleanup: its id ends with CLEANUP_MARK) also frees
 * a key reserved for the waiters outside the fair queues (`\0r\0p`), announced, not counted:
 * this holder is one of them (a fair lock releases through HAND_OFF_SCRIPT), so their turn is
 * over — as a group's own release ends its reservation. A fair hand-off that landed late on a
 * node, after the plain waiter it reserved the key for was served through the others, left that
 * node reserved for nobody until the reservation's lease ended (fair search at B = 3, "mixed
 * fairness": the next fair head lacked a quorum 326 ms). A reservation is no owner value: freeing
 * it meets no holder. A cleanup frees only its attempt's own writes: one whose attempt met the
 * reservation as free but was blocked elsewhere would give their turn away, announced as a
 * cleanup, which a fair head behind it does not count (simulation-multi-waiters seeds 5 and 262:
 * the key free on every node for 209 ms and 217 ms, every head asleep).
 */
export const RELEASE_SCRIPT = script(
  'release',
  `
local released = 0
for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  if cur == ARGV[1] or (cur == ${PLAIN_TURN} and string.sub(ARGV[2], -1) ~= '${CLEANUP_MARK}') then
    redis.call('DEL', KEYS[i])
    if cur == ARGV[1] then released = released + 1 end
    if ARGV[2] ~= '' then redis.pcall('PUBLISH', KEYS[i], ARGV[2]) end
  end
end
return released
`,
);

/**
 * Acquire with fencing, phase 1 (architecture.md §5.6). KEYS: the lock's keys, then their fence counter
 * keys, then the node's fence floor (one per key prefix). ARGV[1]: owner value, ARGV[2]: ttl in
 * ms, ARGV[3]: how many of KEYS are lock keys; a waiting acquisition also passes ARGV[4] and
 * ARGV[5], as ACQUIRE_SCRIPT's ARGV[3] and ARGV[4].
 *
 * As {@link ACQUIRE_SCRIPT}, and on success also returns F = max(every counter, the floor, this
 * server's TIME in µs), as a decimal string (Lua numbers are doubles: `tostring` would print
 * 1.7e+15). The floor is what keeps tokens increasing across a restart that lost the counters:
 * a node is admitted back only once it has been raised to the fleet's highest floor (see
 * membership.ts). The server's time only ever raises F; monotonicity never rests on it, since
 * node clocks differ.
 */
export const ACQUIRE_FENCED_SCRIPT = script(
  'acquire-fenced',
  `
local n = tonumber(ARGV[3])
${blockingKeys('n', 'ARGV[4]', 'ARGV[5]')}
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
 * Fencing phase 2 (architecture.md §5.6). KEYS: the lock's keys, then their fence counter keys, then the
 * node's fence floor. ARGV[1]: owner value, ARGV[2]: the token T (decimal string), ARGV[3]: how
 * long a counter is kept (ms), ARGV[4]: how many of KEYS are lock keys.
 *
 * Only while every lock key still holds our value (a holder paused past its expiry gets no
 * token): counter = max(counter, T), for every counter and the floor. Any later holder's quorum
 * meets this one in a node where this write happened while our key existed, and its phase 1
 * there runs after our key is gone, so it reads ≥ T. Counters expire after ARGV[3] of disuse:
 * by then the server's TIME, which also seeds phase 1, is far past any token they held.
 * Returns 1 or 0.
 */
export const FENCE_SCRIPT = script(
  'fence',
  `
local n = tonumber(ARGV[4])
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

/**
 * A probe's read (issue 19: probeRound, RedisNode.lease). KEYS[1]: the lock key. Returns its
 * remaining lease (`PTTL`), or -2 — as for an absent key, so that the probe cannot tell and the
 * waiter sends its attempt — where a waiter outside the queues has to attempt (issue 24 item 1):
 * the key is reserved for such waiters (`\0r\0p`), or held by a fair holder (its value starts
 * with '.', owner-value.ts HANDED_ON), which hands it on without a release: nothing is announced,
 * and only the attempt's mark gets that waiter a turn (a probe read it as held, and the waiter
 * slept until the lease ended while the lock went from holder to holder).
 */
export const PROBE_SCRIPT = script(
  'probe',
  `
local cur = redis.call('GET', KEYS[1])
if not cur or string.byte(cur, 1) == ${HANDED_ON_BYTE} or cur == ${PLAIN_TURN} then return -2 end
return redis.call('PTTL', KEYS[1])
`,
);

/** Every script, loaded when a connection becomes ready (script-loading.ts). */
export const LOCK_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE_SCRIPT,
  PLAIN_WAIT_SCRIPT,
  EXTEND_SCRIPT,
  RELEASE_SCRIPT,
  ACQUIRE_FENCED_SCRIPT,
  FENCE_SCRIPT,
  HORIZON_SCRIPT,
  STANDING_SCRIPT,
  RESTORE_FLOOR_SCRIPT,
  ACQUIRE_QUEUED_SCRIPT,
  HAND_OFF_SCRIPT,
  UNCONTENDED_HAND_OFF_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  PROBE_SCRIPT,
];
