import { script } from './lua-script';

/*
 * The scripts of the fair queue (architecture.md §5.11, fair-queue.ts): a queued acquisition, the
 * hand-off on release, and a waiter leaving its queue.
 */

/**
 * The prefix of a lock key's value while it is reserved for the next group of waiters (fair
 * hand-off, architecture.md §5.11): `\0r` + the group's id. It is not an owner value (those are
 * random base64url, after a `.` for a fair lock: never starting with NUL), so no holder's
 * compare-and-delete or extension matches it, and to every acquire script it is a key that
 * exists: held.
 */
export const RESERVATION_PREFIX = '\0r';

/** A key's value while a fair hand-off reserves it for the waiters outside the queues. */
export const PLAIN_RESERVATION = RESERVATION_PREFIX + '\0p';

/**
 * The suffix of a lock key's queue mark (`K\0w`): set, with the queue's own expiry, by every
 * script that sets the expiry of the key's queue; where it is absent, the key has no queue.
 */
export const QUEUE_MARK_SUFFIX = '\0w';

/**
 * How far a waiter's start, placed on a node's clock by the client's estimate
 * (acquisition/server-clocks.ts), may come before the node's own bound for it (TIME − the wait
 * so far, late by the request's way to the node): a wrong estimate — the server's clock stepped
 * since the sample — moves a group at most this much ahead of where the node would place it
 * alone, never behind. Restated in lib/testing/queue-scripts.ts.
 */
export const START_SLACK_MS = 10;

/**
 * Lua: `start(time, age, estimate)`, when a waiter started waiting on this server's clock (ms,
 * µs precision), from TIME's reply, the wait so far the client sent, and the client's estimate of
 * that start on this server's clock ('' for none, server-clocks.ts). TIME − age is late by the
 * request's way here (the age was measured when it was sent), so it bounds the start from
 * above: an estimate after it is wrong and ignored; one before it is taken, but at most
 * START_SLACK_MS before (a stale estimate, after this server's clock stepped, can move a group
 * only that much ahead).
 */
const START = `
local function start(time, age, estimate)
  local bound = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000 - tonumber(age)
  local at = tonumber(estimate)
  if at == nil or at >= bound then return bound end
  return math.max(at, bound - ${START_SLACK_MS})
end`;

/**
 * Lua that sets `into` to the start in the plain waiters' mark `m` (`started|holder`, scripts.ts
 * plainMark; false for none) when the mark names `holder`, and leaves it as it was otherwise. The
 * one parse of the mark, for the scripts that write it and those that carry and read it.
 */
export function markStart(m: string, holder: string, into: string): string {
  return `if ${m} then
  local bar = string.find(${m}, '|', 1, true)
  if bar and string.sub(${m}, bar + 1) == ${holder} then ${into} = tonumber(string.sub(${m}, 1, bar - 1)) end
end`;
}

/**
 * Lua: `named(m, holder)`, the start in the plain waiters' mark `m` (`started|holder`, scripts.ts
 * plainMark; false for none) when it names `holder`, else nil; and `carry(key, m, from, to)`: a
 * mark naming `from` follows the key to `to` (a swap, a reservation for a group, a claim of it, a
 * reservation passed on), its expiry kept. Their waiters waited behind the key, not behind one
 * value of it: without the carry, a mark younger than the next local waiter named a value that
 * no longer held the key, and every later hand-off of the chain passed them by.
 */
const CARRY_MARK = `
local function named(m, holder)
  local started = nil
  ${markStart('m', 'holder', 'started')}
  return started
end
local function carry(key, m, from, to)
  if named(m, from) then
    local p = key .. '\\0p'
    local bar = string.find(m, '|', 1, true)
    redis.call('SET', p, string.sub(m, 1, bar) .. to, 'PX', math.max(redis.call('PTTL', p), 1))
  end
end`;

