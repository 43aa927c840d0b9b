import type { RedisNode } from '../nodes/node';
import {
  covers,
  heardOneMore,
  listenedSince,
  readNotice,
  type BlockedNodes,
  type Notice,
  type WaiterHandle,
} from './release-notices';

export {
  announcementsHeard,
  newReleaseId,
  readNotice,
  type BlockedNodes,
  type Notice,
  type WaiterHandle,
} from './release-notices';

/** The group a reservation names when the turn is the waiters' outside the queues (scripts.ts). */
const PLAIN_TURN = '\0p';

/** How many recent release ids a channel remembers to ignore the other nodes' copies. */
const REMEMBERED_IDS = 32;

/** How many recent releases the notifier remembers the channels of (what each released). */
const REMEMBERED_RELEASES = 256;

/** One node's announcement of one release on one channel. */
interface Heard {
  readonly channel: Channel;
  readonly id: string;
  readonly node: number;
  /** Its place in the order of announcements heard ({@link announcementsHeard}). */
  readonly seq: number;
}

/** How many announcements a waiter or channel holds back at most (a few releases' copies). */
const HELD_BACK = 64;

/** A waiting acquisition, as the notifier sees it. */
interface Waiter {
  /** Ends the waiter's current sleep early. */
  readonly wake: () => void;
  /** The channels (keys) it waits for: a release of fewer may be of no use to it. */
  readonly keys: ReadonlySet<string>;
  /** Woken and not yet done with the attempt that followed: the announcement that woke it. */
  woken?: Heard;
  /** An attempt of its own is out (from `attempting()` to `attempted()`). */
  trying: boolean;
  /**
   * Where its last attempt was blocked; undefined before it reported one (every node counts).
   * A waiter is woken only by a release on one of these nodes (issue 24): never by the cleanup
   * of its own failed attempt, nor by another waiter's cleanup of a node it did not need.
   */
  blocked?: BlockedNodes;
  /** Nodes its last attempt did not hear from (waiting.ts unheardBy): a release there counts. */
  unheard?: BlockedNodes;
  /** Announcements heard while its attempt was out: judged by that attempt's result. */
  readonly held: Heard[];
  /**
   * Woken by an announcement heard while its own attempt was out, from a node that attempt met
   * held: the release may have landed there before the attempt read it (the key met is then a
   * newer owner's, as when another process won the race) or after. Reading tells, writing
   * nothing: its next try is a probe where it can make one (acquisition.ts).
   */
  doubtful: boolean;
  /** The release whose race its last attempt lost (see `attempted`): no news to it. */
  lost?: string;
  /** Ends a sleep in progress (never a later one) once it is sure to hear every release. */
  readonly listens?: () => void;
  /**
   * A waiter in a fair queue (architecture.md §5.11) hears every node's every message itself and decides
   * when to try: it is never woken by {@link ReleaseNotifier.announce}.
   */
  readonly hear?: (notice: Notice) => void;
}

/** The waiters of one release channel, and its subscription on every node. */
interface Channel {
  readonly key: string;
  readonly waiters: Waiter[];
  readonly unsubscribe: (() => void)[];
  /**
   * Announcements that came while a woken waiter was still trying: owed, once its attempt is
   * over, to whichever waiter they can be of use to then (it, if its attempt found one of those
   * nodes held: the attempt may have reached it before the release).
   */
  readonly owed: Heard[];
  /** Ids of the latest releases that woke a waiter (every node announces each release). */
  readonly seen: Set<string>;
  /** The same, per node (`id node`): which node's copy of each release woke a waiter. */
  readonly seenOn: Set<string>;
  /** Per release id that woke a waiter: the first copy's place in the order heard. */
  readonly firstSeen: Map<string, number>;
}

