import { script } from './lua-script';

/*
 * The scripts of restart detection (architecture.md §5.7, membership.ts): lease horizons, a node's
 * standing, and fence floors restored from peers.
 */

/**
 * Records a lease horizon (architecture.md §5.7). KEYS[1]: the node's horizons (a hash), KEYS[2]: its
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
 * Reads what a node says about itself (architecture.md §5.7), in one atomic step. KEYS: its horizons,
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
 * Restores a node's fence floor (architecture.md §5.6). KEYS: its fence floor and this fleet's fence
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
