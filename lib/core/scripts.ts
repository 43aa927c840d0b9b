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
 * Lua that marks `key` as waited for by acquisitions outside the fair queues (issue 24 item 1):
 * `key` + NUL + `p` holds when the oldest of them started waiting, on this server's clock (its
 * time minus `age` ms), kept `keep` ms past the key's lease. A fair hand-off reads it
 * (HAND_OFF_SCRIPT): plain waiters that waited longer than every queued group get the next turn.
 * Built from the lock key inside the script, as the queue key is built from it by the client.
 */
function plainMark(key: string, age: string, keep: string): string {
  return `
local p = ${key} .. '\\0p'
local time = redis.call('TIME')
local started = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) - tonumber(${age})
local m = redis.call('GET', p)
local marked = m and tonumber(m) or math.huge
local keep = math.max(redis.call('PTTL', ${key}), 0) + tonumber(${keep})
if started < marked or redis.call('PTTL', p) < keep then
  redis.call('SET', p, string.format('%.0f', math.min(started, marked)), 'PX', keep)
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
 * takes a key reserved for the plain waiters as free, and marks the first blocking key.
 */
export const ACQUIRE_SCRIPT = script(
  'acquire',
  `
for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  if cur and not (ARGV[3] and cur == '\\0r\\0p') then
    if ARGV[3] then ${plainMark('KEYS[i]', 'ARGV[3]', 'ARGV[4]')} end
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
if cur == '\\0r\\0p' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
${plainMark('KEYS[1]', 'ARGV[3]', 'ARGV[4]')}
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
for i = 1, n do
  local cur = redis.call('GET', KEYS[i])
  if cur and not (ARGV[4] and cur == '\\0r\\0p') then
    if ARGV[4] then ${plainMark('KEYS[i]', 'ARGV[4]', 'ARGV[5]')} end
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
 * Fencing phase 2 (DESIGN §5.6). KEYS: the lock's keys, then their fence counter keys, then the
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
 * Records a lease horizon (DESIGN §5.7). KEYS[1]: the node's horizons (a hash), KEYS[2]: its
 * marker (one of each per key prefix). ARGV[1]: a window in ms; ARGV[2..]: the `run_id`s of the
 * fleet's nodes as the lock manager knows them now.
 *
 * Raises the horizon filed under each of those `run_id`s to (this server's time in ms + window),
 * drops the ones that have passed, and lets the hash expire with its longest: the node's own
 * record that no lease granted on it since lasts longer. A lock manager records it before it
 * counts this node's vote for any lease that could outlast the last record. After a node
 * restarts, the horizons its peers filed under its old `run_id` (one no node has any more) bound
 * every lease it may have lost; those filed under current ones are leases granted since, which it
 * did not lose (quarantine.ts).
 *
 * Also writes the marker, once per data set: the server's own `run_id`, read here (never one a
 * client believes, which may be a restart old), with no expiry. A marker naming another `run_id`
 * is how a restarted node proves its data survived the restart. A user denied INFO gets no
 * marker (a node trusted unidentified: `trustUnidentifiedNodes`) but its horizon. Returns 1.
 */
export const HORIZON_SCRIPT = script(
  'horizon',
  `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = tonumber(ARGV[1])
local h = now + window
local filed = redis.call('HGETALL', KEYS[1])
for i = 1, #filed, 2 do
  if tonumber(filed[i + 1]) <= now then redis.call('HDEL', KEYS[1], filed[i]) end
end
for i = 2, #ARGV do
  local current = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if h > current then redis.call('HSET', KEYS[1], ARGV[i], string.format('%.0f', h)) end
end
if #ARGV > 1 and redis.call('PTTL', KEYS[1]) < window then
  redis.call('PEXPIRE', KEYS[1], window)
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local ok, info = pcall(redis.call, 'INFO', 'server')
  if ok then redis.call('SET', KEYS[2], string.match(info, 'run_id:(%w+)')) end
end
return 1
`,
);

/**
 * Reads what a node says about itself (DESIGN §5.7), in one atomic step. KEYS: its horizons,
 * marker, fence floor and this fleet's fence record.
 *
 * Returns {run_id, uptime_in_seconds, marker or '', floor or '0', fence record or '', then for
 * each horizon still ahead: the `run_id` it is filed under and the ms until it}. The identity
 * comes from the same call as the data, so a restart can never pair one incarnation's identity
 * with another's data; horizons are remaining times on this server's own clock, so node clocks
 * never need to agree.
 */
export const STANDING_SCRIPT = script(
  'standing',
  `
local info = redis.call('INFO', 'server')
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reply = {string.match(info, 'run_id:(%w+)'), string.match(info, 'uptime_in_seconds:(%d+)'),
  redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or '0', redis.call('GET', KEYS[4]) or ''}
local filed = redis.call('HGETALL', KEYS[1])
for i = 1, #filed, 2 do
  local left = tonumber(filed[i + 1]) - now
  if left > 0 then
    reply[#reply + 1] = filed[i]
    reply[#reply + 1] = string.format('%.0f', left)
  end
end
return reply
`,
);

/**
 * Restores a node's fence floor (DESIGN §5.6). KEYS: its fence floor and this fleet's fence
 * record. ARGV[1]: the `run_id` the caller surveyed, ARGV[2]: the floor to raise it to (decimal
 * string), ARGV[3]: how long a fence counter is kept (ms).
 *
 * Only on that very incarnation: a server restarted since the survey (another `run_id`) may have
 * lost tokens the survey never saw, so nothing is written and 0 returned. Otherwise raises the
 * floor, records that this fleet restored it under this `run_id`, and returns 1.
 */
export const RESTORE_FLOOR_SCRIPT = script(
  'restore-floor',
  `
local info = redis.call('INFO', 'server')
if string.match(info, 'run_id:(%w+)') ~= ARGV[1] then return 0 end
local f = tonumber(ARGV[2])
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if f > c then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
redis.call('SET', KEYS[2], ARGV[1])
return 1
`,
);

/**
 * The prefix of a lock key's value while it is reserved for the next group of waiters (fair
 * hand-off, DESIGN §5.11): `\0r` + the group's id. It is not an owner value (those are random
 * base64url, never starting with NUL), so no holder's compare-and-delete or extension matches
 * it, and to every acquire script it is a key that exists: held.
 */
export const RESERVATION_PREFIX = '\0r';

/**
 * Acquire in a fair queue (DESIGN §5.11), one key. KEYS[1]: the lock key, KEYS[2]: its queue (a
 * sorted set of waiting groups, scored by when they started waiting, on this server's clock).
 * ARGV[1]: owner value, ARGV[2]: ttl in ms, ARGV[3]: the waiting group's id, ARGV[4]: how long
 * its oldest waiter has waited (ms), ARGV[5]: how long the queue outlives the blocking lease
 * (ms), ARGV[6]: '1' when the group may be queued here already (not its first attempt),
 * ARGV[7]: the claim's announcement id ('' for none).
 *
 * Takes the key when it is free or reserved for this group (the previous holder handed it on
 * to us), exactly like the acquire script: a reservation is written only by the holder's own
 * hand-off, so taking it over cannot meet a live holder. A claimed reservation is announced
 * (`id|c|group`) so that the other groups, who heard who was next, stop timing the hand-off.
 * Otherwise the group joins the queue once (its score is this server's time minus the wait so
 * far: the order in which groups started waiting, with no clock shared between machines), the
 * queue is kept a little longer than the blocking lease, and the reply is {0, pttl}.
 *
 * Whenever it sets the queue's expiry it also writes the key's queue mark (`K\0w`, as long):
 * no queue outlives its mark, which is what lets {@link HAND_OFF_SCRIPT} skip the queue on an
 * uncontended release (issue 24 item 3).
 */
export const ACQUIRE_QUEUED_SCRIPT = script(
  'acquire-queued',
  `
local cur = redis.call('GET', KEYS[1])
if cur == false or cur == '\\0r' .. ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if cur == false then
    if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], ARGV[3]) end
  elseif ARGV[7] ~= '' then
    redis.pcall('PUBLISH', KEYS[1], ARGV[7] .. '|c|' .. ARGV[3])
  end
  return {1}
end
local pttl = redis.call('PTTL', KEYS[1])
if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  redis.call('ZADD', KEYS[2], now - tonumber(ARGV[4]), ARGV[3])
end
local keep = math.max(pttl, 0) + tonumber(ARGV[5])
if redis.call('PTTL', KEYS[2]) < keep then
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('SET', KEYS[1] .. '\\0w', '1', 'PX', keep)
end
return {0, pttl}
`,
);

/**
 * Release with a fair hand-off (DESIGN §5.11). KEYS[1]: the lock key, KEYS[2]: its queue.
 * ARGV[1]: the holder's owner value, ARGV[2]: the holder's group id, ARGV[3]: the owner value of
 * the holder's next local waiter ('' for none), ARGV[4]: its ttl (ms), ARGV[5]: how long it has
 * waited (ms), ARGV[6]: how long a reservation lasts (ms), ARGV[7]: the release's announcement
 * id ('' for none).
 *
 * The holder's group leaves the queue wherever it stands in it, also on a node where the key
 * does not hold the holder's value (then 0, nothing else written): a queued attempt that won on
 * a quorum queued its group on the nodes where it met a holder, and an entry left there named a
 * group nobody waited in any more — its reservation idled the lock a whole lease (issue 24 item
 * 2b: 300-700 ms stalls under open-loop arrivals). Then, only while the key holds the holder's
 * value, in the order in which the waiters started waiting, on this server's clock:
 * - the holder's next local waiter, when it waited longer than every queued group: the key is
 *   swapped to its owner value with a fresh lease (a compare-and-swap, no release + acquire):
 *   returns 2;
 * - else the queue's first group: the key is reserved for it (`\0r` + id, a short lease, so a
 *   group that died costs at most that), the holder's group queues behind it when it has
 *   waiters left, and the reservation is announced (`id|n|group`): returns 1;
 * - else (nobody queued here): deleted and announced like a plain release: returns 3.
 *
 * Acquisitions outside the queues (issue 24 item 1: fenced, several resources, another lock
 * manager with fairness off) mark the key while they wait (`K\0p`, {@link plainMark}): when they
 * started waiting before the local next waiter and every queued group, the key is reserved for
 * them instead (`\0r\0p`, announced `id|n|\0p`), which only their acquire takes
 * ({@link PLAIN_WAIT_SCRIPT}); a key handed on from holder to holder is then never out of their
 * reach.
 *
 * An uncontended release costs what a plain one does (issue 24 item 3: 5 commands per node and
 * cycle, as with fairness off): one MGET reads the key, its queue mark (`K\0w`) and the plain
 * waiters' mark, and the queue is read only when its mark exists. Every script that sets a
 * queue's expiry writes the mark as long, so no queue outlives its mark; a queue without one
 * can only have been written by a version before the mark (its groups then contend for a plain
 * release once). A queue re-created here (the holder's group queued behind plain waiters) gets
 * an expiry and its mark likewise. The plain mark counts only when someone else waits too:
 * alone, plain waiters contend for the freed key.
 */
export const HAND_OFF_SCRIPT = script(
  'hand-off',
  `
local cur = redis.call('MGET', KEYS[1], KEYS[1] .. '\\0w', KEYS[1] .. '\\0p')
if cur[1] ~= ARGV[1] then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 0
end
local head = {}
if cur[2] then
  head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if head[1] and redis.call('ZREM', KEYS[2], ARGV[2]) == 1 and head[1] == ARGV[2] then
    head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  end
end
local plain
if cur[3] and (ARGV[3] ~= '' or head[1]) then plain = tonumber(cur[3]) end
if ARGV[3] ~= '' then
  local time = redis.call('TIME')
  local started = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) - tonumber(ARGV[5])
  if (not head[1] or started <= tonumber(head[2])) and (not plain or started <= plain) then
    redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
    return 2
  end
  redis.call('ZADD', KEYS[2], started, ARGV[2])
  if not head[1] then
    local keep = tonumber(ARGV[4]) + tonumber(ARGV[6])
    redis.call('PEXPIRE', KEYS[2], keep)
    redis.call('SET', KEYS[1] .. '\\0w', '1', 'PX', keep)
  end
end
if plain and (not head[1] or plain <= tonumber(head[2])) then
  redis.call('DEL', KEYS[1] .. '\\0p')
  head = {'\\0p'}
end
if head[1] then
  if head[1] ~= '\\0p' then redis.call('ZREM', KEYS[2], head[1]) end
  redis.call('SET', KEYS[1], '\\0r' .. head[1], 'PX', ARGV[6])
  if ARGV[7] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[7] .. '|n|' .. head[1]) end
  return 1
end
redis.call('DEL', KEYS[1])
if ARGV[7] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[7]) end
return 3
`,
);

/**
 * Leaves a fair queue (DESIGN §5.11). KEYS[1]: the queue, KEYS[2] (optional): the lock key.
 * ARGV[1]: the group, ARGV[2]: how long a reservation lasts (ms), ARGV[3]: the announcement id
 * ('' for none).
 *
 * Removes the group; with the lock key, a key still reserved for the group (its turn came as its
 * last waiter gave up) is passed on at once, as the hand-off would have (issue 24 item 2): to the
 * queue's next group (reserved, announced `id|n|group`: returns 2), or, nobody queued, freed and
 * announced as a plain release (returns 3). A reservation is no owner value: nobody holds the
 * key, so passing it on or freeing it can meet no holder. Returns 1 otherwise.
 */
export const LEAVE_QUEUE_SCRIPT = script(
  'leave-queue',
  `
redis.call('ZREM', KEYS[1], ARGV[1])
if KEYS[2] == nil or redis.call('GET', KEYS[2]) ~= '\\0r' .. ARGV[1] then return 1 end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] then
  redis.call('ZREM', KEYS[1], head[1])
  redis.call('SET', KEYS[2], '\\0r' .. head[1], 'PX', ARGV[2])
  if ARGV[3] ~= '' then redis.pcall('PUBLISH', KEYS[2], ARGV[3] .. '|n|' .. head[1]) end
  return 2
end
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then redis.pcall('PUBLISH', KEYS[2], ARGV[3]) end
return 3
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
  LEAVE_QUEUE_SCRIPT,
];
