/**
 * One campaign worker: an OS process running concurrent lock loops against the real fleet with
 * the compiled library, recording one JSONL line per operation. Forked by campaign.mjs with its
 * settings in env CAMPAIGN_WORKER (JSON).
 *
 * History line: { p, l, op, res, invoke, ok?, from?, until?, done, token?, outcome, enter?,
 * committed?, intruder?, counts? } — times in ms on the system-wide monotonic clock
 * (process.hrtime.bigint(), the same in every process). `from`..`until` is when this holder
 * believed it held the lock: from the grant to grant + remainingMs(), pushed by every extension
 * and every check, cut by the release, by lock.signal, or by a failed check.
 *
 * The external witness (a separate Redis) is written only right after lock.throwIfExpired(), with
 * the fencing token: entry records the owner and reads a counter, exit writes counter + 1 unless a
 * newer token was seen (a fenced resource) and reports whether someone else entered meanwhile.
 */
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { seeded } from './random.mjs';

const config = JSON.parse(process.env.CAMPAIGN_WORKER ?? '{}');
const require = createRequire(import.meta.url);
const { Redlock } = require(`${config.build}/core/index.js`);
const Redis = require('ioredis');

const now = () => Number(process.hrtime.bigint()) / 1e6;
const rng = seeded(config.seed);
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

const nodes = config.broken ? config.nodes.slice(0, 1) : config.nodes;
const redlock = new Redlock(nodes, {
  ttl: config.ttl,
  // The fleet's longest lease, the same for every worker of it (issue 23): what a restarted node
  // waits out when its peers cannot tell.
  maxTtl: config.maxTtl,
  nodeTimeout: config.nodeTimeout,
  retryDelay: 20,
  retryJitter: 30,
  // A fenced lock never waits in a fair queue (fair-queue.ts eligible): fair workers take none,
  // and the witness checks them by owner instead of by token.
  fencing: !config.fair,
  ...(config.fair ? { fairness: 'queue' } : {}),
  quarantine: config.quarantine,
  logger: quiet,
});
// Fair workers: how many locks a release in this process handed straight over (0 attempts).
let handedOver = 0;
redlock.on('acquired', (event) => {
  if (event.attempts === 0) handedOver++;
});
const witness = new Redis(config.witness, { maxRetriesPerRequest: 2, lazyConnect: false });

// Entry: refused (-1) when a newer token already entered; else records us as the owner, raises
// the token and returns the counters (read, to be written back + 1 on exit).
witness.defineCommand('enter', {
  lua: `
for i = 1, #KEYS do
  if ARGV[2] ~= '' and tonumber(ARGV[2]) < tonumber(redis.call('HGET', KEYS[i], 'token') or '0') then return -1 end
end
local counts = {}
for i = 1, #KEYS do
  if ARGV[2] ~= '' then redis.call('HSET', KEYS[i], 'token', ARGV[2]) end
  redis.call('HSET', KEYS[i], 'owner', ARGV[1])
  counts[i] = tonumber(redis.call('HGET', KEYS[i], 'count') or '0')
end
return counts`,
});
// Exit: {committed, intruder}. The counters are written unless a newer token entered (fenced);
// `intruder` says whether anyone else entered since our entry.
witness.defineCommand('leave', {
  lua: `
local stale, intruder = 0, 0
for i = 1, #KEYS do
  if ARGV[2] ~= '' and tonumber(ARGV[2]) < tonumber(redis.call('HGET', KEYS[i], 'token') or '0') then stale = 1 end
  if redis.call('HGET', KEYS[i], 'owner') ~= ARGV[1] then
    intruder = 1
    -- Without a token (fair workers), a write is fenced by owner: not after someone else entered.
    if ARGV[2] == '' then stale = 1 end
  end
end
if stale == 1 then return {0, intruder} end
for i = 1, #KEYS do redis.call('HSET', KEYS[i], 'count', ARGV[2 + i]) end
return {1, intruder}`,
});

const end = now() + config.durationMs;
const resources = Array.from(
  { length: config.resources },
  (_, i) => `${config.resourceName ?? 'r'}${i}`,
);

function record(entry) {
  appendFileSync(config.history, `${JSON.stringify(entry)}\n`);
}

