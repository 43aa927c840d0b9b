import type { RedisNode } from '../../lib';
import { newReleaseId, ReleaseNotifier } from '../../lib/core/notifier';

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

/** Issue 8: the wake-up policy of release notifications (DESIGN §5.8), without Redis. */
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

  it('release ids are distinct', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newReleaseId()));
    expect(ids.size).toBe(1_000);
  });
});
