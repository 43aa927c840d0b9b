import { setTimeout as delay } from 'node:timers/promises';
import type { RedisFleet } from './fleet';

/** Polls `check` every 10 ms until it returns true or `timeoutMs` (10 s) passes; returns the last result. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > until) return false;
    await delay(10);
  }
}

/**
 * Whether every node of `fleet` comes to have (`present` true) or to lack the key `key` within
 * 5 s. An acquire or a release resolves once a quorum answered (issue 6 item 17): the writes to
 * the other nodes may still be on their way when a test asks each node on its own connection, so
 * a check of "every node" right after the call can race them (seen on a loaded CI machine). They
 * land within a round; a node that never gets the write fails the check.
 */
export function onEveryNode(fleet: RedisFleet, key: string, present: boolean): Promise<boolean> {
  return eventually(async () => {
    const found = await Promise.all(fleet.nodes.map((node) => node.command('EXISTS', key)));
    return found.every((exists) => (exists === 1) === present);
  });
}
