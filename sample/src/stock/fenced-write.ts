/**
 * The fenced write of a stock level, as a Redis script: the level is set only if the last token
 * written to it is not higher than the writer's (equal: the same holder writing again), and the
 * writer's token is then recorded — so a
 * holder paused past its lease (a GC pause, a stalled VM) cannot overwrite a later holder's
 * write, whatever the lock could tell it. This is the pattern the library's README recommends:
 * the resource itself refuses stale tokens. Everything reaches the script through KEYS/ARGV.
 *
 * KEYS[1]: the level, KEYS[2]: its last token. ARGV[1]: the new level, ARGV[2]: the token.
 * Returns 1 when written, 0 when the token was stale.
 */
export const FENCED_WRITE = `
local last = redis.call('GET', KEYS[2])
if last and tonumber(ARGV[2]) < tonumber(last) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;
