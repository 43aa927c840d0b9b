import { setTimeout as delay } from 'node:timers/promises';
import { Redlock } from '../../lib';
import type { RedisNode } from '../../lib/core/nodes/node';
import { Suspicion } from '../../lib/core/nodes/suspicion';
import { memoryNodes, type MemoryNode } from './memory-node';

/** Closing with a lock still held warns by design; these tests are not about that. */
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const NODE_TIMEOUT = 50;

/** Memory nodes that answer PING (a probe) through the same gate as every other command. */
function pingableNodes(count: number): MemoryNode[] {
  return memoryNodes(count).map((node) =>
    Object.assign(node, {
      ping: async (): Promise<void> => {
        await node.gate;
      },
    }),
  );
}

/** A gate the test opens: the node hangs until then. */
function hang(node: MemoryNode): () => void {
  let open!: () => void;
  node.gate = new Promise<void>((resolve) => (open = resolve));
  return () => {
    node.gate = undefined;
    open();
  };
}

describe('suspicion: a node that stops answering gets no lock traffic (issue 18 item 2)', () => {
  it('skips a node that owed a reply longer than nodeTimeout, releases only what reached it, and lets it rejoin once a probe answers', async () => {
    const nodes = pingableNodes(3);
    const redlock = new Redlock(nodes, { logger: quiet, nodeTimeout: NODE_TIMEOUT, ttl: 1_000 });
    try {
      const heal = hang(nodes[2]);
      // Sent to every node; decided by the two that answer.
      const before = await redlock.acquire('before');
      expect(nodes[2].calls.acquire).toBe(1);
      await delay(NODE_TIMEOUT * 2);
      // Node 2 has owed its reply for over nodeTimeout: suspected, not asked.
      const during = await redlock.acquire('during');
      expect(nodes[2].calls.acquire).toBe(1);
      await during.extend();
      expect(nodes[2].calls.extend).toBe(0);
      // The acquire of `during` never reached node 2: nothing to release there.
      await during.release();
      expect(nodes[2].calls.release).toBe(0);
      // `before` may have its key on node 2: its release is sent (not waited for).
      await before.release();
      expect(nodes[2].calls.release).toBe(1);

      heal();
      // Probed every few hundred ms: it answers, and takes lock traffic again.
      const deadline = performance.now() + 3_000;
      while (nodes[2].calls.acquire === 1 && performance.now() < deadline) {
        await (await redlock.acquire('after')).release();
        await delay(20);
      }
      expect(nodes[2].calls.acquire).toBeGreaterThan(1);
      await delay(10); // the last release's reply from node 2 was not waited for
      expect(nodes[2].store.size).toBe(0);
    } finally {
      await redlock.close();
    }
  });

  it('a majority late together is not a hung node: nobody is suspected, and the attempt fails unavailable after the node timeout', async () => {
    const nodes = pingableNodes(3);
    const redlock = new Redlock(nodes, { logger: quiet, nodeTimeout: NODE_TIMEOUT, ttl: 1_000 });
    const heals = [hang(nodes[0]), hang(nodes[1])];
    try {
      await expect(redlock.acquire('r', { wait: 0 })).rejects.toMatchObject({
        reason: 'unavailable',
      });
      await delay(NODE_TIMEOUT * 2);
      const sent = nodes[0].calls.acquire + nodes[1].calls.acquire;
      const error = await redlock.acquire('r', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ reason: 'unavailable' });
      // Still asked: when most nodes are late together (overload, issue 19), skipping them would
      // only turn slow answers into "unavailable"; one hung node among answering peers is skipped
      // (the test above).
      expect(nodes[0].calls.acquire + nodes[1].calls.acquire).toBe(sent + 2);
      expect(nodes[2].store.size).toBe(0);
    } finally {
      heals.forEach((heal) => heal());
      await redlock.close();
    }
  });
});

describe('suspicion watchdog: a node late past nodeTimeout is found without a round, but only after the replies already received are read', () => {
  /** A clock whose timers and after-I/O callbacks the test runs by hand. */
  function manualClock() {
    let now = 0;
    const timers: { at: number; callback: () => void }[] = [];
    const afterIo: (() => void)[] = [];
    return {
      clock: {
        now: () => now,
        setTimer: (callback: () => void, ms: number) => {
          const timer = { at: now + ms, callback };
          timers.push(timer);
          return timer;
        },
        clearTimer: (timer: unknown) => {
          const i = timers.indexOf(timer as (typeof timers)[number]);
          if (i >= 0) timers.splice(i, 1);
        },
        afterIo: (callback: () => void) => void afterIo.push(callback),
      },
      /** Moves time on and fires the timers due (not what they hand to afterIo). */
      advance(ms: number) {
        now += ms;
        for (const timer of timers.filter((t) => t.at <= now)) {
          timers.splice(timers.indexOf(timer), 1);
          timer.callback();
        }
      },
      runAfterIo() {
        for (const callback of afterIo.splice(0)) callback();
      },
    };
  }
  const node = (name: string) => ({ name, ping: () => Promise.resolve() }) as unknown as RedisNode;

  /** Three nodes sent a request at time 0; b and c answered, a still owes its reply. */
  function aOwesTheOthersAnswered() {
    const manual = manualClock();
    const nodes = [node('a'), node('b'), node('c')];
    const late: string[] = [];
    const suspicion = new Suspicion(nodes, manual.clock, 50, (n) => late.push(n.name));
    for (const n of nodes) suspicion.sent(n);
    suspicion.settled(nodes[1], false);
    suspicion.settled(nodes[2], false);
    return { ...manual, nodes, late, suspicion };
  }

  it('reports and suspects a node that owes a reply past nodeTimeout, with no round to notice it', () => {
    const { advance, runAfterIo, nodes, late, suspicion } = aOwesTheOthersAnswered();
    advance(60);
    runAfterIo();
    expect(late).toEqual(['a']);
    expect(suspicion.isSuspected(nodes[0])).toBe(true);
    suspicion.close();
  });

  it('a reply read in the same turn as the late timer (the process was busy) clears the node first', () => {
    const { advance, runAfterIo, nodes, late, suspicion } = aOwesTheOthersAnswered();
    advance(500); // the timer fires late; a's reply is already in its socket
    suspicion.settled(nodes[0], false); // read in the poll phase, before the check phase
    runAfterIo();
    expect(late).toEqual([]);
    expect(suspicion.isSuspected(nodes[0])).toBe(false);
    suspicion.close();
  });
});
