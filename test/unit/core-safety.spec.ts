import {
  LockLostError,
  LockNotAcquiredError,
  LockNotExtendedError,
  Redlock,
  type Lock,
  type RedlockOptions,
} from '../../lib';
import { SeededRandom } from '../sim/random';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/** Issue 6, core items 1, 2, 4, 10-13, 15, 19: the core in virtual time over simulated nodes. */
describe('core safety and liveness (virtual time, simulated nodes)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}, over: readonly SimNode[] = nodes) => {
    // The plain algorithm (the fair queue, the default, has its own simulation and specs).
    const redlock = new Redlock(over, { logger: quiet, clock, fairness: 'off', ...options });
    managers.push(redlock);
    return redlock;
  };
  const holders = (lock: Lock) =>
    nodes.filter((n) => n.valueAt(`redlock:${lock.resources[0]}`) === lock.value).length;

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it("item 1: a cleanup of attempt 1 applied after attempt 2 cannot revoke attempt 2's votes", async () => {
    // A rival holds s0 for 50 ms. Attempt 1 gets s1 and s2 only after the node timeout (so it
    // fails and sends them a cleanup release), and that release is re-sent after the next
    // command on each (an EVALSHA → NOSCRIPT → EVAL fallback). Attempt 2 then gets all three.
    nodes[0].put('redlock:r', 'rival', 50);
    let attempt = 0;
    const cleanupOf = new Set<string>();
    for (const node of [nodes[1], nodes[2]]) {
      node.fault = (op, _keys, value) => {
        if (op === 'acquire' && attempt === 0) {
          attempt = 1;
          cleanupOf.add(value);
        }
        if (op === 'acquire' && cleanupOf.has(value)) return { replyDelay: 1_000 };
        if (op === 'release' && cleanupOf.has(value)) return { afterNext: true };
        return undefined;
      };
    }
    const redlock = manager({ nodeTimeout: 100, retryDelay: 60, retryJitter: 0, ttl: 10_000 });
    const lock = await clock.run(redlock.acquire('r'));
    await clock.advance(5_000);
    // Still held on a quorum: no rival can get in while we believe we hold it.
    expect(holders(lock)).toBeGreaterThanOrEqual(2);
    const rival = manager();
    await expect(clock.run(rival.tryAcquire('r'))).resolves.toBeNull();
    expect(lock.isValid()).toBe(true);
  });

  it('item 1: safety holds under random reordering, duplication, loss and delay of node commands', async () => {
    // Every ordering the port allows (node.ts): no lock is ever valid for two clients at once.
    // The run is a function of its seed (issue 23 item 7): the faults and the think times come
    // from one seeded stream, the library's own draws (retry jitter, owner values) from another
    // (the managers' `random`). Unseeded, the jitter made the count of cycles luck: 19 in a
    // fresh-clone run where more than 20 were expected.
    const run = async (seed: number) => {
      clock = new VirtualClock();
      nodes = simNodes(5, clock);
      const faults = new SeededRandom(seed);
      const draws = new SeededRandom(seed ^ 0x2545f491);
      for (const node of nodes) {
        node.fault = () => {
          const r = faults.next();
          if (r < 0.1) return { afterNext: true };
          if (r < 0.15) return { duplicateAfter: faults.next() * 300 };
          if (r < 0.2) return { dropReply: true };
          if (r < 0.25) return { lose: true };
          return { applyDelay: faults.next() * 40, replyDelay: faults.next() * 40 };
        };
      }
      const clients = [0, 1, 2, 3].map(() =>
        manager(
          {
            ttl: 400,
            nodeTimeout: 50,
            retryDelay: 10,
            retryJitter: 20,
            wait: 2_000,
            random: () => draws.next(),
          },
          nodes,
        ),
      );
      const holding: Lock[] = [];
      let overlaps = 0;
      let cycles = 0;
      const loop = async (redlock: Redlock) => {
        for (let i = 0; i < 25; i++) {
          const lock = await redlock.acquire('r').catch(() => undefined);
          if (!lock) continue;
          cycles++;
          if (holding.some((other) => other.isValid())) overlaps++;
          holding.push(lock);
          await new Promise<void>((resolve) => clock.setTimer(resolve, faults.next() * 150));
          if (holding.some((other) => other !== lock && other.isValid() && lock.isValid()))
            overlaps++;
          holding.splice(holding.indexOf(lock), 1);
          await lock.release();
        }
      };
      await clock.run(Promise.all(clients.map(loop)));
      for (const redlock of managers.splice(0)) await clock.run(redlock.close());
      return { cycles, overlaps, virtualMs: clock.now() };
    };
    const first = await run(42);
    expect(first.overlaps).toBe(0);
    // The liveness bound is the seed's, not luck's: seed 42 runs the same cycles every time (here
    // twice, other runs before it in the process) — 34 of the 100 acquisitions when written, so a
    // change to the core that starves them below a fifth fails here on every run, never now and
    // then (a quarter of the commands are reordered, duplicated, lost or lose their reply).
    expect(await run(42)).toEqual(first);
    expect(first.cycles).toBeGreaterThan(20);
  });

  it('item 2: a node reporting the same run_id as another does not vote twice', async () => {
    nodes[0].put('redlock:r', 'rival', 10_000);
    nodes[1].serverInfo = { runId: 'same', uptimeSeconds: 100, durable: false };
    nodes[2].serverInfo = { runId: 'same', uptimeSeconds: 100, durable: false };
    const redlock = manager();
    // Found as soon as the connections are open (the Nest module fails its bootstrap on it)...
    await expect(clock.run(redlock.ready())).rejects.toThrow(
      /nodes\[2\].*same Redis server as nodes\[1\]/,
    );
    // ...and never counted twice, also when the same server shows up later (a reconnect):
    // s1 and s2 are one server, so its one "yes" against s0's "no" is no quorum of three.
    const error = await clock.run(redlock.acquire('r', { wait: 0 }).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).nodes.map((n) => n.outcome)).toContain('excluded');
  });

  it('item 4: work that outlived its lock (a blocked event loop) makes using() reject with LockLostError', async () => {
    const redlock = manager({ ttl: 300, nodeTimeout: 50 });
    const lost: string[] = [];
    redlock.on('lockLost', (error) => lost.push(error.message));
    let signal: AbortSignal | undefined;
    let validBeforeWrite: boolean | undefined;
    const result = clock.run(
      redlock
        .using('r', (lock) => {
          signal = lock.signal;
          clock.jump(500); // 500 ms without yielding: no timer gets to run
          validBeforeWrite = lock.isValid();
          return 'done';
        })
        .catch((e: unknown) => e),
    );
    const error = await result;
    expect(validBeforeWrite).toBe(false);
    expect(error).toBeInstanceOf(LockLostError);
    expect(signal?.aborted).toBe(true);
    expect(lost).toHaveLength(1);
  });

  it('item 4: throwIfExpired() reads the clock, while the signal cannot have aborted yet', async () => {
    const redlock = manager({ ttl: 300, nodeTimeout: 50 });
    const lock = await clock.run(redlock.acquire('r'));
    expect(() => lock.throwIfExpired()).not.toThrow();
    clock.jump(400);
    expect(lock.signal.aborted).toBe(false);
    expect(() => lock.throwIfExpired()).toThrow(LockLostError);
    expect(lock.signal.aborted).toBe(true);
  });

  it('item 10: auto-extension is scheduled from the deadline, so a slow acquisition is still extended', async () => {
    const redlock = manager({ ttl: 1_000, nodeTimeout: 250 });
    for (const node of nodes)
      node.fault = (op) => (op === 'acquire' ? { replyDelay: 240 } : undefined);
    const lock = await clock.run(redlock.acquire('r'));
    await clock.advance(500); // validity left ≈ 1000 − 240 − 12 − 500 = 248 ms < ttl / 3
    const session = redlock.session(lock);
    await clock.advance(2_000);
    expect(lock.isValid()).toBe(true);
    expect(nodes[0].applied.extend).toBeGreaterThanOrEqual(3);
    await clock.run(session.end());
  });

  it('item 11: a lock never released leaves the registry at its deadline and reports its loss then', async () => {
    const redlock = manager({ ttl: 400, nodeTimeout: 50 });
    const lost: number[] = [];
    redlock.on('lockLost', () => lost.push(clock.now()));
    await clock.run(redlock.ready());
    const start = clock.now();
    for (let i = 0; i < 500; i++) await clock.run(redlock.acquire(`r${i}`));
    await clock.advance(1_000);
    expect(lost).toHaveLength(500);
    expect(Math.max(...lost) - start).toBeLessThan(400);
    // close() has nothing left to report
    await clock.run(redlock.close());
    expect(lost).toHaveLength(500);
  });

  it('item 12: waiters on one lease retry spread out by the jitter, not all at its expiry', async () => {
    nodes.forEach((n) => n.put('redlock:r', 'rival', 30));
    const redlock = manager({ retryDelay: 100, retryJitter: 100 });
    const attempts: number[] = [];
    nodes[0].fault = (op) => {
      if (op === 'acquire') attempts.push(clock.now());
      return undefined;
    };
    const waiters = Array.from({ length: 12 }, () =>
      redlock.acquire('r', { wait: 1_000 }).then((lock) => lock.release()),
    );
    await clock.run(Promise.all(waiters));
    // The first attempts all meet the rival's key; the second ones are capped at its expiry
    // (30 ms) and then jittered: the landed code sent all twelve at the same millisecond.
    const retries = attempts.slice(12, 24);
    expect(Math.min(...retries)).toBeGreaterThanOrEqual(attempts[0] + 30);
    expect(Math.max(...retries) - Math.min(...retries)).toBeGreaterThan(20);
  });

  it("item 13: an abort during a round is honoured at once, with the signal's reason", async () => {
    for (const node of nodes) node.fault = () => ({ replyDelay: 900 });
    const redlock = manager({ ttl: 4_000, nodeTimeout: 1_000 });
    const controller = new AbortController();
    const reason = new Error('client went away');
    clock.setTimer(() => controller.abort(reason), 10);
    const started = clock.now();
    const error = await clock.run(
      redlock.acquire('r', { wait: 0, signal: controller.signal }).catch((e: unknown) => e),
    );
    expect(error).toBe(reason);
    expect(clock.now() - started).toBeLessThan(100);
  });

  it('item 13: an abort while waiting for the first connections is honoured at once', async () => {
    const slow = simNodes(3, clock);
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    for (const node of slow) node.whenReady = () => opened;
    const redlock = manager({}, slow);
    const controller = new AbortController();
    const pending = redlock.acquire('r', { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(5);
    controller.abort(new Error('gone'));
    await expect(clock.run(pending)).resolves.toMatchObject({ message: 'gone' });
    open();
  });

  it('item 15: a hundred waiters raise no MaxListenersExceededWarning; the even-count warning has the right numbers', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      nodes.forEach((n) => n.put('redlock:r', 'rival', 200));
      const redlock = manager({ retryDelay: 50, retryJitter: 10 });
      const waiters = Array.from({ length: 100 }, () =>
        redlock.acquire('r', { wait: 100 }).catch(() => undefined),
      );
      await clock.run(Promise.all(waiters));
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
    const lines: string[] = [];
    const four = new Redlock(simNodes(4, clock), {
      clock,
      logger: { ...quiet, warn: (l) => lines.push(l) },
    });
    managers.push(four);
    expect(lines.join()).toMatch(/4 Redis nodes tolerate 1 failed node, as 3 nodes do/);
  });

  it('item 16: a majority known down fails at once as unavailable; contention keeps waiting', async () => {
    nodes[1].isDown = true;
    nodes[2].isDown = true;
    const redlock = manager();
    const started = clock.now();
    const error = await clock.run(redlock.acquire('r', { wait: 10_000 }).catch((e: unknown) => e));
    expect(error).toMatchObject({ reason: 'unavailable' });
    expect(clock.now() - started).toBeLessThan(100);
    nodes[1].isDown = false;
    nodes[2].isDown = false;
    nodes.forEach((n) => n.put('redlock:r', 'rival', 3_000));
    const waited = clock.now();
    const lock = await clock.run(redlock.acquire('r', { wait: 10_000 }));
    expect(clock.now() - waited).toBeGreaterThanOrEqual(3_000);
    await clock.run(lock.release());
  });

  it('item 17: release resolves once a quorum confirmed, without the hung node', async () => {
    const redlock = manager({ nodeTimeout: 1_000, ttl: 10_000 });
    const lock = await clock.run(redlock.acquire('r'));
    nodes[2].fault = () => ({ replyDelay: 60_000 });
    const started = clock.now();
    await clock.run(lock.release());
    expect(clock.now() - started).toBeLessThan(1_000);
  });

  it('item 19: an extension short of a quorum while the lock is valid is LockNotExtendedError, not a loss', async () => {
    const redlock = manager({ nodeTimeout: 100, ttl: 1_000 });
    const lock = await clock.run(redlock.acquire('r'));
    nodes[1].fault = nodes[2].fault = (op) => (op === 'extend' ? { replyDelay: 5_000 } : undefined);
    const error = await clock.run(lock.extend().catch((e: unknown) => e));
    expect(error).toBeInstanceOf(LockNotExtendedError);
    expect(error).not.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.isValid()).toBe(true);
    expect((error as LockNotExtendedError).remainingMs).toBeGreaterThan(0);
  });

  it('mutant: extension validity is measured from the start of the round, not its end', async () => {
    const redlock = manager({ nodeTimeout: 250, ttl: 1_000, driftFactor: 0 });
    const lock = await clock.run(redlock.acquire('r'));
    for (const node of nodes)
      node.fault = (op) => (op === 'extend' ? { replyDelay: 200 } : undefined);
    await clock.run(lock.extend());
    // ttl − round time − drift (2 ms): the nodes restarted their countdown before the reply.
    expect(lock.remainingMs()).toBeCloseTo(1_000 - 200 - 2, 5);
  });
});
