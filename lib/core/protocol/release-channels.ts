import type { PubSubTransport, SubscriberConnection } from '../nodes/transport';

/** Channels per SUBSCRIBE / UNSUBSCRIBE command: a batch whose reply arrives in one piece. */
const CHANNELS_PER_COMMAND = 500;

/** One release channel of a node's subscriber connection. */
interface Subscription {
  /** Called on each announcement. */
  readonly listeners: Set<(id: string) => void>;
  /** Called when announcements may have been missed (the connection dropped). */
  readonly gaps: Set<() => void>;
  /** Called when the server confirms the subscription. */
  readonly confirms: Set<() => void>;
  /** The server confirmed the subscription on the current connection. */
  confirmed: boolean;
}

/**
 * A node's release channels (architecture.md §5.8) over its {@link PubSubTransport}: one subscriber
 * connection per node, shared by every waiter of the lock manager and reference-counted per
 * channel, opened on the first wait. Client-independent, so every adapter with a subscriber
 * connection gets the same confirmation rules: a channel counts as listened to only once the
 * server confirmed it on the current connection, and a drop tells its waiters (they poll until
 * the subscription is confirmed again, on the next ready).
 */
export class ReleaseChannels {
  private subscriber?: SubscriberConnection;
  /** Counts the subscriber connection's drops: a SUBSCRIBE reply counts only for its own. */
  private generation = 0;
  /** Release channels subscribed to (by their name on the server), with their listeners. */
  private readonly channels = new Map<string, Subscription>();
  /** Channels to subscribe to / unsubscribe from at the next flush (batched). */
  private readonly toSubscribe = new Set<string>();
  private readonly toUnsubscribe = new Set<string>();
  private flushing = false;

  constructor(private readonly transport: PubSubTransport) {}

  /** See {@link RedisNode.subscribe}. */
  subscribe(
    channel: string,
    onMessage: (id: string) => void,
    onGap?: () => void,
    onConfirmed?: () => void,
  ): () => void {
    const subscriber = (this.subscriber ??= this.open());
    const wire = this.transport.keyPrefix + channel;
    let subscription = this.channels.get(wire);
    if (subscription === undefined) {
      subscription = {
        listeners: new Set(),
        gaps: new Set(),
        confirms: new Set(),
        confirmed: false,
      };
      this.channels.set(wire, subscription);
      this.toUnsubscribe.delete(wire);
      this.toSubscribe.add(wire);
      this.scheduleFlush();
    }
    const current = subscription;
    current.listeners.add(onMessage);
    if (onGap) current.gaps.add(onGap);
    if (onConfirmed) current.confirms.add(onConfirmed);
    return () => {
      current.listeners.delete(onMessage);
      if (onGap) current.gaps.delete(onGap);
      if (onConfirmed) current.confirms.delete(onConfirmed);
      if (current.listeners.size > 0 || this.channels.get(wire) !== current) return;
      this.channels.delete(wire);
      if (this.subscriber !== subscriber) return;
      this.toSubscribe.delete(wire);
      this.toUnsubscribe.add(wire);
      this.scheduleFlush();
    };
  }

  /** See {@link RedisNode.listening}. */
  listening(channel: string): boolean {
    return this.channels.get(this.transport.keyPrefix + channel)?.confirmed === true;
  }

  /** Closes the subscriber connection and forgets every channel. */
  close(): void {
    this.subscriber?.close();
    this.subscriber = undefined;
    this.channels.clear();
    this.toSubscribe.clear();
    this.toUnsubscribe.clear();
  }

  private open(): SubscriberConnection {
    return this.transport.openSubscriber({
      message: (channel, id) => {
        const subscription = this.channels.get(channel);
        if (subscription) for (const listener of [...subscription.listeners]) listener(id);
      },
      closed: () => {
        this.generation++;
        for (const subscription of this.channels.values()) {
          if (!subscription.confirmed) continue;
          subscription.confirmed = false;
          for (const gap of [...subscription.gaps]) gap();
        }
      },
      // Also on the first ready: a SUBSCRIBE queued before a failed first connection got its
      // reply on a later one, which does not confirm it.
      ready: () => {
        for (const channel of this.channels.keys()) this.toSubscribe.add(channel);
        this.scheduleFlush();
      },
    });
  }

  /**
   * Sends the SUBSCRIBEs and UNSUBSCRIBEs asked for since the last flush, many channels per
   * command (issue 19: thousands of waiters starting at once cost a few commands, not one each),
   * on the next turn of the event loop.
   */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const subscriber = this.subscriber;
      if (subscriber === undefined) return;
      const subscribe = [...this.toSubscribe];
      const unsubscribe = [...this.toUnsubscribe];
      this.toSubscribe.clear();
      this.toUnsubscribe.clear();
      for (let i = 0; i < subscribe.length; i += CHANNELS_PER_COMMAND) {
        this.confirm(subscriber, subscribe.slice(i, i + CHANNELS_PER_COMMAND));
      }
      for (let i = 0; i < unsubscribe.length; i += CHANNELS_PER_COMMAND) {
        subscriber
          .unsubscribe(unsubscribe.slice(i, i + CHANNELS_PER_COMMAND))
          .catch(() => undefined);
      }
    });
  }

  /**
   * Sends one SUBSCRIBE for `channels` and marks each confirmed when the server's reply arrives —
   * unless the connection dropped meanwhile (its generation changed) or the channel was dropped
   * and subscribed again since (another subscription): a reply from a connection that is gone, or
   * for an earlier subscription, vouches for nothing.
   */
  private confirm(subscriber: SubscriberConnection, channels: readonly string[]): void {
    const generation = this.generation;
    const sent = channels.map((channel) => this.channels.get(channel));
    subscriber.subscribe(channels).then(
      () => {
        if (generation !== this.generation) return;
        channels.forEach((channel, i) => {
          const subscription = sent[i];
          if (subscription !== undefined && this.channels.get(channel) === subscription) {
            subscription.confirmed = true;
            for (const confirmed of [...subscription.confirms]) confirmed();
          }
        });
      },
      () => undefined,
    );
  }
}
