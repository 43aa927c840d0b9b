import type { RedisNode } from '../../lib';

/**
 * The fair hand-off scripts' contract (lib/core/protocol/scripts.ts ACQUIRE_QUEUED_SCRIPT, HAND_OFF_SCRIPT,
 * LEAVE_QUEUE_SCRIPT): every reply case, written once and run against a real server
 * (test/integration/queue-scripts.spec.ts) and against each fake that implements them
 * (test/unit/queue-fakes.spec.ts: SimNode, MemoryNode, InMemoryRedisNode), so a fake the
 * simulation trusts cannot drift from the Lua.
 */
export interface QueueHarness {
  readonly node: Required<Pick<RedisNode, 'acquireQueued' | 'handOff' | 'leaveQueue'>> & RedisNode;
  /** `SET key value PX ttl`, as another client. */
  put(key: string, value: string, ttl: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** `DEL` of a string key, as another client. */
  del(key: string): Promise<void>;
  /** `PTTL` of a key. Fakes without leases say so with `leases: false`. */
  pttl(key: string): Promise<number>;
  /** `ZRANGE queue 0 -1 WITHSCORES`. */
  queue(queueKey: string): Promise<[string, number][]>;
  /** `PTTL` of a queue. */
  queuePttl(queueKey: string): Promise<number>;
  /**
   * Queues a group as its own script would leave it (a nemesis's dead group): `ZADD`, and the
   * key's queue mark (`K\0w`, 60 s), without which a release does not read the queue.
   */
  zadd(queueKey: string, score: number, member: string): Promise<void>;
  /** The server's `TIME` in ms. */
  serverNow(): Promise<number>;
  /** The messages published on `channel` so far (after `settle`); undefined: not observable. */
  messages?(channel: string): Promise<string[]>;
  /** Whether keys have leases (MemoryNode's do not). */
  readonly leases: boolean;
  /** Whether a waiting acquisition outside the queues marks keys (MemoryNode's does not). */
  readonly plainMarks?: boolean;
}

/** The queue mark of the lock key whose queue is `queueKey` (`K\0q` → `K\0w`). */
export function markOf(queueKey: string): string {
  return `${queueKey.slice(0, -2)}\0w`;
}

/** Registers the contract's tests (inside a `describe`): `harness()` is read in each test. */
export function queueContract(harness: () => QueueHarness): void {
  let n = 0;
  const names = () => {
    n++;
    const key = `qc:${n}:${Math.random().toString(36).slice(2, 8)}`;
    return { key, queueKey: `${key}\0q` };
  };
  /** A hand-off by group `g` with a next local waiter (`next`, ttl 7 s) that waited `ageMs`. */
  const swapRequest = (ageMs: number, leaseMs: number, announce: string) => ({
    group: 'g',
    next: { value: 'next', ttl: 7_000, ageMs },
    leaseMs,
    announce,
  });
  const ticket = (group: string, over: Record<string, unknown> = {}) => ({
    group,
    ageMs: 0,
    queued: false,
    keepMs: 1_000,
    ...over,
  });
  const expectMessages = async (channel: string, expected: string[]) => {
    const h = harness();
    if (h.messages === undefined) return;
    expect(await h.messages(channel)).toEqual(expected);
  };

  it('a free key is taken (as ACQUIRE: value, lease); a queued group leaves its stale entry', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.zadd(queueKey, 1, 'g');
    await h.zadd(queueKey, 2, 'other');
    const reply = await h.node.acquireQueued(key, queueKey, 'v1', 5_000, ticket('g'));
    expect(reply).toEqual({ acquired: true });
    expect(await h.get(key)).toBe('v1');
    if (h.leases) expect(await h.pttl(key)).toBeGreaterThan(4_000);
    // Not queued (a first attempt): the queue is not touched.
    expect((await h.queue(queueKey)).map(([m]) => m)).toEqual(['g', 'other']);
    const second = names();
    await h.zadd(second.queueKey, 1, 'g');
    await h.zadd(second.queueKey, 2, 'other');
    const queued = await h.node.acquireQueued(
      second.key,
      second.queueKey,
      'v2',
      5_000,
      ticket('g', { queued: true, announce: 'id1' }),
    );
    expect(queued).toEqual({ acquired: true });
    expect((await h.queue(second.queueKey)).map(([m]) => m)).toEqual(['other']);
    // A free key announces nothing (nobody was handed anything).
    await expectMessages(second.key, []);
  });

