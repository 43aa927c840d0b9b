import { randomBytes } from 'node:crypto';
import type { RedisNode } from './node';

/** This process's prefix of release ids: random, so that two processes never share an id. */
const RELEASE_ID_PREFIX = randomBytes(6).toString('base64url');
let releaseSeq = 0;

/**
 * A new id for one release, announced by every node it reaches (DESIGN §5.8): a waiter counts
 * a release once however many nodes announce it. Not a secret (unlike an owner value).
 */
export function newReleaseId(): string {
  releaseSeq = (releaseSeq + 1) % Number.MAX_SAFE_INTEGER;
  return RELEASE_ID_PREFIX + releaseSeq.toString(36);
}

/** How many recent release ids a channel remembers to ignore the other nodes' copies. */
const REMEMBERED_IDS = 32;

/** How many recent releases the notifier remembers the channels of (what each released). */
const REMEMBERED_RELEASES = 256;

/** A waiting acquisition, as the notifier sees it. */
interface Waiter {
  /** Ends the waiter's current sleep early. */
  readonly wake: () => void;
  /** The channels (keys) it waits for: a release of fewer may be of no use to it. */
  readonly keys: ReadonlySet<string>;
  /** Woken and not yet done with the attempt that followed. */
  woken: boolean;
  /** Ends a sleep in progress (never a later one) once it is sure to hear every release. */
  readonly listens?: () => void;
  /**
   * A waiter in a fair queue (DESIGN §5.11) hears every node's every message itself and decides
   * when to try: it is never woken by {@link ReleaseNotifier.announce}.
   */
  readonly hear?: (notice: Notice) => void;
}

/**
 * One node's message on a release channel, as a fair-queue waiter reads it: a plain release
 * (`released`, nobody queued on that node), a reservation for the queued group `group`
 * (`next`), or that group's claim of its reservation (`claimed`). `id` is the release's (or
 * claim's) id, the same on every node.
 */
export interface Notice {
  readonly kind: 'released' | 'next' | 'claimed';
  readonly id: string;
  readonly group?: string;
}

/** Reads a message: `id`, or `id|n|group` / `id|c|group` (HAND_OFF / ACQUIRE_QUEUED scripts). */
export function readNotice(message: string): Notice {
  const bar = message.indexOf('|');
  if (bar < 0) return { kind: 'released', id: message };
  const kind = message[bar + 1] === 'c' ? 'claimed' : 'next';
  return { kind, id: message.slice(0, bar), group: message.slice(bar + 3) };
}

/** The waiters of one release channel, and its subscription on every node. */
interface Channel {
  readonly key: string;
  readonly waiters: Waiter[];
  readonly unsubscribe: (() => void)[];
  /** An announcement came while a woken waiter was still trying: owed to the next sleep. */
  owed: boolean;
  /** Ids of the latest releases announced (every node announces each release). */
  readonly seen: Set<string>;
}

/** A waiter's registration; `attempted()` after each attempt, `stop()` when it stops waiting. */
export interface WaiterHandle {
  /** The attempt that followed a wake-up failed: the waiter may be woken again. */
  attempted(): void;
  /**
   * True when every node confirmed its subscription to every channel of this waiter and none
   * dropped since: no release applied after an attempt sent now can go unannounced, so the
   * waiter need not poll before the blocking lease ends.
   */
  listening(): boolean;
  /** The waiter no longer waits: it `acquired` the lock, or gave up (timed out, aborted). */
  stop(acquired: boolean): void;
}