/**
 * Acquire in a fair queue (architecture.md §5.11), one key. KEYS[1]: the lock key, KEYS[2]: its queue (a
 * sorted set of waiting groups, scored by when they started waiting, on this server's clock).
 * ARGV[1]: owner value, ARGV[2]: ttl in ms, ARGV[3]: the waiting group's id, ARGV[4]: how long
 * its oldest waiter has waited (ms), ARGV[5]: how long the queue outlives the blocking lease
 * (ms), ARGV[6]: '1' when the group may be queued here already (not its first attempt),
 * ARGV[7]: the claim's announcement id ('' for none), ARGV[8] (optional): when the oldest waiter
 * started, on this server's clock as the client estimates it (server-clocks.ts; '' for none).
 *
 * Takes the key when it is free or reserved for this group (the previous holder handed it on
 * to us), exactly like the acquire script: a reservation is written only by the holder's own
 * hand-off, so taking it over cannot meet a live holder. A claimed reservation is announced
 * (`id|c|group`) so that the other groups, who heard who was next, stop timing the hand-off.
 * Otherwise the group joins the queue once (its score is this server's time minus the wait so
 * far: the order in which groups started waiting, with no clock shared between machines; or the
 * client's estimate ARGV[8] where it is earlier, by at most START_SLACK_MS: see `START`), the
 * queue is kept a little longer than the blocking lease, and the reply is {0, pttl}, with the
 * server's TIME when it queued the group ({0, pttl, seconds, µs}: the client's clock sample).
 *
 * A claim carries the plain waiters' mark from the reservation to the claimant's value (read in
 * one MGET with the key: see {@link CARRY_MARK}).
 *
 * Whenever it sets the queue's expiry it also writes the key's queue mark (`K\0w`, as long):
 * no queue outlives its mark, which is what lets {@link HAND_OFF_SCRIPT} skip the queue on an
 * uncontended release (issue 24 item 3).
 */
export const ACQUIRE_QUEUED_SCRIPT = script(
  'acquire-queued',
  `${START}${CARRY_MARK}
local read = redis.call('MGET', KEYS[1], KEYS[1] .. '\\0p')
local cur = read[1]
if cur == false or cur == '\\0r' .. ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if cur == false then
    if ARGV[6] == '1' then redis.call('ZREM', KEYS[2], ARGV[3]) end
  else
    carry(KEYS[1], read[2], cur, ARGV[1])
    if ARGV[7] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[7] .. '|c|' .. ARGV[3]) end
  end
  return {1}
end
local pttl = redis.call('PTTL', KEYS[1])
local time
if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  time = redis.call('TIME')
  redis.call('ZADD', KEYS[2], start(time, ARGV[4], ARGV[8]), ARGV[3])
end
local keep = math.max(pttl, 0) + tonumber(ARGV[5])
if redis.call('PTTL', KEYS[2]) < keep then
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('SET', KEYS[1] .. '\\0w', '1', 'PX', keep)
end
if time then return {0, pttl, time[1], time[2]} end
return {0, pttl}
`,
);