/** Holds `lock` for one critical section, keeping `rec.until` honest. */
async function hold(lock, rec, longSection) {
  const owner = `${config.id}.${rec.l}.${rec.n}`;
  const sample = () => {
    const t = now();
    const left = lock.remainingMs();
    if (left > 0) rec.until = Math.max(rec.until ?? 0, t + left);
  };
  const cut = () => {
    if (rec.until !== undefined) rec.until = Math.min(rec.until, now());
  };
  rec.ok = now();
  rec.from = rec.ok;
  rec.until = rec.ok;
  rec.token = lock.fencingToken;
  sample();
  // Every extension pushes the belief (auto-extension calls lock.extend on the instance).
  const extend = lock.extend.bind(lock);
  lock.extend = async (ttl) => {
    await extend(ttl);
    sample();
  };
  lock.signal.addEventListener('abort', cut, { once: true });
  const keys = lock.resources.map((r) => `w:${r}`);
  try {
    lock.throwIfExpired();
    sample();
    const counts = await witness.enter(
      keys.length,
      ...keys,
      owner,
      String(lock.fencingToken ?? ''),
    );
    if (counts === -1) {
      rec.enter = 'fenced';
      return;
    }
    rec.enter = 'ok';
    const total = longSection ? rng.between(1.2, 2) * config.ttl : rng.between(0, 15);
    const steps = rng.int(1, 3);
    for (let s = 0; s < steps; s++) {
      await sleep(total / steps);
      lock.throwIfExpired();
      sample();
      // Leases lengthened past the ttl (issue 16 defect 2): a restart during one must keep the
      // node out for as long.
      if (config.extendLonger && longSection && rng.chance(0.5)) {
        await lock.extend(config.ttl * rng.int(2, 4));
        lock.throwIfExpired();
      }
    }
    lock.throwIfExpired();
    sample();
    const [committed, intruder] = await witness.leave(
      keys.length,
      ...keys,
      owner,
      String(lock.fencingToken ?? ''),
      ...counts.map((c) => c + 1),
    );
    // An intruder seen while we are still valid entered while we held the lock: a violation
    // the witness saw. After our validity it may be a legitimate successor.
    const stillValid = lock.isValid();
    rec.committed = committed === 1;
    if (intruder === 1) rec.intruder = stillValid ? 'while-valid' : 'after-expiry';
  } finally {
    cut();
  }
}

async function loop(l) {
  let n = 0;
  while (now() < end) {
    const op = rng.pick(['acquire', 'try', 'using', 'using', 'multi']);
    const res =
      op === 'multi'
        ? [...new Set([rng.pick(resources), rng.pick(resources), rng.pick(resources)])]
        : [rng.pick(resources)];
    const wait = op === 'try' ? 0 : rng.pick([0, config.ttl / 2, 2 * config.ttl]);
    // Safe phases: a few sections outlive the ttl (auto-extension, or a lease that runs out).
    // The restart control makes every section long: a holder must still believe it holds when a
    // majority comes back empty, or the control could pass by luck with 0-15 ms sections.
    const longSection =
      config.allLong ||
      (op !== 'acquire' && op !== 'try' && rng.chance(config.extendLonger ? 0.3 : 0.05));
    // Fair workers fence one acquire in four (issue 24 item 1): a fenced lock never queues, and
    // takes its turn beside the queued ones.
    const fenced = config.fair && op === 'acquire' && rng.chance(0.25);
    // Issue 24 item 4: a waiting acquisition in a fair queue, or outside one (plain: fenced,
    // several resources, a worker with fairness off).
    const kind =
      op === 'try' || wait === 0
        ? undefined
        : config.fair && res.length === 1 && !fenced
          ? 'queued'
          : 'plain';
    const rec = { p: config.id, l, n: n++, op, res, wait, kind, invoke: now() };
    try {
      if (op === 'using' || op === 'multi') {
        await redlock.using(res, { wait }, (lock) => hold(lock, rec, longSection));
      } else {
        const lock =
          op === 'try'
            ? await redlock.tryAcquire(res)
            : await redlock.acquire(res, fenced ? { wait, fencing: true } : { wait });
        if (lock === null) rec.outcome = 'busy';
        else {
          try {
            await hold(lock, rec, longSection);
          } finally {
            rec.releasing = now();
            await lock.release();
          }
        }
      }
      rec.outcome ??= 'ok';
    } catch (error) {
      if (error?.name === 'LockNotAcquiredError') rec.outcome = error.reason;
      else if (error?.name === 'LockLostError') rec.outcome = 'lost';
      else if (error?.name === 'LockNotExtendedError') rec.outcome = 'notExtended';
      else rec.outcome = `error: ${error?.message ?? error}`;
    }
    rec.done = now();
    record(rec);
    if (rec.outcome !== 'ok') await sleep(rng.between(0, 10));
  }
}

await Promise.all(Array.from({ length: config.loops }, (_, l) => loop(l)));
await redlock.close();
await witness.quit();
if (config.fair)
  console.log(`  worker ${config.id} (fair): ${handedOver} locks handed over locally`);
process.exit(0);