/**
 * Release notifications (DESIGN §5.8): waiters retry when a release is announced instead of at
 * their next poll. One subscription per channel and node, shared by every waiter of this lock
 * manager and dropped with the last one; the nodes' adapters share one subscriber connection.
 *
 * No stampede: a release is announced by every node, and many waiters may wait for it, but only
 * the longest-waiting waiter of this process that can use it is woken, and no other until its
 * attempt is over — so a release costs one attempt per waiting process, and waiters in one
 * process get the lock in the order they started waiting (first come, first served, as far as
 * this process goes; across processes, the first attempt to reach a quorum wins). A waiter for
 * more resources than the release freed may not be able to use it (the others may still be
 * held): it is woken too, in its turn, but it does not absorb the wake-up — the walk goes on to
 * the first waiter that needs only what was released (DESIGN §5.8), which would otherwise sleep
 * until the old lease ends if it no longer polls. So a release costs at most one attempt per
 * waiter for more ahead of it, plus one. While every node has
 * confirmed the waiter's subscriptions (see {@link WaiterHandle.listening}), no release can go
 * unannounced, so the waiter sleeps until it is woken or the blocking lease ends; otherwise it
 * polls every retry delay, and a dropped subscriber connection wakes every waiter of it.
 */
export class ReleaseNotifier {
  private readonly channels = new Map<string, Channel>();
  /** Per recent release id: the channels it was announced on so far (what it released). */
  private readonly releases = new Map<string, Set<string>>();
  /** Fair-queue waiters registered now: only then are messages read for them. */
  private fair = 0;

  constructor(private readonly nodes: readonly RedisNode[]) {}

  /**
   * Registers a waiter on the release channels of `keys` (a lock's keys are its channels). With
   * `hear`, a fair-queue waiter: it gets every message and is never woken otherwise.
   */
  watch(
    keys: readonly string[],
    wake: () => void,
    listens?: () => void,
    hear?: (notice: Notice) => void,
  ): WaiterHandle {
    const waiter: Waiter = { wake, woken: false, keys: new Set(keys), listens, hear };
    const channels = keys.map((key) => this.channel(key));
    for (const channel of channels) channel.waiters.push(waiter);
    if (hear !== undefined) this.fair++;
    let stopped = false;
    return {
      attempted: () => {
        waiter.woken = false;
        // A release announced during that attempt may be what it missed: try again at once.
        for (const channel of channels) {
          if (channel.owed) {
            channel.owed = false;
            this.announce(channel, new Set([channel.key]));
          }
        }
      },
      listening: () => this.listening(keys),
      stop: (acquired) => {
        if (stopped) return;
        stopped = true;
        if (hear !== undefined) this.fair--;
        for (const key of keys) this.remove(key, waiter, acquired);
      },
    };
  }

  /**
   * Whether every key already has a channel (other waiters of this manager listen on it): a new
   * acquisition of them then registers before its first attempt, so that a confirmed
   * subscription can spare it the polling from its first failure on, at no extra cost.
   */
  watching(keys: readonly string[]): boolean {
    return keys.every((key) => this.channels.has(key));
  }

  /** Whether any node announces releases to us: otherwise waiters can only poll. */
  get usable(): boolean {
    return this.nodes.some((node) => node.subscribe !== undefined);
  }

  /**
   * Whether waiters can ever be sure to hear a release: every node can subscribe and tell when
   * its subscription is confirmed (and so tell a waiter when it may stop polling).
   */
  get confirmable(): boolean {
    return this.nodes.every((node) => node.subscribe !== undefined && node.listening !== undefined);
  }

  /** Every node confirmed its subscription to every channel of `keys` (see WaiterHandle). */
  private listening(keys: Iterable<string>): boolean {
    for (const node of this.nodes) {
      if (node.listening === undefined) return false;
      for (const key of keys) if (!node.listening(key)) return false;
    }
    return true;
  }

  /**
   * A node confirmed `channel`: its waiters that now hear every release they wait for stop
   * polling (one attempt closes the gap before the confirmation, then they sleep).
   */
  private confirmed(channel: Channel): void {
    for (const waiter of channel.waiters) {
      if (waiter.listens !== undefined && this.listening(waiter.keys)) waiter.listens();
    }
  }

  /** Subscribed channels (for tests and diagnostics). */
  get size(): number {
    return this.channels.size;
  }

