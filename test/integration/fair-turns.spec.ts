import { setTimeout as delay } from 'node:timers/promises';
import type { Redlock } from '../../lib';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';
import { rawClient, sharedFleet } from './helpers';

/**
 * Issue 24 items 1, 2 and 2b (architecture.md §5.11): every acquisition takes a turn, a waiter that
 * leaves passes its turn on, and a hand-off never idles.
 */
describe('fair turns (5 nodes)', () => {
  const shared = sharedFleet(5);
  let proxies: LatencyProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });
  const fair = (extra: Parameters<typeof shared.manager>[0] = {}): Redlock =>
    shared.manager({ fairness: 'queue', ttl: 10_000, ...extra });

  /**
   * Poisson arrivals at `rate`/s for `ms` over `managers`, each holding `holdMs`: the waits, and
   * the longest idle spell — from a release to the next acquisition while requests waited.
   */
  async function openLoop(managers: Redlock[], key: string, rate: number, ms: number) {
    await Promise.all(managers.map((m) => m.ready()));
    const waits: number[] = [];
    let failed = 0;
    let waiting = 0;
    let inside = 0;
    let maxInside = 0;
    let idleFrom: number | undefined;
    let maxIdle = 0;
    const work: Promise<void>[] = [];
    const start = performance.now();
    let at = 0;
    let i = 0;
    for (;;) {
      at += -Math.log(1 - Math.random()) * (1000 / rate);
      if (at >= ms) break;
      const ahead = start + at - performance.now();
      if (ahead > 1) await delay(ahead);
      const manager = managers[i++ % managers.length];
      const arrived = performance.now();
      waiting++;
      work.push(
        manager.acquire(key, { wait: 10_000 }).then(
          async (lock) => {
            const now = performance.now();
            waiting--;
            waits.push(now - arrived);
            if (idleFrom !== undefined) maxIdle = Math.max(maxIdle, now - idleFrom);
            idleFrom = undefined;
            inside++;
            maxInside = Math.max(maxInside, inside);
            await delay(1);
            inside--;
            await lock.release();
            if (waiting > 0 && inside === 0) idleFrom = performance.now();
          },
          () => {
            waiting--;
            failed++;
          },
        ),
      );
    }
    await Promise.all(work);
    waits.sort((a, b) => a - b);
    return { waits, failed, maxInside, maxIdle };
  }

  it('open-loop arrivals over 2 managers: no hand-off idles while requests wait (item 2b)', async () => {
    const handOffLease = 1_000;
    const managers = [fair({ handOffLease }), fair({ handOffLease })];
    const { waits, failed, maxInside, maxIdle } = await openLoop(managers, 'turn:open', 150, 4_000);
    expect(failed).toBe(0);
    expect(maxInside).toBe(1);
    const p99 = waits[Math.floor(waits.length * 0.99)];
    if (process.env.FAIR_REPORT) {
      process.stdout.write(
        `open loop: ${waits.length} served, p99 ${p99.toFixed(1)} ms, longest idle ${maxIdle.toFixed(1)} ms\n`,
      );
    }
    // A reservation that expired unclaimed while live waiters existed idles the lock a lease.
    expect(maxIdle).toBeLessThan(handOffLease / 4);
  }, 60_000);

  it('a waiter that gives up while the lock is being handed to it never keeps it: the next waiter gets it (item 2)', async () => {
    const redlock = fair();
    const first = await redlock.acquire('turn:abort');
    const controller = new AbortController();
    const leaving = redlock.acquire('turn:abort', { wait: 10_000, signal: controller.signal });
    const after = redlock.acquire('turn:abort', { wait: 10_000 });
    await delay(50);
    // The release shifts `leaving` off the line and swaps the key to it on the nodes; it gives
    // up while that round is out.
    const releasing = first.release();
    controller.abort(new Error('caller left'));
    const outcome = await leaving.then(
      async (lock) => {
        await lock.release();
        return 'handed a lock after its wait ended';
      },
      (error: Error) => error.message,
    );
    expect(outcome).toBe('caller left');
    await releasing;
    const started = performance.now();
    const next = await after;
    expect(performance.now() - started).toBeLessThan(1_000);
    await next.release();
  });

  it('a waiter whose wait ends while the lock is being handed to it never keeps it: the next waiter gets it (item 2)', async () => {
    // Three of the five nodes (a quorum) 100 ms away each way once the hand-off starts: its swap
    // round takes 200 ms, and the waiter's wait ends in the middle of it.
    const fleet = shared.fleet;
    proxies = await Promise.all([0, 1, 2].map((i) => startLatencyProxy(fleet.nodes[i].port, 0)));
    const nodes = [...proxies.map((p) => p.url), ...fleet.urls().slice(3)];
    const redlock = shared.manager({ fairness: 'queue', ttl: 10_000, nodeTimeout: 1_000 }, nodes);
    const handed: number[] = [];
    redlock.on('acquired', (event) => handed.push(event.attempts));
    await (await redlock.acquire('turn:late:warm')).release();
    const first = await redlock.acquire('turn:late');
    const leaving = redlock.acquire('turn:late', { wait: 400 });
    const after = redlock.acquire('turn:late', { wait: 10_000 });
    await delay(300);
    for (const proxy of proxies) proxy.setDelay(100);
    const releasing = first.release();
    const outcome = await leaving.then(
      async (lock) => {
        await lock.release();
        return 'handed a lock after its wait ended';
      },
      (error: Error & { reason?: string }) => error.reason,
    );
    expect(outcome).toBe('held');
    await releasing;
    for (const proxy of proxies) proxy.setDelay(0);
    const started = performance.now();
    const next = await after;
    expect(performance.now() - started).toBeLessThan(1_500);
    await next.release();
  });

  it('a group whose turn comes as its last waiter leaves passes the reservation on at once (item 2)', async () => {
    const handOffLease = 5_000;
    const [holder, leaver, next] = [
      fair({ handOffLease }),
      fair({ handOffLease }),
      fair({ handOffLease }),
    ];
    await Promise.all([holder.ready(), leaver.ready(), next.ready()]);
    await holder.acquire('turn:leave');
    const controller = new AbortController();
    const leaving = leaver.acquire('turn:leave', { wait: 20_000, signal: controller.signal });
    leaving.catch(() => undefined);
    await delay(100);
    const waiting = next.acquire('turn:leave', { wait: 20_000 });
    await delay(200);
    const clients = shared.fleet.urls().map((url) => rawClient(url));
    try {
      // Both groups queued, the leaver's first. What the holder's release would leave: the key
      // reserved for the leaver's group, out of the queue — but unannounced, so that the leaver
      // is still waiting for its turn when it gives up.
      const queues = await Promise.all(
        clients.map((c) => c.zrange('redlock:turn:leave\0q', 0, -1)),
      );
      expect(queues.map((q) => q.length)).toEqual([2, 2, 2, 2, 2]);
      const group = queues[0][0];
      await Promise.all(
        clients.map(async (c) => {
          await c.zrem('redlock:turn:leave\0q', group);
          await c.set('redlock:turn:leave', `\0r${group}`, 'PX', handOffLease);
        }),
      );
      const left = performance.now();
      controller.abort(new Error('caller left'));
      const taken = await waiting;
      // Passed on by the leave at once; before, the next group waited for the reservation to
      // expire and for its own sleep (the holder's 10 s lease) to end.
      expect(performance.now() - left).toBeLessThan(1_000);
      await taken.release();
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('several dead groups at the head cost each live waiter at most a lease per dead group ahead of it (item 2)', async () => {
    const handOffLease = 400;
    const [holder, a, b] = [fair({ handOffLease }), fair({ handOffLease }), fair({ handOffLease })];
    await Promise.all([holder.ready(), a.ready(), b.ready()]);
    const lock = await holder.acquire('turn:dead');
    const clients = shared.fleet.urls().map((url) => rawClient(url));
    try {
      // Three processes SIGKILLed while queued first.
      await Promise.all(
        clients.map((c) =>
          Promise.all(
            ['dead1', 'dead2', 'dead3'].map((g, i) => c.zadd('redlock:turn:dead\0q', i, g)),
          ).then(() => c.set('redlock:turn:dead\0w', '1', 'PX', 60_000)),
        ),
      );
      const served: number[] = [];
      const waiters = [a, b].map(async (m, i) => {
        await delay(50 * i);
        const l = await m.acquire('turn:dead', { wait: 20_000 });
        served.push(performance.now());
        await delay(5);
        await l.release();
      });
      await delay(200);
      const released = performance.now();
      await lock.release();
      await Promise.all(waiters);
      const after = served.map((t) => t - released);
      if (process.env.FAIR_REPORT)
        process.stdout.write(`dead groups: served after ${after.map(Math.round).join(', ')} ms\n`);
      // Three dead groups, three leases at most in all, whoever is served when.
      expect(after[1]).toBeLessThan(3 * handOffLease + 1_500);
      const queued = await Promise.all(clients.map((c) => c.zcard('redlock:turn:dead\0q')));
      expect(queued).toEqual([0, 0, 0, 0, 0]);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  /**
   * Steady contention from fair waiters: `workers` closed loops per manager, each acquiring the
   * key, holding it 2 ms and releasing it, until stopped: the key goes from holder to holder and
   * is never free. Returns a stop function that resolves with the lock cycles served.
   */
  async function steady(key: string, managers: Redlock[], workers = 1) {
    await Promise.all(managers.map((m) => m.ready()));
    let stop = false;
    let cycles = 0;
    const loops = managers.flatMap((m) =>
      Array.from({ length: workers }, async () => {
        while (!stop) {
          const lock = await m.acquire(key, { wait: 10_000 });
          cycles++;
          await delay(1);
          await lock.release();
        }
      }),
    );
    await delay(500);
    return async () => {
      stop = true;
      await Promise.all(loops);
      return cycles;
    };
  }

  it.each([
    ['a fenced acquisition', { fencing: true }, 'turn:steady:fenced', false],
    ['a multi-resource acquisition', {}, 'turn:steady:multi', true],
    ['a lock manager with fairness off', {}, 'turn:steady:off', false],
  ] as const)(
    'under steady contention from fair waiters, %s gets its turn well within a 3 s wait (item 1)',
    async (_what, options, key, multi) => {
      const managers = [0, 1, 2].map(() => fair());
      // Fairness off named: the default is 'queue' since issue 24 item 3 (this case ran a fair
      // manager under its name until stop 38).
      const other =
        key === 'turn:steady:off' ? shared.manager({ ttl: 10_000, fairness: 'off' }) : fair();
      await other.ready();
      const stop = await steady(key, managers);
      let failed = 0;
      other.on('attemptFailed', () => failed++);
      try {
        const started = performance.now();
        const lock = await other.acquire(multi ? [key, `${key}:b`] : key, {
          ...options,
          wait: 3_000,
        });
        const waited = performance.now() - started;
        await lock.release();
        if (process.env.FAIR_REPORT) process.stdout.write(`${key}: ${Math.round(waited)} ms\n`);
        // Within its wait, and well before it ends (before issue 24 item 1's fix: `held` after 3 s).
        // The manager with fairness off took 0.5-1.8 s in full runs until a probe read a key
        // reserved for it as one to attempt (stop 39: PROBE_SCRIPT); 24-46 ms since.
        expect(waited).toBeLessThan(1_500);
        // Not woken by every reservation for a queued group (it cannot take one): before, 700-900
        // attempts in the 3 s wait.
        expect(failed).toBeLessThan(30);
      } finally {
        expect(await stop()).toBeGreaterThan(20);
      }
    },
    30_000,
  );

  it.each([
    ['a lock manager with fairness off', 'off'],
    ["a fenced acquisition of the chain's own lock manager", 'fenced'],
    ["a multi-resource acquisition of the chain's own lock manager", 'multi'],
  ] as const)(
    'while one fair lock manager hands the lock from one of its waiters to the next, %s gets its turn (item 1)',
    async (_what, kind) => {
      // Nobody is queued on the nodes: every hand-off is a local swap (no release, nothing
      // announced). Before: `held` after the full 3 s wait (plain waiters marked only keys with
      // a fair queue on the node).
      const chain = fair();
      const key = `turn:chain:${kind}`;
      const other = kind === 'off' ? shared.manager({ ttl: 10_000, fairness: 'off' }) : chain;
      await other.ready();
      const stop = await steady(key, [chain], 3);
      try {
        const started = performance.now();
        const lock = await other.acquire(kind === 'multi' ? [key, `${key}:b`] : key, {
          fencing: kind === 'fenced',
          wait: 3_000,
        });
        const waited = performance.now() - started;
        await lock.release();
        if (process.env.FAIR_REPORT) process.stdout.write(`${key}: ${Math.round(waited)} ms\n`);
        expect(waited).toBeLessThan(2_500);
      } finally {
        expect(await stop()).toBeGreaterThan(20);
      }
    },
    30_000,
  );

  it('under steady contention from fair waiters, a single attempt (wait: 0) does not jump the queue (item 1)', async () => {
    const managers = [fair(), fair(), fair()];
    const stop = await steady('turn:steady:once', managers);
    try {
      const other = fair();
      for (let i = 0; i < 20; i++) {
        await expect(other.acquire('turn:steady:once', { wait: 0 })).rejects.toMatchObject({
          reason: 'held',
        });
        await delay(5);
      }
    } finally {
      await stop();
    }
  });
});