  it('a key reserved for the group is claimed and the claim announced (id|c|group)', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, '\0rg', 500);
    const reply = await h.node.acquireQueued(
      key,
      queueKey,
      'v',
      5_000,
      ticket('g', { announce: 'a1' }),
    );
    expect(reply).toEqual({ acquired: true });
    expect(await h.get(key)).toBe('v');
    if (h.leases) expect(await h.pttl(key)).toBeGreaterThan(4_000);
    await expectMessages(key, ['a1|c|g']);
    // Without an announcement id: claimed silently.
    const other = names();
    await h.put(other.key, '\0rg', 500);
    expect(await h.node.acquireQueued(other.key, other.queueKey, 'v', 5_000, ticket('g'))).toEqual({
      acquired: true,
    });
    await expectMessages(other.key, []);
  });

  it('a key held, or reserved for another group, is refused with its lease; the group is queued once', async () => {
    const h = harness();
    for (const blocking of ['someone', '\0rother']) {
      const { key, queueKey } = names();
      await h.put(key, blocking, 3_000);
      const before = await h.serverNow();
      const reply = await h.node.acquireQueued(
        key,
        queueKey,
        'v',
        5_000,
        ticket('g', { ageMs: 400, keepMs: 2_000, announce: 'x' }),
      );
      const after = await h.serverNow();
      expect(reply.acquired).toBe(false);
      if (h.leases) {
        const { pttl } = reply as { pttl: number };
        expect(pttl).toBeGreaterThan(2_000);
        expect(pttl).toBeLessThanOrEqual(3_000);
      }
      expect(await h.get(key)).toBe(blocking);
      const queue = await h.queue(queueKey);
      expect(queue.map(([m]) => m)).toEqual(['g']);
      // Scored by when it started waiting: the server's time minus its wait so far.
      expect(queue[0][1]).toBeGreaterThanOrEqual(before - 400 - 1);
      expect(queue[0][1]).toBeLessThanOrEqual(after - 400 + 1);
      // Kept at least as long as the blocking lease plus keepMs.
      if (h.leases) expect(await h.queuePttl(queueKey)).toBeGreaterThan(4_000);
      else expect(await h.queuePttl(queueKey)).toBeGreaterThanOrEqual(2_000);
      // Queued once: a later attempt keeps its place (its first score).
      await h.node.acquireQueued(
        key,
        queueKey,
        'v',
        5_000,
        ticket('g', { ageMs: 10_000, queued: true }),
      );
      expect(await h.queue(queueKey)).toEqual(queue);
      await expectMessages(key, []);
    }
  });

  it('start of waiting is kept to the µs, not floored to the ms (issue 24: near-ties ordered by chance)', async () => {
    // Two processes' waiters starting within the same ms were ordered by chance with ms scores:
    // nearly every order inversion at 300 arrivals/s (bench/fair-rates.mjs). Floored, every
    // score here would be a whole number.
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'someone', 3_000);
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('a', { ageMs: 5.25 }));
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('b', { ageMs: 7.5 }));
    const scores = (await h.queue(queueKey)).map(([, score]) => score);
    expect(scores).toHaveLength(2);
    expect(scores.some((score) => !Number.isInteger(score))).toBe(true);
  });

  /**
   * The scripts clamp an estimate against the server's own bound (TIME − age) at the moment they
   * run, so an estimate "taken as sent" is one within START_SLACK_MS of that moment. Runs `once`
   * until the server's clock moved at most `withinMs` between the TIME read before it and the
   * one after (a busy host delays a command by more now and then), at most 10 times.
   */
  async function promptly(withinMs: number, once: () => Promise<[number, number]>): Promise<void> {
    for (let i = 0; i < 10; i++) {
      const [before, after] = await once();
      if (after - before <= withinMs) return;
    }
    throw new Error(`the server took over ${withinMs} ms to run two commands, 10 times in a row`);
  }

  it("a client's estimate of the start places the group, at most START_SLACK_MS before the server's own bound, never after it; the reply that queued carries the server's TIME", async () => {
    const h = harness();
    let checks: (() => Promise<void>) | undefined;
    await promptly(5, async () => {
      const { key, queueKey } = names();
      await h.put(key, 'someone', 3_000);
      const before = await h.serverNow();
      const first = await h.node.acquireQueued(key, queueKey, 'v', 5_000, {
        ...ticket('near'),
        startedOnServer: before - 3.25,
      });
      const far = { ...ticket('far'), startedOnServer: before - 1_000 };
      await h.node.acquireQueued(key, queueKey, 'v', 5_000, far);
      const late = { ...ticket('late'), startedOnServer: before + 1_000 };
      await h.node.acquireQueued(key, queueKey, 'v', 5_000, late);
      const after = await h.serverNow();
      checks = async () => {
        const scores = new Map(await h.queue(queueKey));
        // Earlier than TIME − age by less than the slack: as sent (to 10 µs: Lua's number text).
        expect(scores.get('near')).toBeCloseTo(before - 3.25, 1);
        // Far earlier (a stale estimate): START_SLACK_MS (10 ms) before the server's bound.
        expect(scores.get('far')).toBeGreaterThanOrEqual(before - 10 - 1);
        expect(scores.get('far')).toBeLessThanOrEqual(after - 10 + 1);
        // Later than the server's bound (impossible: the age was measured before sending).
        expect(scores.get('late')).toBeGreaterThanOrEqual(before - 1);
        expect(scores.get('late')).toBeLessThanOrEqual(after + 1);
        // The reply that queued the group: the server's TIME, for the client's clock estimate.
        expect(first.acquired).toBe(false);
        const { serverTime } = first as { serverTime?: number };
        expect(serverTime).toBeGreaterThanOrEqual(before - 1);
        expect(serverTime).toBeLessThanOrEqual(after + 1);
        // Queued already: no TIME read, none returned.
        const again = await h.node.acquireQueued(
          key,
          queueKey,
          'v',
          5_000,
          ticket('near', { queued: true }),
        );
        expect(again).not.toHaveProperty('serverTime');
      };
      return [before, after];
    });
    await checks?.();
  });

  it("hand-off compares the local next waiter's estimated start (not only its age) with the queue's head", async () => {
    const h = harness();
    for (const [estimate, expected] of [
      [undefined, 'reserved'],
      [-8, 'swapped'],
    ] as const) {
      let seen: [string, string | null] | undefined;
      await promptly(4, async () => {
        const { key, queueKey } = names();
        await h.put(key, 'me', 3_000);
        const now = await h.serverNow();
        await h.zadd(queueKey, now - 5, 'q');
        const next = { value: 'next', ttl: 7_000, ageMs: 0 };
        const reply = await h.node.handOff(key, queueKey, 'me', {
          group: 'g',
          next: estimate === undefined ? next : { ...next, startedOnServer: now + estimate },
          leaseMs: 250,
        });
        const after = await h.serverNow();
        seen = [reply, await h.get(key)];
        return [now, after];
      });
      // By its age alone it started after q; by the estimate 3 ms before q.
      expect(seen).toEqual([expected, expected === 'swapped' ? 'next' : '\0rq']);
    }
  });

  it('the queue is ordered by start of waiting (older first), and its expiry is only lengthened', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'someone', 3_000);
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('young', { ageMs: 10 }));
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('old', { ageMs: 5_000 }));
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('mid', { ageMs: 1_000 }));
    expect((await h.queue(queueKey)).map(([m]) => m)).toEqual(['old', 'mid', 'young']);
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('long', { keepMs: 60_000 }));
    const kept = await h.queuePttl(queueKey);
    expect(kept).toBeGreaterThan(59_000);
    // A shorter keep never shortens it.
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('short', { keepMs: 10 }));
    expect(await h.queuePttl(queueKey)).toBeGreaterThan(58_000);
  });

  it('hand-off by a value that no longer holds the key writes nothing (notOurs)', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'someone-else', 3_000);
    await h.zadd(queueKey, 1, 'q');
    const reply = await h.node.handOff(key, queueKey, 'me', {
      group: 'g',
      next: { value: 'n', ttl: 5_000, ageMs: 100_000 },
      leaseMs: 100,
      announce: 'a',
    });
    expect(reply).toBe('notOurs');
    expect(await h.get(key)).toBe('someone-else');
    expect(await h.queue(queueKey)).toEqual([['q', 1]]);
    // …but the holder's group leaves the queue (issue 24 item 2b: an entry left by a queued
    // attempt that won elsewhere named a group nobody waited in, and a release reserved for it).
    await h.zadd(queueKey, 0, 'g');
    expect(
      await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100, announce: 'a' }),
    ).toBe('notOurs');
    expect(await h.queue(queueKey)).toEqual([['q', 1]]);
    const absent = names();
    expect(
      await h.node.handOff(absent.key, absent.queueKey, 'me', { group: 'g', leaseMs: 100 }),
    ).toBe('notOurs');
    expect(await h.get(absent.key)).toBeNull();
    await expectMessages(key, []);
  });

  it('hand-off where the key is reserved for the holder group passes the reservation on (issue 24 item 2b)', async () => {
    // A queued attempt that won on a quorum was queued where it met a holder; that holder's
    // release then reserved the key there for the group, which already held the lock
    // elsewhere: nobody claims it. bench/fair-rates.mjs at 300/s over 3 nodes: such a
    // reservation idled one node for a whole lease, each group switch waited for its turn
    // timer, and waits reached p99 230-390 ms. The group's own release passes it on, as its
    // holder's key: to the next group here.
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, '\0rg', 3_000);
    await h.zadd(queueKey, 1, 'q');
    await h.zadd(queueKey, 2, 'g');
    expect(
      await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100, announce: 'p1' }),
    ).toBe('reserved');
    expect(await h.get(key)).toBe('\0rq');
    expect(await h.queue(queueKey)).toEqual([]);
    await expectMessages(key, ['p1|n|q']);
    // To the holder's next local waiter when nobody waited longer (a swap, as on its own key).
    const swap = names();
    await h.put(swap.key, '\0rg', 3_000);
    expect(
      await h.node.handOff(swap.key, swap.queueKey, 'me', {
        group: 'g',
        next: { value: 'n', ttl: 5_000, ageMs: 10 },
        leaseMs: 100,
        announce: 'p2',
      }),
    ).toBe('swapped');
    expect(await h.get(swap.key)).toBe('n');
    // Nobody waiting: freed and announced as a plain release.
    const free = names();
    await h.put(free.key, '\0rg', 3_000);
    expect(
      await h.node.handOff(free.key, free.queueKey, 'me', {
        group: 'g',
        leaseMs: 100,
        announce: 'p3',
      }),
    ).toBe('released');
    expect(await h.get(free.key)).toBeNull();
    await expectMessages(free.key, ['p3']);
    // Reserved for another group: not touched.
    const other = names();
    await h.put(other.key, '\0rq', 3_000);
    expect(
      await h.node.handOff(other.key, other.queueKey, 'me', { group: 'g', leaseMs: 100 }),
    ).toBe('notOurs');
    expect(await h.get(other.key)).toBe('\0rq');
  });

  it('hand-off takes the holder group out of the queue wherever it stands in it', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    await h.zadd(queueKey, 1, 'q');
    await h.zadd(queueKey, 2, 'g');
    expect(
      await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100, announce: 'a' }),
    ).toBe('reserved');
    expect(await h.get(key)).toBe('\0rq');
    expect(await h.queue(queueKey)).toEqual([]);
  });

  it('hand-off with nobody queued and no local waiter deletes the key and announces a plain release', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    expect(
      await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100, announce: 'rel' }),
    ).toBe('released');
    expect(await h.get(key)).toBeNull();
    await expectMessages(key, ['rel']);
    // The holder's own group at the head is not "someone queued".
    const own = names();
    await h.put(own.key, 'me', 3_000);
    await h.zadd(own.queueKey, 1, 'g');
    expect(await h.node.handOff(own.key, own.queueKey, 'me', { group: 'g', leaseMs: 100 })).toBe(
      'released',
    );
    expect(await h.queue(own.queueKey)).toEqual([]);
  });

  it('the queue is read only where its mark says it may hold groups (issue 24 item 3)', async () => {
    const h = harness();
    const { key, queueKey } = names();
    // A queued attempt marks the queue as long as it keeps it.
    await h.put(key, 'me', 3_000);
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('q', { keepMs: 60_000 }));
    expect(await h.get(markOf(queueKey))).toBe('1');
    if (h.leases) {
      expect(await h.pttl(markOf(queueKey))).toBeGreaterThanOrEqual(
        (await h.queuePttl(queueKey)) - 5,
      );
    }
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100 })).toBe(
      'reserved',
    );
    expect(await h.get(key)).toBe('\0rq');
    // A queue nobody marked (written by a version before the mark) is not read: a plain release.
    const unmarked = names();
    await h.put(unmarked.key, 'me', 3_000);
    await h.zadd(unmarked.queueKey, 1, 'q');
    await h.del(markOf(unmarked.queueKey));
    expect(
      await h.node.handOff(unmarked.key, unmarked.queueKey, 'me', { group: 'g', leaseMs: 100 }),
    ).toBe('released');
    expect(await h.queue(unmarked.queueKey)).toEqual([['q', 1]]);
    // The holder's group queued behind plain waiters re-creates the queue: with an expiry and its
    // mark, so that the next release reads it.
    const requeued = names();
    await h.put(requeued.key, 'me', 3_000);
    await h.put(`${requeued.key}\0p`, '1|me', 60_000);
    expect(
      await h.node.handOff(requeued.key, requeued.queueKey, 'me', {
        group: 'g',
        next: { value: 'next', ttl: 7_000, ageMs: 0 },
        leaseMs: 250,
      }),
    ).toBe('reserved');
    expect(await h.get(requeued.key)).toBe('\0r\0p');
    expect((await h.queue(requeued.queueKey)).map(([m]) => m)).toEqual(['g']);
    expect(await h.get(markOf(requeued.queueKey))).toBe('1');
    if (h.leases) {
      // The mark read first: written with the queue's expiry, it is then never the shorter
      // (read after the queue, it came 8 ms short on a busy host: the time between the reads).
      const marked = await h.pttl(markOf(requeued.queueKey));
      const kept = await h.queuePttl(requeued.queueKey);
      expect(kept).toBeGreaterThan(7_000);
      expect(kept).toBeLessThanOrEqual(7_250);
      expect(marked).toBeGreaterThanOrEqual(kept - 1);
    }
  });

  it('a swap to the next local waiter leaves the holder group queued behind the head (it still waits); its last release takes it out', async () => {
    const h = harness();
    const { key, queueKey } = names();
    const now = await h.serverNow();
    await h.put(key, 'me', 3_000);
    await h.zadd(queueKey, now + 60_000, 'q');
    await h.zadd(queueKey, now + 70_000, 'g');
    const next = { value: 'next', ttl: 5_000, ageMs: 0 };
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', next, leaseMs: 100 })).toBe(
      'swapped',
    );
    expect(await h.get(key)).toBe('next');
    expect((await h.queue(queueKey)).map(([m]) => m)).toEqual(['q', 'g']);
    // With no next waiter the group leaves, wherever it stands: nobody would claim its turn.
    expect(await h.node.handOff(key, queueKey, 'next', { group: 'g', leaseMs: 100 })).toBe(
      'reserved',
    );
    expect(await h.get(key)).toBe('\0rq');
    expect(await h.queue(queueKey)).toEqual([]);
  });

  it('a hand-off that finds its marked queue gone drops the mark; a re-created queue is marked again', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    await h.zadd(queueKey, 1, 'q');
    // The last group is served: the queue is gone, its mark is not (yet).
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 100 })).toBe(
      'reserved',
    );
    expect(await h.queue(queueKey)).toEqual([]);
    expect(await h.get(markOf(queueKey))).toBe('1');
    // The next release reads the queue, finds nothing, and drops the mark: a swap to the local
    // next waiter, as with nobody queued.
    await h.put(key, 'me', 3_000);
    const next = { value: 'next', ttl: 5_000, ageMs: 0 };
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', next, leaseMs: 100 })).toBe(
      'swapped',
    );
    expect(await h.get(markOf(queueKey))).toBeNull();
    // A group that queues again re-creates the queue with its mark, and the release reads it.
    await h.node.acquireQueued(key, queueKey, 'v', 5_000, ticket('q2', { keepMs: 60_000 }));
    expect(await h.get(markOf(queueKey))).toBe('1');
    expect(await h.node.handOff(key, queueKey, 'next', { group: 'g', leaseMs: 100 })).toBe(
      'reserved',
    );
    expect(await h.get(key)).toBe('\0rq2');
  });

  it("hand-off with a next local waiter treats a free key as the holder's (a failed attempt's cleanup freed it): swapped, or reserved for an older head (issue 24 S2)", async () => {
    const h = harness();
    const { key, queueKey } = names();
    const request = (ageMs: number) => swapRequest(ageMs, 250, 'f1');
    // Nobody queued: the chain of hand-offs takes the node back.
    expect(await h.node.handOff(key, queueKey, 'me', request(0))).toBe('swapped');
    expect(await h.get(key)).toBe('next');
    if (h.leases) expect(await h.pttl(key)).toBeGreaterThan(6_000);
    // An older queued group: the free key is reserved for it, announced, the holder's group queued.
    const older = names();
    // Held, then freed (a failed attempt's cleanup).
    await h.put(older.key, 'cleaned-up', 3_000);
    await h.del(older.key);
    const now = await h.serverNow();
    await h.zadd(older.queueKey, now - 5_000, 'old');
    expect(await h.node.handOff(older.key, older.queueKey, 'me', request(1_000))).toBe('reserved');
    expect(await h.get(older.key)).toBe('\0rold');
    expect((await h.queue(older.queueKey)).map(([m]) => m)).toEqual(['g']);
    await expectMessages(older.key, ['f1|n|old']);
    // Without a next waiter a free key stays free (the notOurs case below).
  });

  it('hand-off swaps to the local next waiter when nobody is queued or it waited longer than the head', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    const request = (ageMs: number) => swapRequest(ageMs, 100, 'a');
    expect(await h.node.handOff(key, queueKey, 'me', request(0))).toBe('swapped');
    expect(await h.get(key)).toBe('next');
    if (h.leases) expect(await h.pttl(key)).toBeGreaterThan(6_000);
    // A queued group that started waiting later than the local next: swapped, queue untouched.
    const now = await h.serverNow();
    await h.zadd(queueKey, now - 1_000, 'q');
    expect(await h.node.handOff(key, queueKey, 'next', { ...request(5_000) })).toBe('swapped');
    expect(await h.queue(queueKey)).toEqual([['q', now - 1_000]]);
    await expectMessages(key, []);
  });

  it('hand-off reserves for an older queued group, requeues the holder group, announces id|n|group', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    const now = await h.serverNow();
    await h.zadd(queueKey, now - 10_000, 'g'); // the holder's own group, stale at the head
    await h.zadd(queueKey, now - 5_000, 'old');
    await h.zadd(queueKey, now - 100, 'young');
    const reply = await h.node.handOff(key, queueKey, 'me', {
      group: 'g',
      next: { value: 'next', ttl: 7_000, ageMs: 1_000 },
      leaseMs: 250,
      announce: 'r9',
    });
    const after = await h.serverNow();
    expect(reply).toBe('reserved');
    expect(await h.get(key)).toBe('\0rold');
    if (h.leases) {
      expect(await h.pttl(key)).toBeGreaterThan(150);
      expect(await h.pttl(key)).toBeLessThanOrEqual(250);
    }
    const queue = await h.queue(queueKey);
    expect(queue.map(([m]) => m)).toEqual(['g', 'young']);
    // Requeued by when its next waiter started waiting.
    expect(queue[0][1]).toBeGreaterThanOrEqual(now - 1_000 - 1);
    expect(queue[0][1]).toBeLessThanOrEqual(after - 1_000 + 1);
    await expectMessages(key, ['r9|n|old']);
    // Without a local waiter: reserved, the holder's group not queued.
    const alone = names();
    await h.put(alone.key, 'me', 3_000);
    await h.zadd(alone.queueKey, 5, 'q');
    expect(
      await h.node.handOff(alone.key, alone.queueKey, 'me', { group: 'g', leaseMs: 250 }),
    ).toBe('reserved');
    expect(await h.get(alone.key)).toBe('\0rq');
    expect(await h.queue(alone.queueKey)).toEqual([]);
    await expectMessages(alone.key, []);
  });

  it('a reservation is never matched by the release, extend or acquire of an owner value', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    await h.zadd(queueKey, 1, 'q');
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 2_000 })).toBe(
      'reserved',
    );
    expect(await h.node.release([key], 'me')).toBe(0);
    expect(await h.node.extend([key], 'me', 5_000)).toBe(false);
    expect((await h.node.acquire([key], 'me', 5_000)).acquired).toBe(false);
    expect((await h.node.acquire([key], 'someone', 5_000)).acquired).toBe(false);
    expect(await h.node.handOff(key, queueKey, 'me', { group: 'g', leaseMs: 2_000 })).toBe(
      'notOurs',
    );
    expect(await h.get(key)).toBe('\0rq');
  });

  it('leaving the queue removes the group only', async () => {
    const h = harness();
    const { queueKey } = names();
    await h.zadd(queueKey, 1, 'a');
    await h.zadd(queueKey, 2, 'b');
    await h.node.leaveQueue(queueKey, 'a');
    await h.node.leaveQueue(queueKey, 'nobody');
    expect(await h.queue(queueKey)).toEqual([['b', 2]]);
  });

  it('leaving with the key reserved for the group passes it on: to the next group, else freed (issue 24)', async () => {
    const h = harness();
    const { key, queueKey } = names();
    await h.put(key, '\0rg', 3_000);
    await h.zadd(queueKey, 1, 'g');
    await h.zadd(queueKey, 2, 'next');
    await h.node.leaveQueue(queueKey, 'g', { key, leaseMs: 700, announce: 'l1' });
    expect(await h.get(key)).toBe('\0rnext');
    if (h.leases) expect(await h.pttl(key)).toBeLessThanOrEqual(700);
    expect(await h.queue(queueKey)).toEqual([]);
    await expectMessages(key, ['l1|n|next']);
    // Nobody queued: freed and announced as a plain release.
    await h.node.leaveQueue(queueKey, 'next', { key, leaseMs: 700, announce: 'l2' });
    expect(await h.get(key)).toBeNull();
    await expectMessages(key, ['l1|n|next', 'l2']);
    // A key held by an owner, or reserved for another group, is not touched.
    const other = names();
    await h.put(other.key, 'owner', 3_000);
    await h.zadd(other.queueKey, 1, 'g');
    await h.node.leaveQueue(other.queueKey, 'g', { key: other.key, leaseMs: 700, announce: 'l3' });
    expect(await h.get(other.key)).toBe('owner');
    expect(await h.queue(other.queueKey)).toEqual([]);
    await h.put(other.key, '\0rsomeone', 3_000);
    await h.node.leaveQueue(other.queueKey, 'g', { key: other.key, leaseMs: 700 });
    expect(await h.get(other.key)).toBe('\0rsomeone');
    await expectMessages(other.key, []);
  });

  it('hand-off reserves the key for waiters outside the queues when they waited longest (\\0r\\0p, issue 24)', async () => {
    const h = harness();
    const now = await h.serverNow();
    // Marked by a plain waiter that started 5 s ago; a group queued 1 s ago.
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    await h.put(`${key}\0p`, `${now - 5_000}|me`, 3_000);
    await h.zadd(queueKey, now - 1_000, 'q');
    expect(
      await h.node.handOff(key, queueKey, 'me', {
        group: 'g',
        next: { value: 'n', ttl: 5_000, ageMs: 2_000 },
        leaseMs: 700,
        announce: 'p1',
      }),
    ).toBe('reserved');
    expect(await h.get(key)).toBe('\0r\0p');
    expect(await h.get(`${key}\0p`)).toBeNull();
    // The queued group keeps its place; the holder's group is queued by its next waiter's start
    // (2 s ago: before the group queued 1 s ago).
    expect((await h.queue(queueKey)).map(([m]) => m)).toEqual(['g', 'q']);
    await expectMessages(key, ['p1|n|\0p']);
    // A mark younger than the local next waiter: the swap goes ahead.
    const young = names();
    await h.put(young.key, 'me', 3_000);
    await h.put(`${young.key}\0p`, `${now + 60_000}|me`, 3_000);
    expect(
      await h.node.handOff(young.key, young.queueKey, 'me', {
        group: 'g',
        next: { value: 'n', ttl: 5_000, ageMs: 2_000 },
        leaseMs: 700,
      }),
    ).toBe('swapped');
    expect(await h.get(young.key)).toBe('n');
    // Its waiters still wait, behind the key: the mark follows it to the next value.
    expect(await h.get(`${young.key}\0p`)).toBe(`${now + 60_000}|n`);
  });

  it("the plain waiters' mark names the value they waited behind: only that holder's hand-off reads it, and every pass of the key carries it (issue 24 item 1)", async () => {
    const h = harness();
    const now = await h.serverNow();
    const request = (value: string) => ({
      group: 'g',
      next: { value, ttl: 5_000, ageMs: 1_000 },
      leaseMs: 700,
      announce: 'p1',
    });
    // A mark naming another value (a waiter served elsewhere, or one that met a failed
    // attempt's key): no turn for it. Before: the key was reserved for waiters that were gone.
    const stale = names();
    await h.put(stale.key, 'me', 3_000);
    await h.put(`${stale.key}\0p`, `${now - 5_000}|gone`, 3_000);
    expect(await h.node.handOff(stale.key, stale.queueKey, 'me', request('n'))).toBe('swapped');
    expect(await h.get(stale.key)).toBe('n');
    // Reserved for an older queued group: the mark follows the key to the reservation, and to
    // the group's claim.
    const { key, queueKey } = names();
    await h.put(key, 'me', 3_000);
    await h.put(`${key}\0p`, `${now - 2_000}|me`, 3_000);
    await h.zadd(queueKey, now - 5_000, 'q');
    expect(await h.node.handOff(key, queueKey, 'me', request('n'))).toBe('reserved');
    expect(await h.get(key)).toBe('\0rq');
    expect(await h.get(`${key}\0p`)).toBe(`${now - 2_000}|\0rq`);
    const claim = ticket('q', { queued: true });
    expect(await h.node.acquireQueued(key, queueKey, 'v', 5_000, claim)).toEqual({
      acquired: true,
    });
    expect(await h.get(`${key}\0p`)).toBe(`${now - 2_000}|v`);
    // That holder's hand-off reads it: its waiters waited longer than the next local waiter and
    // the holder's own group, queued behind q by the first hand-off.
    expect(await h.node.handOff(key, queueKey, 'v', { ...request('n2'), group: 'q' })).toBe(
      'reserved',
    );
    expect(await h.get(key)).toBe('\0r\0p');
    // A reservation passed on by a group that leaves carries it too.
    const left = names();
    await h.put(left.key, '\0rq', 3_000);
    await h.put(`${left.key}\0p`, `${now}|\0rq`, 3_000);
    await h.zadd(left.queueKey, now - 100, 'r');
    await h.node.leaveQueue(left.queueKey, 'q', { key: left.key, leaseMs: 700 });
    expect(await h.get(left.key)).toBe('\0rr');
    expect(await h.get(`${left.key}\0p`)).toBe(`${now}|\0rr`);
  });

  it('a waiting acquisition outside the queues marks a key only where it may be handed on and alone blocks it (issue 24 item 1)', async () => {
    const h = harness();
    if (h.plainMarks === false) return;
    const wait = { ageMs: 1_000, keepMs: 1_000 };
    const marked = async (key: string) => (await h.get(`${key}\0p`)) !== null;
    const attempt = (keys: string[], value: string) =>
      h.node.acquire(keys, value, 5_000, undefined, wait);
    // A plain holder, no queue: its release frees the key, nothing to mark.
    const plain = names().key;
    await h.put(plain, 'holder', 3_000);
    expect(await attempt([plain], 'w1')).toMatchObject({ acquired: false });
    expect(await marked(plain)).toBe(false);
    // A fair holder (HANDED_ON, '.'), no queue: its release may swap the key to its own next
    // waiter, announced to nobody; only the mark gets this waiter a turn.
    const chained = names().key;
    await h.put(chained, '.holder', 3_000);
    expect(await attempt([chained], 'w2')).toMatchObject({ acquired: false });
    expect(await marked(chained)).toBe(true);
    // Blocked by two fair holders: it marks neither (a turn on one is one it cannot use).
    const [a, b] = [names().key, names().key];
    await h.put(a, '.x', 3_000);
    await h.put(b, '.y', 3_000);
    expect(await attempt([a, b], 'w3')).toMatchObject({ acquired: false });
    expect([await marked(a), await marked(b)]).toEqual([false, false]);
    // One of them reserved for the waiters outside the queues (free to it): the other alone
    // blocks, and is marked; the reservation stays untaken (all-or-nothing).
    await h.put(a, '\0r\0p', 3_000);
    expect(await attempt([a, b], 'w4')).toMatchObject({ acquired: false });
    expect([await marked(a), await marked(b)]).toEqual([false, true]);
    expect(await h.get(a)).toBe('\0r\0p');
  });

  it("a holder's release frees a key reserved for the waiters outside the queues, announced, not counted; a cleanup does not (issue 24 item 1)", async () => {
    const h = harness();
    if (h.plainMarks === false) return;
    // Their turn was given on this node by a hand-off that landed after the plain waiter it was
    // for was served through the other nodes: that waiter's release ends it here too.
    const [a, b] = [names().key, names().key];
    await h.put(a, '\0r\0p', 3_000);
    await h.put(b, 'mine', 3_000);
    expect(await h.node.release([a, b], 'mine', 'rel')).toBe(1);
    expect([await h.get(a), await h.get(b)]).toEqual([null, null]);
    await expectMessages(a, ['rel']);
    await expectMessages(b, ['rel']);
    // A failed attempt's cleanup (its id ends with CLEANUP_MARK) frees only its own writes.
    const d = names().key;
    await h.put(d, '\0r\0p', 3_000);
    expect(await h.node.release([d], 'mine', 'x~')).toBe(0);
    expect(await h.get(d)).toBe('\0r\0p');
    await expectMessages(d, []);
    // A group's reservation is not theirs: left as it was.
    const c = names().key;
    await h.put(c, '\0rg', 3_000);
    expect(await h.node.release([c], 'mine', 'rel')).toBe(0);
    expect(await h.get(c)).toBe('\0rg');
    await expectMessages(c, []);
  });
}