/**
 * Release with a fair hand-off (architecture.md §5.11). KEYS[1]: the lock key, KEYS[2]: its queue.
 * ARGV[1]: the holder's owner value, ARGV[2]: the holder's group id, ARGV[3]: how long a
 * reservation lasts (ms), ARGV[4]: the release's announcement id ('' for none); with a next local
 * waiter only, ARGV[5]: its owner value, ARGV[6]: its ttl (ms), ARGV[7]: how long it has waited
 * (ms), ARGV[8]: when it started on this server's clock as the client estimates it ('' for
 * none; see `START`). Without one the four are not sent: the release of an uncontended lock, the
 * commonest, carries 4 arguments, not 8 (each costs the client's encoding and the server's
 * parsing).
 *
 * The holder's group leaves the queue wherever it stands in it, also on a node where the key
 * does not hold the holder's value (then 0, nothing else written): a queued attempt that won on
 * a quorum queued its group on the nodes where it met a holder, and an entry left there named a
 * group nobody waited in any more — its reservation idled the lock a whole lease (issue 24 item
 * 2b: 300-700 ms stalls under open-loop arrivals). For the same reason a key *reserved* for the
 * holder's group counts as the holder's: the entry was served before the release came (that
 * holder's release reserved the key for the group, which held the lock elsewhere already), and
 * nobody would claim it (bench/fair-rates.mjs, 3 nodes, 300/s: one node idled a whole lease at a
 * time, and every group switch waited for its turn timer; wait p99 230-390 ms). A reservation
 * is no owner value: passing it on, as the group's own claim and release would, can meet no
 * holder. Where the key is the holder's and a next local waiter comes with the release, the
 * group leaves the queue only from its head (it would be reserved its own key): it still has a
 * waiter, so an entry further back names a live group, and this path writes the group's entry
 * anyway when it does not swap (ZADD below); the ZREM would find nothing there almost always (a
 * group is queued where its key is held only after that holder lost it), at one command per
 * node on every hand-off between two busy processes (issue 24's S2). Then, only while the key
 * holds the holder's value (or that reservation), or is free and a next local waiter comes with
 * the release (a failed attempt's cleanup freed it: without this, the chain of swaps ran on fewer
 * nodes after each, and lost its next split in S2; nobody holds a free key, and the swapped waiter
 * counts it in its quorum like any acquire), in the order in which the waiters started waiting,
 * on this server's clock:
 * - the holder's next local waiter, when it waited longer than every queued group: the key is
 *   swapped to its owner value with a fresh lease (a compare-and-swap, no release + acquire):
 *   returns 2 (with nobody queued and no plain waiter, without reading the clock: one command
 *   less per node on the busiest hand-off, issue 24's S2);
 * - else the queue's first group: the key is reserved for it (`\0r` + id, a short lease, so a
 *   group that died costs at most that), the holder's group queues behind it when it has
 *   waiters left, and the reservation is announced (`id|n|group`): returns 1;
 * - else (nobody queued here): deleted and announced like a plain release: returns 3.
 *
 * Acquisitions outside the queues (issue 24 item 1: fenced, several resources, another lock
 * manager with fairness off) mark the key while they wait (`K\0p`, plainMark in scripts.ts), naming
 * the value they waited behind: when that holder releases and they started waiting before the
 * local next waiter and every queued group, the key is reserved for them instead (`\0r\0p`,
 * announced `id|n|\0p`), which only their acquire takes ({@link PLAIN_WAIT_SCRIPT}); else their
 * mark follows the key to its next value ({@link CARRY_MARK}). A key handed on from holder to
 * holder is then never out of their reach, and a mark whose waiters were served elsewhere names
 * a value no hand-off releases.
 *
 * An uncontended release costs what a plain one does (issue 24 item 3: 5 commands per node and
 * cycle, as with fairness off): one MGET reads the key, its queue mark (`K\0w`) and the plain
 * waiters' mark, and the queue is read only when its mark exists. Every script that sets a
 * queue's expiry writes the mark as long, so no queue outlives its mark; a release that finds
 * the queue gone (its last group was served or left) deletes the mark, so that the releases
 * after it, while nobody queues, skip the queue as well (S2: half the hand-offs of two busy
 * processes found a marked, empty queue); a queue re-created later is re-created with its mark
 * (a queue that did not exist has no expiry, and every ZADD is followed by the expiry and
 * mark when the queue's expiry is shorter than the keep). A queue without one
 * can only have been written by a version before the mark (its groups then contend for a plain
 * release once). A queue re-created here (the holder's group queued behind plain waiters) gets
 * an expiry and its mark likewise. The plain mark counts only when someone else waits too:
 * alone, plain waiters contend for the freed key.
 *
 * That uncontended release (the key the holder's, no queue mark, no next local waiter) is the
 * script's first branch, before its Lua functions are defined: a script's whole body runs on
 * every call, and defining them is three closures per call. The branch does what the general
 * path does in that case (delete, announce, 3); it took the hand-off from 26.1 to 24.2 µs of
 * server time per call, medians of 5 paired runs (bench/profile.mjs, 5 nodes, c = 1).
 */
