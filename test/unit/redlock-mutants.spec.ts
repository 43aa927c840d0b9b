import {
  LockLostError,
  LockNotAcquiredError,
  LockReentryError,
  Redlock,
  RedlockConfigError,
  type RedlockOptions,
} from '../../lib';
import { getEventListeners } from 'node:events';
import { LockKeyConflictError } from '../../lib';
import { KeyTypeConflict, type RedisNode } from '../../lib/core/nodes/node';
import { HealthNode } from '../sim/health-node';
import { horizonKey, simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 9 item 5, redlock.ts: tests written against the mutants of the lock manager that
 * survived the rest of the unit suite (stryker.config.mjs). What they pin is what a user of the
 * class sees — its events and their payloads, its errors and when they come, how long a waiter
 * sleeps between attempts, which nodes vote — in virtual time over simulated nodes, so each
 * assertion is exact and no machine speed enters it. The survivors that are left are explained
 * in test/unit/mutation-survivors.spec.ts.
 */

describe('Redlock (redlock.ts) in virtual time: what mutants of it change', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const lines: string[] = [];
  const logger = {
    log: (line: string) => void lines.push(`log ${line}`),
    warn: (line: string) => void lines.push(`warn ${line}`),
    error: (line: string) => void lines.push(`error ${line}`),
  };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}, on: readonly RedisNode[] = nodes) => {
    const redlock = new Redlock(on, {
      logger,
      clock,
      notifications: false,
      // The plain contention these tests pin (the fair queue has its own specs): with
      // `notifications: true` below, the default fairness would be the queue.
      fairness: 'off',
      telemetry: false,
      retryJitter: 0,
      ...options,
    });
    managers.push(redlock);
    return redlock;
  };
  /** Waits `ms` of virtual time (inside work that `clock.run` drives). */
  const pause = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));
  const healthNodes = (count: number) =>
    Array.from({ length: count }, (_, i) => new HealthNode(`h${i}`, clock));

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    lines.length = 0;
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  /** A rival's key for `resource` on every node, for `ms`. */
  const rivalHolds = (resource: string, ms: number, on: readonly SimNode[] = nodes) => {
    for (const node of on) node.put(`redlock:${resource}`, 'rival', ms);
  };

  describe('events and their payloads', () => {
    it("'acquired' after a wait: the attempts made, the time waited, the validity, the fencing token", async () => {
      const redlock = manager({ ttl: 5_000, fencing: true, retryDelay: 1_000 });
      rivalHolds('r', 300);
      const events: unknown[] = [];
      redlock.on('acquired', (event) => events.push(event));
      const start = clock.now();
      const lock = await clock.run(redlock.acquire('r'));
      // Attempt 1 at t0 is refused; the retry waits for the rival's lease (300 ms), not retryDelay.
      expect(clock.now() - start).toBe(300);
      expect(events).toEqual([
        {
          resources: ['r'],
          attempts: 2,
          waitMs: 300,
          validityMs: lock.remainingMs(),
          fencingToken: lock.fencingToken,
        },
      ]);
      expect(lock.remainingMs()).toBeGreaterThan(4_900);
      expect(lock.fencingToken).toBeGreaterThan(0);
    });

    it("'attemptFailed' for every refused attempt: its number, why, and each node's answer", async () => {
      const redlock = manager({ ttl: 5_000, retryDelay: 1_000 });
      rivalHolds('r', 1_500);
      const events: { attempt: number; reason: string; nodes: { node: string }[] }[] = [];
      redlock.on('attemptFailed', (event) => events.push(event as never));
      await clock.run(redlock.acquire('r'));
      expect(events.map((event) => event.attempt)).toEqual([1, 2]);
      expect(events.every((event) => event.reason === 'held')).toBe(true);
      expect(events[0]).toMatchObject({ resources: ['r'] });
      expect(events[0].nodes.map((outcome) => outcome.node)).toEqual(['s0', 's1', 's2']);
    });

    it("'extended' with the validity the extension gave, 'released' with the time held", async () => {
      const redlock = manager({ ttl: 5_000 });
      const extended: unknown[] = [];
      const released: unknown[] = [];
      redlock.on('extended', (event) => extended.push(event));
      redlock.on('released', (event) => released.push(event));
      const lock = await clock.run(redlock.acquire('r'));
      await clock.advance(1_000);
      await clock.run(lock.extend(8_000));
      expect(extended).toEqual([{ resources: ['r'], validityMs: lock.remainingMs() }]);
      expect(lock.remainingMs()).toBeGreaterThan(7_800);
      expect(lock.remainingMs()).toBeLessThanOrEqual(8_000);
      await clock.advance(234);
      await clock.run(lock.release());
      expect(released).toEqual([{ resources: ['r'], heldMs: 1_234 }]);
    });

    it("no 'released' for a lock that was lost before its release", async () => {
      const redlock = manager({ ttl: 1_000 });
      const released: unknown[] = [];
      const lost: unknown[] = [];
      redlock.on('released', (event) => released.push(event));
      redlock.on('lockLost', (error) => lost.push(error));
      const lock = await clock.run(redlock.acquire('r'));
      await clock.advance(1_500);
      await clock.run(lock.release().catch(() => undefined));
      expect(lost).toHaveLength(1);
      expect(released).toEqual([]);
    });

    it("a node's connection state as 'nodeDown' / 'nodeUp' / 'nodeSlow', named", () => {
      const fleet = healthNodes(3);
      const redlock = manager({}, fleet);
      const events: string[] = [];
      for (const name of ['nodeDown', 'nodeUp', 'nodeSlow'] as const) {
        redlock.on(name, (event) => events.push(`${name} ${event.node}`));
      }
      fleet[1].report('down');
      fleet[1].report('up');
      fleet[2].report('slow');
      expect(events).toEqual(['nodeDown h1', 'nodeUp h1', 'nodeSlow h2']);
    });

    it("'nodeQuarantined' with the time left, then 'nodeRejoined', each logged once", async () => {
      const redlock = manager({ ttl: 10_000 });
      const events: unknown[] = [];
      redlock.on('nodeQuarantined', (event) => events.push(['quarantined', event]));
      redlock.on('nodeRejoined', (event) => events.push(['rejoined', event]));
      // A lease of 10 s records a horizon of 20 s on every node (two ttls ahead).
      await clock.run((await clock.run(redlock.acquire('r'))).release());
      await clock.advance(1_000);
      nodes[2].crash(true);
      nodes[2].serverInfo = { runId: 's2#1', uptimeSeconds: 0, durable: false };
      await clock.run(redlock.tryAcquire('q'));
      // 19 s of horizon left on its peers, plus drift (1 %) and 2 ms.
      expect(events).toEqual([['quarantined', { node: 's2', remainingMs: 19_192 }]]);
      expect(lines.filter((line) => line.startsWith('warn'))).toEqual([
        'warn Redis node s2 restarted without proof that its data survived, so it may have lost keys of locks still held: it does not count toward a quorum for up to 19192 ms, until the leases its peers recorded have ended',
      ]);
      await clock.advance(10_000);
      await clock.run(redlock.tryAcquire('q'));
      expect(events).toHaveLength(1);
      await clock.advance(10_000);
      expect(events).toEqual([
        ['quarantined', { node: 's2', remainingMs: 19_192 }],
        ['rejoined', { node: 's2' }],
      ]);
      expect(lines).toContain('log Redis node s2 counts toward a quorum again');
    });
  });

  describe('which nodes vote', () => {
    const aged = (uptimes: number[]) =>
      nodes.forEach((node, i) => {
        node.serverInfo = {
          runId: `s${i}`,
          uptimeSeconds: uptimes[i],
          durable: false,
          readAt: clock.now(),
        };
      });

    it('quarantine: false lets a just-restarted node vote; a quarantine keeps it out', async () => {
      aged([86_400, 86_400, 2]);
      // Its peers report a lease horizon a minute ahead: a lease it may have lost.
      // (filed under its run_id before the restart: s2#0).
      for (const node of nodes.slice(0, 2)) node.fileHorizon('s2#0', 60_000, horizonKey(nodes));
      rivalHolds('r', 60_000, [nodes[0]]);
      // s1 and s2 grant: two of three with s2 counted, one of two voters without it.
      const open = manager({ quarantine: false });
      const lock = await clock.run(open.tryAcquire('r'));
      expect(lock).not.toBeNull();
      await clock.run(lock!.release());
      const strict = manager({});
      await expect(clock.run(strict.tryAcquire('r'))).resolves.toBeNull();
    });

    it('a longer per-call ttl records a longer horizon, which keeps a restarted node out as long, up to maxTtl', async () => {
      const redlock = manager({ ttl: 10_000 });
      const quarantined: number[] = [];
      redlock.on('nodeQuarantined', (event) => quarantined.push(event.remainingMs));
      await clock.run((await clock.run(redlock.acquire('long', { ttl: 60_000 }))).release());
      // 40 s later: past two default ttls, well inside two 60 s ones.
      await clock.advance(40_000);
      nodes[2].crash(true);
      nodes[2].serverInfo = { runId: 's2#1', uptimeSeconds: 0, durable: false };
      rivalHolds('r', 60_000, [nodes[0]]);
      // s1 and s2 would grant; s2 does not vote.
      await expect(clock.run(redlock.tryAcquire('r'))).resolves.toBeNull();
      // Its peers' horizons (80 s left) outlast maxTtl (60 s): it waits until it is settled.
      expect(quarantined).toEqual([Math.ceil(60_000 * 1.01) + 2]);
    });

    it('a node that reports the run_id of an earlier one does not vote (one server, listed twice)', async () => {
      const redlock = manager({ quarantine: false });
      // Connected as three servers; then s2 turns out to be s1 (a DNS alias re-pointed).
      await clock.run(redlock.ready());
      nodes.forEach((node, i) => {
        node.serverInfo = {
          runId: i === 0 ? 'a' : 'b',
          uptimeSeconds: 86_400,
          durable: false,
          readAt: clock.now(),
        };
      });
      rivalHolds('r', 60_000, [nodes[0]]);
      // s1 and s2 grant, but they are one server: one vote of three.
      await expect(clock.run(redlock.tryAcquire('r'))).resolves.toBeNull();
      await expect(clock.run(redlock.ready())).rejects.toThrow(/nodes\[2\].*same Redis server/);
    });
  });

  describe('nodes known down', () => {
    it('a majority down: unavailable at once, with each node named and no attempt made', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({ wait: 10_000 }, fleet);
      fleet[0].report('down');
      fleet[2].report('down');
      const start = clock.now();
      const error = (await clock.run(redlock.acquire('r')).catch((e: unknown) => e)) as
        LockNotAcquiredError | undefined;
      expect(clock.now()).toBe(start);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error!.reason).toBe('unavailable');
      expect(error!.attempts).toBe(0);
      expect(error!.detail).toBe('2 of 3 Redis nodes are down (h0, h2), so no quorum can answer');
      expect(error!.nodes).toEqual([
        { node: 'h0', outcome: 'error', error: 'connection closed' },
        { node: 'h1', outcome: 'pending', error: undefined },
        { node: 'h2', outcome: 'error', error: 'connection closed' },
      ]);
      expect(fleet.map((node) => node.applied.acquire)).toEqual([0, 0, 0]);
    });

    it('a minority down does not stop an acquisition', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({}, fleet);
      fleet[0].report('down');
      const lock = await clock.run(redlock.acquire('r'));
      expect(lock.isValid()).toBe(true);
    });

    it('a majority that goes down while waiting ends the wait, counting the attempts made', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({ wait: 10_000, retryDelay: 100 }, fleet);
      rivalHolds('r', 60_000, fleet);
      const attempt = redlock.acquire('r').catch((e: unknown) => e);
      await clock.advance(250);
      fleet[0].report('down');
      fleet[1].report('down');
      const error = (await clock.run(attempt)) as LockNotAcquiredError;
      expect(error.reason).toBe('unavailable');
      expect(error.attempts).toBe(3);
      expect(clock.now()).toBeLessThan(1_000 + 400);
    });
  });

  describe('waiting between attempts', () => {
    it('sleeps retryDelay when no lease is known, plus up to retryJitter', async () => {
      // Every node answers with an error: no lease to wait for.
      for (const node of nodes) node.fault = () => ({ error: new Error('LOADING') });
      jest.spyOn(Math, 'random').mockReturnValue(0.5);
      const redlock = manager({ wait: 1_000, retryDelay: 200, retryJitter: 100 });
      const start = clock.now();
      const error = (await clock.run(redlock.acquire('r').catch((e: unknown) => e))) as
        LockNotAcquiredError | undefined;
      // Attempts at 0, 250, 500, 750, 1000 (200 + 0.5 × 100 apart): five.
      expect(error!.attempts).toBe(5);
      expect(clock.now() - start).toBe(1_000);
      expect(nodes[0].applied.acquire).toBe(0);
    });

    it('sleeps no longer than a blocking lease lasts, then adds the jitter', async () => {
      jest.spyOn(Math, 'random').mockReturnValue(0.5);
      const redlock = manager({ retryDelay: 5_000, retryJitter: 40 });
      rivalHolds('r', 300);
      const start = clock.now();
      await clock.run(redlock.acquire('r'));
      expect(clock.now() - start).toBe(320);
    });

    it('never sleeps past its wait budget', async () => {
      const redlock = manager({ retryDelay: 5_000, wait: 250 });
      rivalHolds('r', 60_000);
      const start = clock.now();
      const error = await clock.run(redlock.acquire('r').catch((e: unknown) => e));
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).attempts).toBe(2);
      expect(clock.now() - start).toBe(250);
    });
  });

  describe('release notifications (pub/sub on simulated nodes)', () => {
    it('a waiter is woken by the release, not by its next poll, and unsubscribes once it holds', async () => {
      const fleet = healthNodes(3);
      const holder = manager({}, fleet);
      const waiter = manager({ notifications: true, retryDelay: 5_000 }, fleet);
      const held = await clock.run(holder.acquire('r', { ttl: 60_000 }));
      const start = clock.now();
      const waiting = waiter.acquire('r');
      await clock.advance(300);
      expect(fleet[0].subscribers.has('redlock:r')).toBe(true);
      await clock.run(held.release());
      const lock = await clock.run(waiting);
      expect(clock.now() - start).toBeLessThan(400);
      expect(lock.isValid()).toBe(true);
      expect(fleet.every((node) => node.subscribers.size === 0)).toBe(true);
    });

    it('a release wakes one waiter; the one that takes the lock does not pass the wake-up on', async () => {
      const fleet = healthNodes(3);
      const holder = manager({}, fleet);
      const waiters = manager({ notifications: true, retryDelay: 5_000 }, fleet);
      const held = await clock.run(holder.acquire('r', { ttl: 60_000 }));
      const first = waiters.acquire('r');
      const second = waiters.acquire('r', { wait: 60_000 });
      await clock.advance(1_000);
      const before = fleet[0].applied.acquire;
      await clock.run(held.release());
      const lock = await clock.run(first);
      await clock.advance(50);
      // The woken waiter's one attempt; the other waiter sleeps on (woken by the next release).
      expect(fleet[0].applied.acquire - before).toBe(1);
      await clock.run(lock.release());
      await clock.run(second).then((next) => clock.run(next.release()));
    });

    it('a waiter that joins channels already confirmed is vouched for from its first attempt', async () => {
      const fleet = healthNodes(3);
      rivalHolds('r', 2_000, fleet);
      const waiters = manager({ notifications: true, retryDelay: 100 }, fleet);
      const first = waiters.acquire('r');
      await clock.advance(300);
      const before = fleet[0].applied.acquire;
      const second = waiters.acquire('r');
      await clock.advance(1_000);
      // Only the newcomer's first attempt: it registered before it, found every node listening,
      // and sleeps until the lease can end instead of polling every 100 ms.
      expect(fleet[0].applied.acquire - before).toBe(1);
      await clock.run(first).then((lock) => clock.run(lock.release()));
      await clock.run(second).then((lock) => clock.run(lock.release()));
    });

    it('a listening waiter whose nodes fail (no lease to wait for) polls every retryDelay', async () => {
      const fleet = healthNodes(3);
      rivalHolds('r', 400, fleet);
      const waiter = manager({ notifications: true, retryDelay: 100, wait: 2_000 }, fleet);
      const attempt = waiter.acquire('r').catch((e: unknown) => e);
      await clock.advance(300);
      // Listening is confirmed; now every node answers with an error instead of a lease.
      for (const node of fleet) node.fault = () => ({ error: new Error('LOADING') });
      const error = (await clock.run(attempt)) as LockNotAcquiredError;
      expect(error.reason).toBe('unavailable');
      // At 0 and 100 (held; then vouched for, it sleeps to the lease's end), at 400 (errors, no
      // lease to wait for), then every 100 ms until the wait ends at 2 000: 19.
      expect(error.attempts).toBe(19);
    });

    it('a waiter every node confirms it listens to does not poll: it sleeps until the lease could end', async () => {
      const fleet = healthNodes(3);
      rivalHolds('r', 2_000, fleet);
      const listening = manager({ notifications: true, retryDelay: 100 }, fleet);
      const lock = await clock.run(listening.acquire('r'));
      expect(lock.isValid()).toBe(true);
      // The first attempt (refused), one after the subscription is confirmed (refused, and now
      // vouched for), then one at the lease's end: not one every 100 ms.
      expect(fleet[0].applied.acquire).toBe(3);
      const polling = manager({ notifications: false, retryDelay: 100 }, fleet);
      rivalHolds('q', 2_000, fleet);
      await clock.run(polling.acquire('q'));
      // Polling: an attempt every 100 ms over the 2 s lease, and the one that succeeds.
      expect(fleet[0].applied.acquire - 3).toBe(21);
    });
  });

  describe('aborts and shutdown', () => {
    it('an abort while the first connections are still opening ends the call at once', async () => {
      const fleet = healthNodes(3);
      const connect = fleet.map((node) => node.connectLater());
      const redlock = manager({}, fleet);
      const controller = new AbortController();
      const reason = new Error('client went away');
      const attempt = redlock.acquire('r', { signal: controller.signal }).catch((e: unknown) => e);
      await clock.advance(100);
      controller.abort(reason);
      const start = clock.now();
      expect(await clock.run(attempt)).toBe(reason);
      expect(clock.now()).toBe(start);
      connect.forEach((done) => done());
    });

    it('drain() while the first connections are opening: shutting down, at once', async () => {
      const fleet = healthNodes(3);
      const connect = fleet.map((node) => node.connectLater());
      const redlock = manager({}, fleet);
      const attempt = redlock.acquire('r').catch((e: unknown) => e);
      await clock.advance(100);
      redlock.drain();
      const start = clock.now();
      const error = (await clock.run(attempt)) as LockNotAcquiredError;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error.message).toMatch(/shutting down/);
      expect(clock.now()).toBe(start);
      connect.forEach((done) => done());
    });

    it('ready() with an aborted signal rejects with its reason; with a live one it waits for the nodes', async () => {
      const fleet = healthNodes(3);
      const connect = fleet.map((node) => node.connectLater());
      const redlock = manager({}, fleet);
      const reason = new Error('stop');
      await expect(redlock.ready(AbortSignal.abort(reason))).rejects.toBe(reason);
      let ready = false;
      const waiting = redlock.ready(new AbortController().signal).then(() => (ready = true));
      await clock.advance(10);
      expect(ready).toBe(false);
      connect.forEach((done) => done());
      await clock.run(waiting);
      expect(ready).toBe(true);
    });

    it('a connection wait that fails passes its error on', async () => {
      nodes.forEach((node) => {
        node.serverInfo = { runId: 'one', uptimeSeconds: 86_400, durable: false, readAt: 0 };
      });
      const redlock = manager({ quarantine: false });
      await expect(clock.run(redlock.acquire('r'))).rejects.toBeInstanceOf(RedlockConfigError);
    });

    it('an abort during the round that would have granted the lock: its reason, and the keys released', async () => {
      for (const node of nodes) node.fault = () => ({ replyDelay: 50 });
      const redlock = manager();
      const controller = new AbortController();
      const reason = new Error('gone');
      const attempt = redlock.acquire('r', { signal: controller.signal }).catch((e: unknown) => e);
      await clock.advance(20);
      controller.abort(reason);
      expect(await clock.run(attempt)).toBe(reason);
      await clock.advance(200);
      expect(nodes.map((node) => node.valueAt('redlock:r'))).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      expect(redlock.heldLocks()).toEqual([]);
    });

    it('drain() during the round that would have granted the lock: shutting down, and the keys released', async () => {
      for (const node of nodes) node.fault = () => ({ replyDelay: 50 });
      const redlock = manager();
      const attempt = redlock.acquire('r').catch((e: unknown) => e);
      await clock.advance(20);
      redlock.drain();
      const error = (await clock.run(attempt)) as LockNotAcquiredError;
      expect(error.message).toMatch(/shutting down/);
      expect(error.attempts).toBe(1);
      await clock.advance(200);
      expect(nodes.every((node) => node.valueAt('redlock:r') === undefined)).toBe(true);
    });

    it('drain() during the last round of a refused call: shutting down, not "held"', async () => {
      for (const node of nodes) node.fault = () => ({ replyDelay: 50 });
      rivalHolds('r', 60_000);
      const redlock = manager();
      const attempt = redlock.tryAcquire('r').catch((e: unknown) => e);
      await clock.advance(20);
      redlock.drain();
      const error = (await clock.run(attempt)) as LockNotAcquiredError;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error.message).toMatch(/shutting down/);
      expect(error.nodes).toEqual([]);
    });

    it('no abort listener is left on a signal once the wait it raced is over', async () => {
      const fleet = healthNodes(3);
      const connect = fleet.map((node) => node.connectLater());
      const redlock = manager({}, fleet);
      const controller = new AbortController();
      const attempt = redlock.acquire('r', { signal: controller.signal });
      const ready = redlock.ready(controller.signal);
      await clock.advance(10);
      expect(getEventListeners(controller.signal, 'abort').length).toBeGreaterThan(0);
      connect.forEach((done) => done());
      await clock.run(ready);
      const lock = await clock.run(attempt);
      expect(getEventListeners(controller.signal, 'abort')).toEqual([]);
      await clock.run(lock.release());
    });

    it('an abort or a drain() during the sleep between attempts ends it at once', async () => {
      const redlock = manager({ retryDelay: 5_000 });
      rivalHolds('r', 60_000);
      const controller = new AbortController();
      const reason = new Error('gone');
      const aborted = redlock.acquire('r', { signal: controller.signal }).catch((e: unknown) => e);
      const drained = redlock.acquire('r').catch((e: unknown) => e);
      await clock.advance(1_000);
      controller.abort(reason);
      expect(await clock.run(aborted)).toBe(reason);
      const start = clock.now();
      redlock.drain();
      const error = (await clock.run(drained)) as LockNotAcquiredError;
      expect(error.message).toMatch(/shutting down/);
      expect(error.attempts).toBe(1);
      expect(clock.now()).toBe(start);
    });
  });

  describe('inspect(), health() and close()', () => {
    it('inspect(): each node free or locked, one holder tag for one owner, never the owner value', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({}, fleet);
      const free = await clock.run(redlock.inspect('r'));
      expect(free).toEqual({
        resource: 'r',
        heldHere: false,
        nodes: [
          { node: 'h0', state: 'free' },
          { node: 'h1', state: 'free' },
          { node: 'h2', state: 'free' },
        ],
      });
      const lock = await clock.run(redlock.acquire('r', { ttl: 5_000 }));
      await clock.advance(1_000);
      const held = await clock.run(redlock.inspect('r'));
      expect(held.heldHere).toBe(true);
      expect(held.nodes.map((node) => [node.state, node.remainingMs])).toEqual(
        Array(3).fill(['locked', 4_000]),
      );
      expect(new Set(held.nodes.map((node) => node.holder)).size).toBe(1);
      expect(JSON.stringify(held)).not.toContain(lock.value);
      // Another resource, held elsewhere: not held here.
      rivalHolds('q', 3_000, fleet);
      const theirs = await clock.run(redlock.inspect('q'));
      expect(theirs.heldHere).toBe(false);
      expect(theirs.nodes.every((node) => node.state === 'locked')).toBe(true);
      expect(theirs.nodes[0].holder).not.toBe(held.nodes[0].holder);
    });

    it('inspect(): a node that fails or does not answer in nodeTimeout is unknown, with why', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({ nodeTimeout: 100 }, fleet);
      fleet[0].answerError = new Error('NOPERM');
      fleet[2].hung = true;
      const start = clock.now();
      const inspection = await clock.run(redlock.inspect('r'));
      expect(clock.now() - start).toBeLessThanOrEqual(101);
      expect(inspection.nodes).toEqual([
        { node: 'h0', state: 'unknown', error: "the Redis user's ACL refuses it (NOPERM)" },
        { node: 'h1', state: 'free' },
        { node: 'h2', state: 'unknown', error: 'no answer in time' },
      ]);
      // An adapter that cannot inspect keys says so instead of failing the call.
      const plain = manager({}, simNodes(3, clock));
      const unknown = await clock.run(plain.inspect('r'));
      expect(unknown.nodes[0]).toEqual({
        node: 's0',
        state: 'unknown',
        error: 'this node adapter cannot inspect keys',
      });
    });

    it('health(): up while a quorum of voting nodes answers a PING, with each latency and error', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({ nodeTimeout: 100 }, fleet);
      fleet[0].answerDelay = 7;
      fleet[1].answerError = new Error('LOADING');
      expect(await clock.run(redlock.health())).toEqual({
        up: true,
        quorum: 2,
        nodes: [
          { node: 'h0', up: true, latencyMs: 7, voting: true },
          {
            node: 'h1',
            up: false,
            error: 'the server is still loading its data (LOADING)',
            voting: false,
          },
          { node: 'h2', up: true, latencyMs: 0, voting: true },
        ],
      });
      fleet[2].hung = true;
      const down = await clock.run(redlock.health());
      expect(down.up).toBe(false);
      expect(down.nodes[2]).toEqual({
        node: 'h2',
        up: false,
        voting: false,
        error: 'no answer within nodeTimeout',
      });
      // Sim nodes answer PING (the suspicion's probe): these are adapters without one.
      const plain = manager(
        {},
        simNodes(3, clock).map((node) => Object.assign(node, { ping: undefined })),
      );
      const unable = await clock.run(plain.health());
      expect(unable.up).toBe(false);
      expect(unable.nodes[0]).toEqual({
        node: 's0',
        up: false,
        error: 'this node adapter cannot ping',
        voting: false,
      });
    });

    it('health(): a quarantined node that answers does not make it up', async () => {
      const fleet = healthNodes(3);
      const redlock = manager({}, fleet);
      fleet.forEach((node, i) => {
        node.serverInfo = {
          runId: `h${i}`,
          uptimeSeconds: i === 0 ? 86_400 : 2,
          durable: false,
          readAt: clock.now(),
        };
      });
      // Its peers report a lease horizon a minute ahead: a lease h2 may have lost.
      for (const node of fleet.slice(0, 2)) node.fileHorizon('h2#0', 60_000, horizonKey(fleet));
      fleet[1].answerError = new Error('LOADING');
      // h0 and h2 answer; h2 just restarted, so one voter of the two needed.
      const quarantined = await clock.run(redlock.health());
      expect(quarantined.up).toBe(false);
      // The node says why it does not count (issue 25: `up: false` beside nodes all `up`).
      expect(quarantined.nodes[2]).toMatchObject({ up: true, voting: false });
      expect(quarantined.nodes[2].reason).toMatch(/quarantine/);
      // Once the horizons have passed, h2 votes.
      await clock.advance(61_000);
      expect((await clock.run(redlock.health())).up).toBe(true);
    });

    it('close(): every held lock is lost (signal, event, warning) and released; new calls are refused', async () => {
      const redlock = manager({ ttl: 5_000 });
      const lost: string[] = [];
      redlock.on('lockLost', (error) => lost.push(error.message));
      const lock = await clock.run(redlock.acquire('r'));
      const closing = redlock.close();
      expect(redlock.close()).toBe(closing);
      await clock.run(closing);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(lost).toEqual([expect.stringMatching(/lock manager was closed while it was held/)]);
      expect(lines.some((line) => /^warn .*closed while it was held/.test(line))).toBe(true);
      expect(nodes.every((node) => node.valueAt('redlock:r') === undefined)).toBe(true);
      expect(redlock.heldLocks()).toEqual([]);
      const refused = await clock.run(redlock.acquire('r').catch((e: unknown) => e));
      expect(refused).toBeInstanceOf(LockNotAcquiredError);
      expect((refused as LockNotAcquiredError).message).toMatch(/shutting down/);
    });
  });

  describe('the rest of the API', () => {
    it('using() without a routine is a RedlockConfigError before any lock is taken', async () => {
      const redlock = manager();
      const call = redlock.using('r', {} as never);
      await expect(clock.run(call)).rejects.toThrow(RedlockConfigError);
      await expect(clock.run(redlock.using('r', {} as never))).rejects.toThrow(/routine/);
      expect(nodes[0].applied.acquire).toBe(0);
    });

    it('currentLock(): the lock of the enclosing using(), none outside', async () => {
      const redlock = manager();
      expect(redlock.currentLock()).toBeUndefined();
      const inside = await clock.run(redlock.using('r', (lock) => redlock.currentLock() === lock));
      expect(inside).toBe(true);
    });

    it('a non-string value at a lock key is a LockKeyConflictError naming the node, not a wait', async () => {
      nodes[1].fault = () => ({ error: new KeyTypeConflict('WRONGTYPE at redlock:r') });
      rivalHolds('r', 60_000, [nodes[0]]);
      const redlock = manager({ wait: 10_000 });
      const start = clock.now();
      const error = await clock.run(redlock.acquire('r').catch((e: unknown) => e));
      expect(error).toBeInstanceOf(LockKeyConflictError);
      expect((error as LockKeyConflictError).node).toBe('s1');
      expect(clock.now()).toBe(start);
    });

    it('heldLocks(): how long each lock has been held, what is left, its extensions', async () => {
      const redlock = manager({ ttl: 5_000 });
      const lock = await clock.run(redlock.acquire('r'));
      await clock.advance(700);
      await clock.run(lock.extend(5_000));
      await clock.advance(300);
      expect(redlock.heldLocks()).toEqual([
        {
          resources: ['r'],
          heldMs: 1_000,
          remainingMs: lock.remainingMs(),
          extensions: 1,
          fencingToken: undefined,
        },
      ]);
    });

    it('an even number of nodes is warned about with the failures it really tolerates', () => {
      manager({}, simNodes(4, clock));
      manager({}, simNodes(2, clock));
      manager({}, simNodes(3, clock));
      expect(lines).toEqual([
        'warn 4 Redis nodes tolerate 1 failed node, as 3 nodes do: the 4th adds load, not fault tolerance; use an odd number of nodes',
        'warn 2 Redis nodes tolerate no failed node, as 1 node does: the 2nd adds load, not fault tolerance; use an odd number of nodes',
      ]);
    });

    it('fencing needs nodes that can fence: refused at construction and per call', async () => {
      const unable = nodes.map((node) => Object.assign(Object.create(node), { fence: undefined }));
      expect(() => manager({ fencing: true }, unable)).toThrow(RedlockConfigError);
      const redlock = manager({}, unable);
      await expect(clock.run(redlock.acquire('r', { fencing: true }))).rejects.toThrow(
        /fencing.*cannot/s,
      );
    });

    it('a context whose lock was released no longer holds it: a nested acquire takes a new lock', async () => {
      const redlock = manager();
      const result = await clock.run(
        redlock.using('r', async (outer) => {
          await outer.release();
          const inner = await redlock.acquire('r');
          const valid = inner.isValid();
          await inner.release();
          return valid;
        }),
      );
      expect(result).toBe(true);
      // and a context that still holds it is refused (not reentrant)
      await expect(
        clock.run(redlock.using('r', () => redlock.acquire('r'))),
      ).rejects.toBeInstanceOf(LockReentryError);
    });

    it('using() with autoExtend: false: no extension, the loss reported when the routine returns', async () => {
      const redlock = manager({ ttl: 1_000 });
      const outcome = await clock.run(
        redlock
          .using('r', { autoExtend: false }, async () => {
            await pause(1_500);
            return 'done';
          })
          .catch((e: unknown) => e),
      );
      expect(outcome).toBeInstanceOf(LockLostError);
      expect(nodes[0].applied.extend).toBe(0);
      const kept = await clock.run(
        redlock.using('k', async (lock) => {
          await pause(1_500);
          return lock.isValid();
        }),
      );
      expect(kept).toBe(true);
      expect(nodes[0].applied.extend).toBeGreaterThan(0);
    });
  });
});