  private channel(key: string): Channel {
    let channel = this.channels.get(key);
    if (channel === undefined) {
      const created: Channel = { key, waiters: [], unsubscribe: [], owed: false, seen: new Set() };
      for (const node of this.nodes) {
        if (node.subscribe) {
          created.unsubscribe.push(
            node.subscribe(
              key,
              (id) => this.heard(created, id),
              () => this.gap(created),
              () => this.confirmed(created),
            ),
          );
        }
      }
      this.channels.set(key, created);
      channel = created;
    }
    return channel;
  }

  /**
   * A release was announced on `channel`, of (at least) the channels in `released`: wake the
   * longest-waiting waiter that can use it, and every waiter ahead of it that waits for more
   * (they may be able to use it too, when the rest of what they wait for is free) — unless one is
   * already trying: then the announcement is owed to it, in case its attempt reached the nodes
   * before the release did (a waiter that no longer polls must not lose a wake-up).
   */
  private announce(channel: Channel, released: ReadonlySet<string>): void {
    if (channel.waiters.length === 0) return;
    if (channel.waiters.some((w) => w.woken)) {
      channel.owed = true;
      return;
    }
    for (const waiter of channel.waiters) {
      if (waiter.hear !== undefined) continue;
      waiter.woken = true;
      waiter.wake();
      if (covers(released, waiter.keys)) return;
    }
  }

  /**
   * A node announced release `id`: the first copy counts, the other nodes' are ignored. A
   * release of several keys is announced on each key's channel with one id, so the channels
   * heard so far under an id say what it released (a release's later channels may still come).
   */
  private heard(channel: Channel, message: string): void {
    let id = message;
    if (this.fair > 0 || message.includes('|')) {
      const notice = readNotice(message);
      for (const waiter of channel.waiters) waiter.hear?.(notice);
      // A claim frees nothing; a reservation is, to a waiter outside the queue, a release (it
      // will find the key held by the reservation and sleep until that ends or is claimed).
      if (notice.kind === 'claimed') return;
      id = notice.id;
    }
    if (id === '') {
      this.announce(channel, new Set([channel.key]));
      return;
    }
    if (channel.seen.has(id)) return;
    channel.seen.add(id);
    if (channel.seen.size > REMEMBERED_IDS) {
      channel.seen.delete(channel.seen.values().next().value as string);
    }
    let released = this.releases.get(id);
    if (released === undefined) {
      this.releases.set(id, (released = new Set()));
      if (this.releases.size > REMEMBERED_RELEASES) {
        this.releases.delete(this.releases.keys().next().value as string);
      }
    }
    released.add(channel.key);
    this.announce(channel, released);
  }

  /** Announcements may have been missed (a subscriber connection dropped): wake every waiter. */
  private gap(channel: Channel): void {
    for (const waiter of [...channel.waiters]) waiter.wake();
  }

  private remove(key: string, waiter: Waiter, acquired: boolean): void {
    const channel = this.channels.get(key);
    if (channel === undefined) return;
    const index = channel.waiters.indexOf(waiter);
    if (index >= 0) channel.waiters.splice(index, 1);
    // A waiter that took the lock: waking the next one now would only meet that lock; the next
    // is woken by its release. A woken waiter that gave up instead passes its wake-up on (or
    // an owed one), since nobody else may poll for it.
    if (!acquired && (waiter.woken || channel.owed) && channel.waiters.length > 0) {
      channel.owed = false;
      this.announce(channel, new Set([channel.key]));
    }
    if (channel.waiters.length > 0) return;
    this.channels.delete(key);
    for (const unsubscribe of channel.unsubscribe) unsubscribe();
  }
}

/** Whether a release of `released` frees everything a waiter for `keys` waits for. */
function covers(released: ReadonlySet<string>, keys: ReadonlySet<string>): boolean {
  for (const key of keys) if (!released.has(key)) return false;
  return true;
}