/**
 * Release notifications (architecture.md §5.8): waiters retry when a release is announced instead of at
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
 * the first waiter that needs only what was released (architecture.md §5.8), which would otherwise sleep
 * until the old lease ends if it no longer polls. So a release costs at most one attempt per
 * waiter for more ahead of it, plus one. A waiter is woken only by a release that can change what
 * its last attempt met (issue 24, {@link BlockedNodes}): never by its own cleanup, so whatever the
 * replies, a failed attempt is followed by a wait. While every node has
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
    blocked?: BlockedNodes,
    unheard?: BlockedNodes,
  ): WaiterHandle {
    const waiter: Waiter = {
      wake,
      trying: false,
      keys: new Set(keys),
      blocked,
      unheard,
      held: [],
      doubtful: false,
      listens,
      hear,
    };
    const channels = keys.map((key) => this.channel(key));
    for (const channel of channels) channel.waiters.push(waiter);
    if (hear !== undefined) this.fair++;
    let stopped = false;
    return {
      attempting: () => {
        waiter.trying = true;
        waiter.doubtful = false;
        waiter.lost = undefined;
      },
      attempted: (result, unheard) => {
        const woke = waiter.woken;
        waiter.woken = undefined;
        waiter.trying = false;
        waiter.blocked = result;
        waiter.unheard = unheard;
        // Woken by a release and still blocked: the release may yet be of use to a waiter that
        // needs less than this one (what this one met held may be what it does not need: a
        // waiter for more must not absorb the wake-up of one that needs only those, architecture.md
        // §5.8). Never to one that needs all this one did: it would meet the same keys.
        if (woke !== undefined && result !== undefined) this.announce(woke, waiter);
        // What came while that attempt was out (to it, or owed on its channels while it was the
        // woken one) goes to whoever it is of use to now — it again, if its attempt met one of
        // those nodes held (the release may have come after the attempt passed there). Except
        // the other copies of the release that woke it, when it lost the race for that release:
        // it had landed on the node whose copy woke it before the attempt was sent, and the
        // attempt met that node held all the same — by whoever took it since (another process).
        // (Only for a waiter of what that release freed: one of more keys may have met another
        // of its keys held there. The copies may still be news to other waiters.)
        waiter.lost =
          woke !== undefined &&
          woke.id !== '' &&
          result?.[woke.node] !== undefined &&
          covers(this.releases.get(woke.id) ?? new Set([woke.channel.key]), waiter.keys)
            ? woke.id
            : undefined;
        const later = waiter.held.splice(0);
        for (const channel of channels) {
          if (!channel.waiters.some((w) => w.woken !== undefined))
            later.push(...channel.owed.splice(0));
        }
        this.redeliver(later);
        // Woken by one of those: heard while the attempt was out, so in doubt (see Waiter).
        waiter.doubtful = waiter.woken !== undefined;
      },
      doubtful: () => waiter.doubtful,
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
      const created: Channel = {
        key,
        waiters: [],
        unsubscribe: [],
        owed: [],
        seen: new Set(),
        seenOn: new Set(),
        firstSeen: new Map(),
      };
      this.nodes.forEach((node, index) => {
        if (node.subscribe) {
          created.unsubscribe.push(
            node.subscribe(
              key,
              (id) => this.heard(created, id, index),
              () => this.gap(created),
              () => this.confirmed(created),
            ),
          );
        }
      });
      this.channels.set(key, created);
      channel = created;
    }
    return channel;
  }

  /**
   * Node `node` announced release `id` on `channel`, of (at least) the channels a release with
   * that id was heard on so far: wake the longest-waiting waiter that can use it, and every
   * waiter ahead of it that waits for more (they may be able to use it too, when the rest of
   * what they wait for is free). Unless a woken waiter is still trying: then it is owed (see
   * {@link Channel.owed}).
   *
   * A waiter that cannot use it is passed over (issue 24): one whose last attempt did not meet
   * that node held, or read it before this release landed there ({@link BlockedNodes}) — the
   * cleanup of its own failed attempt frees only nodes it took, and woke it again at once,
   * thousands of times a second; another waiter's cleanup of a node it did not need would make
   * two waiters wake each other — and one whose attempt is out, which holds it until its result
   * says. Every node announces a release: the first copy that wakes a waiter counts, and the
   * others are no new release — except to a waiter whose attempt read that node held before the
   * copy came: the release reached that node after the attempt did (nodes apply a release at
   * different moments), and that waiter would otherwise sleep through it. So a release wakes at
   * most one waiter per node, and only one that can use it.
   *
   * `passOn`: a wake-up handed on (it has been seen already) by a woken waiter that gave up
   * (`true`), or whose attempt failed (that waiter: only waiters that need less are offered it).
   */
  private announce(heard: Heard, passOn: boolean | Waiter = false): void {
    const { channel, id, node } = heard;
    if (channel.waiters.length === 0) return;
    if (channel.waiters.some((w) => w.woken !== undefined)) {
      holdBack(channel.owed, heard);
      return;
    }
    const on = `${id} ${node}`;
    const released = this.releases.get(id) ?? new Set([channel.key]);
    // Judged by what was seen before this copy: every waiter of the walk is offered it alike.
    // Woken: a waiter (this copy is seen); taken: by one that can use it (`covers`).
    let woke = false;
    let taken = false;
    const from = typeof passOn === 'boolean' ? undefined : passOn;
    for (const waiter of channel.waiters) {
      if (waiter.hear !== undefined) continue;
      if (from !== undefined && covers(waiter.keys, from.keys)) continue;
      const woken = !waiter.trying && this.canUse(waiter, heard, on, passOn !== false);
      if (waiter.trying) holdBack(waiter.held, heard);
      else if (woken) {
        waiter.woken = heard;
        waiter.doubtful = false;
        woke = true;
        waiter.wake();
      } else continue;
      if (covers(released, waiter.keys)) {
        taken = woken;
        break;
      }
    }
    if (woke && id !== '') remember(channel.seen, id, REMEMBERED_IDS);
    if (taken && id !== '') {
      remember(channel.seenOn, on, REMEMBERED_IDS * this.nodes.length);
      if (!channel.firstSeen.has(id)) {
        channel.firstSeen.set(id, heard.seq);
        if (channel.firstSeen.size > REMEMBERED_IDS) {
          channel.firstSeen.delete(channel.firstSeen.keys().next().value as string);
        }
      }
    }
  }

  /** Whether `heard` (`on`: its id and node) may wake `waiter` (see {@link announce}). */
  private canUse(waiter: Waiter, heard: Heard, on: string, passOn: boolean): boolean {
    const { channel, id, node, seq } = heard;
    const fresh = passOn || id === '';
    // Before its first attempt reported, any node's copy may be of use: the first one counts.
    if (waiter.blocked === undefined) return fresh || !channel.seen.has(id);
    if (id === waiter.lost) return false;
    const sentAt = listenedSince(waiter.blocked, waiter.unheard, node, id);
    if (sentAt === undefined || seq <= sentAt) return false;
    if (fresh) return true;
    // A release this process acted on already is news only to an attempt sent since it began
    // to be announced that still met this node held: it landed here after that attempt read
    // the node. To a waiter that has not tried since, it is the same release again.
    const first = channel.firstSeen.get(id);
    return first === undefined || (sentAt >= first && !channel.seenOn.has(on));
  }

  /** Announcements held back, judged again now (each by the walk, as when first heard). */
  private redeliver(heard: readonly Heard[]): void {
    for (const h of heard) this.announce(h);
  }

  /**
   * A node announced release `id`. A release of several keys is announced on each key's
   * channel with one id, so the channels heard so far under an id say what it released (a
   * release's later channels may still come).
   */
  private heard(channel: Channel, message: string, node: number): void {
    let id = message;
    const seq = heardOneMore();
    if (this.fair > 0 || message.includes('|')) {
      const notice = readNotice(message, node, seq);
      for (const waiter of channel.waiters) waiter.hear?.(notice);
      // A claim frees nothing, nor does a reservation for a queued group: a waiter outside the
      // queues cannot take it (woken by each, it attempted once per hand-off in vain: issue 24,
      // 700-900 attempts in a 3 s wait). Its turn is a reservation for the plain waiters (`|n|`
      // + NUL + `p`, HAND_OFF_SCRIPT), or a release.
      if (notice.kind !== 'released' && notice.group !== PLAIN_TURN) return;
      id = notice.id;
    }
    if (id !== '') {
      let released = this.releases.get(id);
      if (released === undefined) {
        this.releases.set(id, (released = new Set()));
        if (this.releases.size > REMEMBERED_RELEASES) {
          this.releases.delete(this.releases.keys().next().value as string);
        }
      }
      released.add(channel.key);
    }
    this.announce({ channel, id, node, seq });
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
    // is woken by its release — so the releases it acted on are seen on every node (a copy
    // from a node that announces late wakes nobody). A woken waiter that gave up instead passes
    // its wake-up on (and what it held back, or was owed), since nobody else may poll for it.
    const held = waiter.held.filter((h) => h.channel === channel);
    if (acquired) {
      const used = new Set([...held, ...(waiter.woken ? [waiter.woken] : [])].map((h) => h.id));
      used.delete('');
      for (const id of used) {
        remember(channel.seen, id, REMEMBERED_IDS);
        this.nodes.forEach((_, node) =>
          remember(channel.seenOn, `${id} ${node}`, REMEMBERED_IDS * this.nodes.length),
        );
      }
      const owed = channel.owed.splice(0);
      channel.owed.push(...owed.filter((h) => !used.has(h.id)));
    } else if (channel.waiters.length > 0) {
      const owed = channel.waiters.some((w) => w.woken !== undefined) ? [] : channel.owed.splice(0);
      const woken = waiter.woken?.channel === channel ? [waiter.woken] : [];
      for (const h of woken) this.announce(h, true);
      this.redeliver([...held, ...owed]);
    }
    if (channel.waiters.length > 0) return;
    this.channels.delete(key);
    for (const unsubscribe of channel.unsubscribe) unsubscribe();
  }
}

/** Keeps `heard` for later, in a bounded list (the oldest is dropped first). */
function holdBack(list: Heard[], heard: Heard): void {
  list.push(heard);
  if (list.length > HELD_BACK) list.shift();
}

/** Adds `id` to a set of recent ids, forgetting the oldest past `limit`. */
function remember(seen: Set<string>, id: string, limit: number): void {
  seen.add(id);
  if (seen.size > limit) seen.delete(seen.values().next().value as string);
}
