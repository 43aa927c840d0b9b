// One adapter interface for every contender:
//   const c = await CONTENDERS[name].create(urls, { wait });   // wait: ms, undefined = the library's default
//   const handle = await c.acquire(resource, { ttl });          // rejects when not acquired
//   await handle.release();
//   await c.close();
// Peers run with their shipped settings and plain `new Redis(url)` clients, as their READMEs
// show; only `wait` is translated into each library's own retry settings when the scenario asks
// for one (S2: ≈ 20 s), so that no contender gives up early because of a mere default.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Redis from 'ioredis';
import RedlockV4 from 'redlock-v4';
import RedlockV5 from 'redlock-v5';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { RedlockMutex } from 'redis-semaphore';
import { createFloor } from './floor.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const quiet = { log() {}, warn() {}, error() {}, debug() {}, verbose() {} };

/** The directory of the built package under test (`--dist`, default ../dist). */
export function distDir() {
  return path.resolve(here, '..', '..', process.env.BENCH_DIST ?? 'dist');
}

/**
 * Loads the built package; `noCork` loads a second, separate instance with REDLOCK_NO_CORK set
 * (the adaptive pipelining is decided when ioredis-node.js loads); `dir` another build (the
 * base of a before/after comparison in one run).
 */
function loadLibrary(noCork, dir = distDir()) {
  const entry = path.join(dir, 'index.js');
  if (!noCork) return require(entry);
  const saved = {};
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(dir + path.sep)) {
      saved[key] = require.cache[key];
      delete require.cache[key];
    }
  }
  process.env.REDLOCK_NO_CORK = '1';
  try {
    return require(entry);
  } finally {
    delete process.env.REDLOCK_NO_CORK;
    for (const key of Object.keys(require.cache)) {
      if (key.startsWith(dir + path.sep)) delete require.cache[key];
    }
    Object.assign(require.cache, saved);
  }
}

function plainClients(urls) {
  return urls.map((url) => {
    const redis = new Redis(url);
    redis.on('error', () => {});
    return redis;
  });
}

async function clientsReady(clients) {
  await Promise.all(
    clients.map((c) =>
      c.status === 'ready' ? undefined : new Promise((resolve) => c.once('ready', resolve)),
    ),
  );
}

/** node-redlock style retry settings for a wait in ms (defaults: 200 ms + up to 100 ms jitter). */
function retryCountFor(wait, retryDelay = 200, retryJitter = 100) {
  return Math.ceil(wait / (retryDelay + retryJitter / 2));
}

function thisLibrary(label, { noCork = false, notifications, fairness, dir } = {}) {
  return {
    label,
    async create(urls, { wait } = {}) {
      const { Redlock } = loadLibrary(noCork, dir);
      const options = { logger: quiet };
      if (notifications !== undefined) options.notifications = notifications;
      if (fairness !== undefined) options.fairness = fairness;
      const redlock = new Redlock(urls, options);
      await redlock.ready();
      return {
        acquire: (resource, { ttl }) => redlock.acquire(resource, { ttl, wait }),
        close: () => redlock.close(),
        pids: () => [],
      };
    },
  };
}

