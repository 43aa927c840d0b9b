import { LOCK_SCRIPTS, type LuaScript } from './scripts';

/**
 * Loads the lock scripts a server does not have yet, for a connection that just became ready.
 *
 * One `SCRIPT EXISTS` for all of them first, then `SCRIPT LOAD` for the missing ones only: a
 * server keeps its script cache across `FLUSHALL` and across every client that connects, so in
 * a running fleet each new connection costs one short command instead of every script's source.
 * Sending all sources on every connection made 16 lock managers started together on a 5-node
 * fleet spend most of their first lock writing Lua (issue 23, finding 6a: first lock ≤ 200 ms).
 *
 * Settles when the missing scripts are loaded (never rejects): the caller waits for it before it
 * counts the connection as ready, so the EVALSHAs that follow find their scripts. A failure
 * (no permission for SCRIPT, a timeout) is not fatal: EVALSHA then falls back to EVAL.
 */
export async function loadMissingScripts(
  /** Sends `SCRIPT EXISTS sha…`; its reply is one 0/1 per sha. */
  exists: (shas: readonly string[]) => Promise<unknown>,
  /** Sends `SCRIPT LOAD source`. */
  load: (source: string) => Promise<unknown>,
  scripts: readonly LuaScript[] = LOCK_SCRIPTS,
): Promise<void> {
  let missing: readonly LuaScript[] = scripts;
  try {
    const reply = await exists(scripts.map((script) => script.sha));
    if (Array.isArray(reply) && reply.length === scripts.length) {
      missing = scripts.filter((_, i) => Number(reply[i]) !== 1);
    }
  } catch {
    // Unknown: load them all, as before (a refused SCRIPT fails those too, harmlessly).
  }
  await Promise.all(missing.map((script) => load(script.source).catch(() => undefined)));
}