export const HAND_OFF_SCRIPT = script(
  'hand-off',
  `local cur = redis.call('MGET', KEYS[1], KEYS[1] .. '\\0w', KEYS[1] .. '\\0p')
if cur[1] == ARGV[1] and not cur[2] and not ARGV[5] then
  redis.call('DEL', KEYS[1])
  if ARGV[4] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[4]) end
  return 3
end
${START}${CARRY_MARK}
if cur[1] ~= ARGV[1] and cur[1] ~= '\\0r' .. ARGV[2] and (cur[1] or not ARGV[5]) then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 0
end
local head = {}
if cur[2] then
  head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if not head[1] then
    redis.call('DEL', KEYS[1] .. '\\0w')
  elseif head[1] == ARGV[2] then
    redis.call('ZREM', KEYS[2], ARGV[2])
    head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  elseif not ARGV[5] then
    redis.call('ZREM', KEYS[2], ARGV[2])
  end
end
local nextValue = ARGV[5]
local plain
if nextValue or head[1] then plain = named(cur[3], cur[1]) end
if nextValue then
  if not head[1] and not plain then
    redis.call('SET', KEYS[1], nextValue, 'PX', ARGV[6])
    return 2
  end
  local started = start(redis.call('TIME'), ARGV[7], ARGV[8])
  if (not head[1] or started <= tonumber(head[2])) and (not plain or started <= plain) then
    redis.call('SET', KEYS[1], nextValue, 'PX', ARGV[6])
    carry(KEYS[1], cur[3], cur[1], nextValue)
    return 2
  end
  redis.call('ZADD', KEYS[2], started, ARGV[2])
  if not head[1] then
    local keep = tonumber(ARGV[6]) + tonumber(ARGV[3])
    redis.call('PEXPIRE', KEYS[2], keep)
    redis.call('SET', KEYS[1] .. '\\0w', '1', 'PX', keep)
  end
end
if plain and (not head[1] or plain <= tonumber(head[2])) then
  redis.call('DEL', KEYS[1] .. '\\0p')
  head = {'\\0p'}
end
if head[1] then
  if head[1] ~= '\\0p' then
    redis.call('ZREM', KEYS[2], head[1])
    carry(KEYS[1], cur[3], cur[1], '\\0r' .. head[1])
  end
  redis.call('SET', KEYS[1], '\\0r' .. head[1], 'PX', ARGV[3])
  if ARGV[4] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[4] .. '|n|' .. head[1]) end
  return 1
end
redis.call('DEL', KEYS[1])
if ARGV[4] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[4]) end
return 3
`,
);

/**
 * {@link HAND_OFF_SCRIPT}'s first branch as a script of its own, sent for a release with no next
 * local waiter of a key its process saw no contention on lately (`HandOffRequest.uncontended`,
 * scripted-node.ts `handOff`): the release of an uncontended lock. KEYS[1]: the lock key.
 * ARGV[1]: the holder's owner value, ARGV[2]: the release's announcement id ('' for none).
 *
 * Where the key holds the holder's value and has no queue mark, it deletes and announces it and
 * returns 3, as HAND_OFF_SCRIPT does there; anywhere else it writes nothing and returns 4, and the
 * client sends HAND_OFF_SCRIPT. So a release is the full script's first branch or the full script
 * one round trip later: no state or reply of its own, nothing the fair search must cover anew
 * (it already delivers a hand-off at any time).
 *
 * Why: the full script carries the queue key, the group and the reservation's lease (2 keys and
 * 4 arguments), and reads the plain waiters' mark (an MGET of 3), none of which that branch uses.
 * They cost the client's encoding and, on every node, the server's parsing and reading: sent
 * together, 5 nodes, one process acquiring and releasing in a loop (bench S1, c = 1), the servers
 * spent 10-14 µs more per cycle than on a plain release, and the fair mode ran at 0.93-0.95× the
 * rate of fairness off; with this script, 2-8 µs more and 0.96-1.02× (bench/ab-slices.mjs;
 * bench/REPORT.md, "Issue 24, 2026-11-29 05:20"). Only on the hint: sent for every
 * release with no next waiter, it returned 4 often enough under contention to raise bench S2
 * from 27.6 to 30.3 commands per success.
 */
export const UNCONTENDED_HAND_OFF_SCRIPT = script(
  'hand-off-uncontended',
  `local cur = redis.call('MGET', KEYS[1], KEYS[1] .. '\\0w')
if cur[1] ~= ARGV[1] or cur[2] then return 4 end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' then redis.pcall('PUBLISH', KEYS[1], ARGV[2]) end
return 3
`,
);

/**
 * Leaves a fair queue (architecture.md §5.11). KEYS[1]: the queue, KEYS[2] (optional): the lock key.
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
  `${CARRY_MARK}
redis.call('ZREM', KEYS[1], ARGV[1])
if KEYS[2] == nil then return 1 end
local read = redis.call('MGET', KEYS[2], KEYS[2] .. '\\0p')
if read[1] ~= '\\0r' .. ARGV[1] then return 1 end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] then
  redis.call('ZREM', KEYS[1], head[1])
  redis.call('SET', KEYS[2], '\\0r' .. head[1], 'PX', ARGV[2])
  carry(KEYS[2], read[2], read[1], '\\0r' .. head[1])
  if ARGV[3] ~= '' then redis.pcall('PUBLISH', KEYS[2], ARGV[3] .. '|n|' .. head[1]) end
  return 2
end
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then redis.pcall('PUBLISH', KEYS[2], ARGV[3]) end
return 3
`,
);