/** Every contender, by key. `floor` is the reference of every ratio. */
export const CONTENDERS = {
  // Fairness named on both, since the default changed (0.13: 'queue'): the key `nestjs-redlock`
  // stays the plain contention its earlier reports measured, `-fair` is the default.
  'nestjs-redlock': thisLibrary('nestjs-redlock (fairness off)', { fairness: 'off' }),
  'nestjs-redlock-nocork': thisLibrary('nestjs-redlock (no cork)', {
    noCork: true,
    fairness: 'off',
  }),
  'nestjs-redlock-nonotify': thisLibrary('nestjs-redlock (notifications off)', {
    notifications: false,
  }),
  // Fair hand-off (issue 18, architecture.md §5.11): waiters queued on the nodes, served in order.
  'nestjs-redlock-fair': thisLibrary('nestjs-redlock (fair, the default)', { fairness: 'queue' }),
  // BENCH_BASE_DIST=dir (and BENCH_BASE_COMMIT): the same library built from another commit,
  // interleaved with this one in the same run — a before/after that shares the machine's noise.
  // Pass it with --contenders (it is in no default list).
  'nestjs-redlock-base': thisLibrary(
    `nestjs-redlock @ ${process.env.BENCH_BASE_COMMIT ?? 'base build'}`,
    { dir: process.env.BENCH_BASE_DIST && path.resolve(process.env.BENCH_BASE_DIST) },
  ),
  floor: {
    label: 'floor (minimal Redlock)',
    async create(urls, { wait } = {}) {
      const floor = createFloor(urls);
      await floor.ready();
      return { acquire: (r, { ttl }) => floor.acquire(r, { ttl, wait }), close: floor.close };
    },
  },
  'floor-autopipe': {
    label: 'floor + ioredis auto-pipelining',
    async create(urls, { wait } = {}) {
      const floor = createFloor(urls, { autoPipelining: true });
      await floor.ready();
      return { acquire: (r, { ttl }) => floor.acquire(r, { ttl, wait }), close: floor.close };
    },
  },
  'redlock-v4': {
    label: 'redlock 4.2.0',
    async create(urls, { wait } = {}) {
      const clients = plainClients(urls);
      await clientsReady(clients);
      const settings = wait === undefined ? {} : { retryCount: retryCountFor(wait) };
      const redlock = new RedlockV4(clients, settings);
      redlock.on('clientError', () => {});
      return {
        async acquire(resource, { ttl }) {
          const lock = await redlock.lock(`v4:${resource}`, ttl);
          return { release: () => lock.unlock() };
        },
        close: async () => clients.forEach((c) => c.disconnect()),
      };
    },
  },
  'redlock-v5': {
    label: 'redlock 5.0.0-beta.2',
    async create(urls, { wait } = {}) {
      const clients = plainClients(urls);
      await clientsReady(clients);
      const settings = wait === undefined ? {} : { retryCount: retryCountFor(wait) };
      const redlock = new RedlockV5(clients, settings);
      redlock.on('error', () => {});
      return {
        async acquire(resource, { ttl }) {
          const lock = await redlock.acquire([`v5:${resource}`], ttl);
          return { release: () => lock.release() };
        },
        close: async () => clients.forEach((c) => c.disconnect()),
      };
    },
  },
  sesamecare: {
    label: '@sesamecare-oss/redlock 1.4.0',
    async create(urls, { wait } = {}) {
      const clients = plainClients(urls);
      await clientsReady(clients);
      const settings = wait === undefined ? {} : { retryCount: retryCountFor(wait) };
      const redlock = new SesameRedlock(clients, settings);
      redlock.on('error', () => {});
      return {
        async acquire(resource, { ttl }) {
          const lock = await redlock.acquire([`sesame:${resource}`], ttl);
          return { release: () => lock.release() };
        },
        close: async () => clients.forEach((c) => c.disconnect()),
      };
    },
  },
  'redis-semaphore': {
    label: 'redis-semaphore 5.8.0 RedlockMutex',
    async create(urls, { wait } = {}) {
      const clients = plainClients(urls);
      await clientsReady(clients);
      const options = wait === undefined ? {} : { acquireTimeout: wait };
      return {
        async acquire(resource, { ttl }) {
          const mutex = new RedlockMutex(clients, `sem:${resource}`, {
            ...options,
            lockTimeout: ttl,
          });
          await mutex.acquire();
          return { release: () => mutex.release() };
        },
        close: async () => clients.forEach((c) => c.disconnect()),
      };
    },
  },
};

/** The contender keys of each scenario. */
export const S1_CONTENDERS = [
  'nestjs-redlock',
  'nestjs-redlock-fair',
  'nestjs-redlock-nocork',
  'nestjs-redlock-nonotify',
  'floor',
  'floor-autopipe',
  'redlock-v4',
  'redlock-v5',
  'sesamecare',
  'redis-semaphore',
];
export const S2_CONTENDERS = [
  'nestjs-redlock',
  'nestjs-redlock-fair',
  'nestjs-redlock-nonotify',
  'floor',
  'redlock-v4',
  'redlock-v5',
  'sesamecare',
  'redis-semaphore',
];
/** S5 (open-loop contention): this library, the floor and every peer. */
export const S5_CONTENDERS = [
  'nestjs-redlock',
  'nestjs-redlock-fair',
  'floor',
  'redlock-v4',
  'redlock-v5',
  'sesamecare',
  'redis-semaphore',
];
export const FAULT_CONTENDERS = [
  'nestjs-redlock',
  'nestjs-redlock-fair',
  'floor',
  'redlock-v4',
  'redlock-v5',
  'sesamecare',
  'redis-semaphore',
];
