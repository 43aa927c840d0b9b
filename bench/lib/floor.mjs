// The floor: a minimal hand-written Redlock, the least work a correct Redlock cycle can do.
// Acquire = one SET key value NX PX ttl per node, all nodes in parallel, success on a quorum
// (decided as soon as it is known); release = one DEL-if-value script per node, done once a
// quorum confirmed. A failed
// attempt releases everywhere, then polls again. No fencing, no extension, no validity bookkeeping
// beyond the elapsed-time check: it exists to be measured against. Each round (attempt or
// release) is bounded by one timer, not one per command (ioredis' commandTimeout arms a timer
// per command, which costs client CPU the floor need not spend).
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';

const NODE_TIMEOUT = 200;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** A fail-fast client (the floor must not hang on a dead node either). */
function client(url, autoPipelining) {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: autoPipelining,
  });
  redis.on('error', () => {});
  redis.defineCommand('floorRelease', { numberOfKeys: 1, lua: RELEASE });
  return redis;
}

/** Creates the floor over `urls`; `autoPipelining` turns on ioredis auto-pipelining. */
export function createFloor(urls, { autoPipelining = false } = {}) {
  const clients = urls.map((url) => client(url, autoPipelining));
  const quorum = Math.floor(clients.length / 2) + 1;

  /** DEL-if-value on every node; resolves once a quorum confirmed (the rest run on, bounded). */
  function releaseAll(key, value) {
    return new Promise((resolve) => {
      let done = 0;
      const timer = setTimeout(resolve, NODE_TIMEOUT);
      for (const c of clients) {
        c.floorRelease(key, value)
          .catch(() => 0)
          .then(() => {
            if (++done === quorum) {
              clearTimeout(timer);
              resolve();
            }
          });
      }
    });
  }

  function attempt(key, value, ttl) {
    return new Promise((resolve) => {
      let yes = 0;
      let no = 0;
      const timer = setTimeout(() => resolve(false), NODE_TIMEOUT);
      for (const c of clients) {
        c.set(key, value, 'PX', ttl, 'NX').then(
          (reply) => settle(reply === 'OK'),
          () => settle(false),
        );
      }
      function settle(ok) {
        if (ok) yes++;
        else no++;
        if (yes === quorum) {
          clearTimeout(timer);
          resolve(true);
        } else if (clients.length - no === quorum - 1) {
          clearTimeout(timer);
          resolve(false);
        }
      }
    });
  }

  return {
    async ready() {
      await Promise.all(
        clients.map((c) =>
          c.status === 'ready' ? undefined : new Promise((r) => c.once('ready', r)),
        ),
      );
    },
    async acquire(resource, { ttl = 10_000, wait = 10_000 } = {}) {
      const key = `floor:${resource}`;
      const deadline = performance.now() + wait;
      for (;;) {
        const value = randomBytes(16).toString('hex');
        const start = performance.now();
        const ok = await attempt(key, value, ttl);
        const validity = ttl - (performance.now() - start) - (ttl * 0.01 + 2);
        if (ok && validity > 0) return { release: () => releaseAll(key, value) };
        await releaseAll(key, value);
        if (performance.now() >= deadline) throw new Error('floor: not acquired');
        await delay(100 + Math.random() * 100);
      }
    },
    async close() {
      clients.forEach((c) => c.disconnect());
    },
  };
}
