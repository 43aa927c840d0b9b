import type { RedisNode } from '../../lib';
import {
  announcementsHeard,
  newReleaseId,
  ReleaseNotifier,
  type BlockedNodes,
} from '../../lib/core/acquisition/notifier';

/** A node that only subscribes: what the notifier uses of the port. */
class ChannelNode {
  readonly listeners = new Map<string, { message: (id: string) => void; gap?: () => void }[]>();
  confirmed = true;

  subscribe(channel: string, message: (id: string) => void, gap?: () => void): () => void {
    const list = this.listeners.get(channel) ?? [];
    const entry = { message, gap };
    list.push(entry);
    this.listeners.set(channel, list);
    return () => list.splice(list.indexOf(entry), 1);
  }

  listening(): boolean {
    return this.confirmed;
  }

  announce(channel: string, id: string): void {
    for (const { message } of this.listeners.get(channel) ?? []) message(id);
  }

  drop(channel: string): void {
    for (const { gap } of this.listeners.get(channel) ?? []) gap?.();
  }
}

/** Issue 8: the wake-up policy of release notifications (architecture.md §5.8), without Redis. */
describe('release notifier', () => {
  let nodes: ChannelNode[];
  let notifier: ReleaseNotifier;
  const announceEverywhere = (id: string) => nodes.forEach((n) => n.announce('k', id));

  beforeEach(() => {
    nodes = [new ChannelNode(), new ChannelNode(), new ChannelNode()];
    notifier = new ReleaseNotifier(nodes as unknown as RedisNode[]);
  });

  it('one release, announced by every node, wakes the longest-waiting waiter once', () => {
    const wakes = [0, 0];
    const first = notifier.watch(['k'], () => wakes[0]++);
    notifier.watch(['k'], () => wakes[1]++);
    announceEverywhere('r1');
    expect(wakes).toEqual([1, 0]);
    first.attempted(); // its attempt failed: the other nodes' copies are not a new release
    expect(wakes).toEqual([1, 0]);
  });

  it('a new release announced while the woken waiter tries is owed to it', () => {
    let wakes = 0;
    const waiter = notifier.watch(['k'], () => wakes++);
    announceEverywhere('r1');
    announceEverywhere('r2'); // its attempt may have reached the nodes before r2
    expect(wakes).toBe(1);
    waiter.attempted();
    expect(wakes).toBe(2);
  });

  it('a woken waiter that gives up passes its wake-up on; one that acquired does not', () => {
    const wakes = [0, 0, 0];
    const handles = wakes.map((_, i) => notifier.watch(['k'], () => wakes[i]++));
    announceEverywhere('r1');
    handles[0].stop(true); // took the lock: the next is woken by its release
    expect(wakes).toEqual([1, 0, 0]);
    announceEverywhere('r2');
    expect(wakes).toEqual([1, 1, 0]);
    handles[1].stop(false); // gave up (timed out, aborted) while woken
    expect(wakes).toEqual([1, 1, 1]);
  });

  it('a dropped subscriber connection wakes every waiter (they poll again)', () => {
    const wakes = [0, 0];
    wakes.forEach((_, i) => notifier.watch(['k'], () => wakes[i]++));
    nodes[1].drop('k');
    expect(wakes).toEqual([1, 1]);
  });

  it('listens only while every node confirms, and unsubscribes with the last waiter', () => {
    const handle = notifier.watch(['k', 'j'], () => undefined);
    expect(handle.listening()).toBe(true);
    nodes[2].confirmed = false;
    expect(handle.listening()).toBe(false);
    handle.stop(false);
    expect(notifier.size).toBe(0);
    expect(nodes.every((n) => n.listeners.get('k')?.length === 0)).toBe(true);
  });

  /**
   * Issue 24: a waiter is woken only by a release that can change what its last attempt met — a
   * release on a node where it found the key held, heard after the attempt was sent.
   */
  describe('who a release can wake (issue 24)', () => {
    /** Where an attempt sent now met the key held (`true`), by node. */
    const blockedAt = (...held: boolean[]): BlockedNodes => {
      const sentAt = announcementsHeard();
      return held.map((h) => (h ? sentAt : undefined));
    };

    it('never its own cleanup: an attempt that took node 0 and met 1 and 2 held sleeps through the release of node 0', () => {
      let wakes = 0;
      const waiter = notifier.watch(['k'], () => wakes++);
      for (let attempt = 0; attempt < 3; attempt++) {
        waiter.attempting();
        const blocked = blockedAt(false, true, true);
        nodes[0].announce('k', `cleanup${attempt}`); // its cleanup, heard while it reports
        waiter.attempted(blocked);
        nodes[0].announce('k', `late-cleanup${attempt}`); // or after
      }
      expect(wakes).toBe(0);
      nodes[1].announce('k', 'holder'); // the holder's release, on a node that blocked it
      expect(wakes).toBe(1);
    });

    it('two waiters do not wake each other with their cleanups of a node neither needed', () => {
      const wakes = [0, 0];
      const [a, b] = wakes.map((_, i) => notifier.watch(['k'], () => wakes[i]++));
      a.attempting();
      b.attempting();
      a.attempted(blockedAt(false, true, false)); // took node 0; node 1 held, node 2 down
      b.attempted(blockedAt(false, true, false)); // the same, one after the other
      for (let i = 0; i < 5; i++) nodes[0].announce('k', `cleanup${i}`);
      expect(wakes).toEqual([0, 0]);
    });

    it('a waiter blocked by another waiter there is woken by its cleanup, once', () => {
      const wakes = [0, 0];
      const [a, b] = wakes.map((_, i) => notifier.watch(['k'], () => wakes[i]++));
      b.attempting();
      b.attempted(blockedAt(true, true, false)); // node 0 held (by a's attempt), node 1 held
      a.attempting();
      a.attempted(blockedAt(false, true, false)); // a took node 0
      nodes[0].announce('k', 'cleanup-of-a');
      expect(wakes).toEqual([0, 1]);
      nodes[0].announce('k', 'cleanup-of-a'); // a duplicate copy: no news
      expect(wakes).toEqual([0, 1]);
    });

    it('a release heard before the attempt was sent is no news to it', () => {
      let wakes = 0;
      const waiter = notifier.watch(['k'], () => wakes++);
      waiter.attempting();
      nodes[1].announce('k', 'before'); // landed before the attempt read node 1
      waiter.attempted(blockedAt(true, true, true));
      expect(wakes).toBe(0);
    });

    it('a release that lands on a node after the attempt read it there wakes the waiter (a release applied at different moments)', () => {
      const wakes = [0, 0];
      const [early, other] = wakes.map((_, i) => notifier.watch(['k'], () => wakes[i]++));
      early.attempted(blockedAt(true, true, true));
      other.attempted(blockedAt(true, true, true));
      nodes[0].announce('k', 'r1'); // the release's first node: wakes the longest waiter
      expect(wakes).toEqual([1, 0]);
      early.attempting(); // too early: nodes 1 and 2 still hold the old lease
      early.attempted(blockedAt(false, true, true));
      nodes[1].announce('k', 'r1');
      nodes[2].announce('k', 'r1');
      // News to the waiter that tried since; the other has not, and one wake-up per release
      // and process is enough.
      expect(wakes).toEqual([2, 0]);
      expect(early.doubtful()).toBe(false); // heard after its attempt: no doubt
    });

    it('a release heard while the attempt was out, on a node it met held, wakes it in doubt', () => {
      let wakes = 0;
      const waiter = notifier.watch(['k'], () => wakes++);
      waiter.attempting();
      const blocked = blockedAt(false, true, true);
      nodes[1].announce('k', 'r1'); // before or after the attempt read node 1? Reading tells.
      waiter.attempted(blocked);
      expect(wakes).toBe(1);
      expect(waiter.doubtful()).toBe(true);
    });

    it("a woken waiter that lost the race for a release is not woken again by that release's other copies", () => {
      let wakes = 0;
      const waiter = notifier.watch(['k'], () => wakes++);
      waiter.attempted(blockedAt(true, true, true));
      nodes[0].announce('k', 'r1');
      expect(wakes).toBe(1);
      waiter.attempting();
      const blocked = blockedAt(true, true, true); // another process took node 0 after r1
      nodes[1].announce('k', 'r1');
      nodes[2].announce('k', 'r1');
      waiter.attempted(blocked);
      expect(wakes).toBe(1);
      nodes[1].announce('k', 'r2'); // the winner's release
      expect(wakes).toBe(2);
    });
  });

  it('release ids are distinct', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newReleaseId()));
    expect(ids.size).toBe(1_000);
  });
});
