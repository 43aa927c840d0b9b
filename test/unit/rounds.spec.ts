import { LockNotAcquiredError, Redlock } from '../../lib';
import { memoryNodes, type MemoryNode } from './memory-node';

const never = new Promise<void>(() => undefined);
/** Closing with a lock still held warns by design; these tests are not about that. */
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** Puts a foreign owner's key on the given nodes. */
function holdElsewhere(nodes: MemoryNode[], key = 'redlock:r') {
  for (const node of nodes) node.store.set(key, 'someone-else');
}

describe('the quorum decision', () => {
  it('succeeds at quorum without waiting for nodes that have not answered', async () => {
    const nodes = memoryNodes(5);
    nodes[3].gate = never;
    nodes[4].gate = never;
    const redlock = new Redlock(nodes, { logger: quiet, nodeTimeout: 5_000, ttl: 20_000 });
    const started = performance.now();
    const lock = await redlock.acquire('r');
    // The hung nodes would cost 5 s if they were waited for.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(lock.remainingMs()).toBeGreaterThan(0);
    nodes[3].gate = undefined;
    nodes[4].gate = undefined;
    await redlock.close();
  });

  it('counts the last reply: a quorum completed by the last node to answer is a success', async () => {
    const nodes = memoryNodes(5);
    nodes[0].failure = new Error('down');
    nodes[1].failure = new Error('down');
    let open!: () => void;
    nodes[4].gate = new Promise((resolve) => (open = resolve));
    const redlock = new Redlock(nodes, { logger: quiet, nodeTimeout: 2_000 });
    const pending = redlock.acquire('r', { wait: 0 });
    setTimeout(open, 20);
    const lock = await pending;
    expect(lock.remainingMs()).toBeGreaterThan(0);
    nodes[0].failure = nodes[1].failure = undefined;
    await redlock.close();
  });

  it('fails as soon as a quorum is out of reach, and releases only where our keys may be', async () => {
    const nodes = memoryNodes(5);
    holdElsewhere(nodes.slice(0, 3));
    nodes[4].gate = never;
    const redlock = new Redlock(nodes, { logger: quiet, nodeTimeout: 5_000, ttl: 20_000 });
    const started = performance.now();
    const error = await redlock.acquire('r', { wait: 0 }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(4_000);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('held');
    expect((error as LockNotAcquiredError).attempts).toBe(1);
    // "held" nodes wrote nothing and are not sent a release; node 3 (free) and node 4 (no
    // answer: its acquire may still land) are.
    expect(nodes.map((n) => n.calls.release)).toEqual([0, 0, 0, 1, 1]);
    expect(nodes[3].store.size).toBe(0);
    expect(nodes[0].store.get('redlock:r')).toBe('someone-else');
    nodes[4].gate = undefined;
    await redlock.close();
  });

  it('reports "unavailable" when fewer than a quorum of nodes answer', async () => {
    const nodes = memoryNodes(5);
    for (const node of nodes.slice(0, 3)) node.failure = new Error('ECONNREFUSED');
    const redlock = new Redlock(nodes);
    const error = (await redlock
      .acquire('r', { wait: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(error.reason).toBe('unavailable');
    // Three errors settle it: the last two nodes are not waited for.
    expect(error.nodes.map((n) => n.outcome)).toEqual([
      'error',
      'error',
      'error',
      'pending',
      'pending',
    ]);
    // The library's words first, the client's text after (issue 25).
    expect(error.nodes[0].error).toBe(
      'connection refused: no Redis server listens on that port (ECONNREFUSED)',
    );
    // tryAcquire: "held" is null, "unavailable" is an error
    await expect(redlock.tryAcquire('r')).rejects.toMatchObject({ reason: 'unavailable' });
    for (const node of nodes) node.failure = undefined;
    holdElsewhere(nodes);
    await expect(redlock.tryAcquire('r')).resolves.toBeNull();
    await redlock.close();
  });

  it('computes when a held lock becomes obtainable from the blocking leases', async () => {
    const nodes = memoryNodes(5);
    holdElsewhere(nodes.slice(0, 4));
    const redlock = new Redlock(nodes);
    const error = (await redlock
      .acquire('r', { wait: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(error.reason).toBe('held');
    expect(error.retryAfterMs).toBe(1000);
    await redlock.close();
  });

  it('does not block itself with keys from its own earlier attempt', async () => {
    const nodes = memoryNodes(3);
    // Node 0's answer to the first attempt arrives too late to count.
    let open!: () => void;
    nodes[0].gate = new Promise((resolve) => (open = resolve));
    nodes[1].failure = new Error('down');
    const redlock = new Redlock(nodes, {
      logger: quiet,
      nodeTimeout: 50,
      retryDelay: 10,
      retryJitter: 0,
    });
    const pending = redlock.acquire('r', { wait: 2_000 });
    await new Promise((r) => setTimeout(r, 100));
    open();
    nodes[0].gate = undefined;
    nodes[1].failure = undefined;
    const lock = await pending;
    expect(lock.remainingMs()).toBeGreaterThan(0);
    await redlock.close();
  });
});
