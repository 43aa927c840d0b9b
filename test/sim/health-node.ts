import type { KeyState, NodeHealth } from '../../lib/core/nodes/node';
import { SimNode } from './sim-node';

/**
 * A simulated node whose connection state a test sets (down, up, slow), with pub/sub for release
 * notifications, and which answers PING and key inspection (`health()`, `inspect()`) after
 * `answerDelay` ms of virtual time, with `answerError`, or never (`hung`).
 */
export class HealthNode extends SimNode {
  /** Pub/sub: the subscribers of each channel (a release announces on its keys' channels). */
  readonly subscribers = new Map<string, Set<(id: string) => void>>();
  answerDelay = 0;
  answerError?: Error;
  hung = false;
  private listener?: (state: NodeHealth) => void;
  private ready?: Promise<void>;
  onHealth(listener: (state: NodeHealth) => void): void {
    this.listener = listener;
  }
  report(state: NodeHealth): void {
    this.isDown = state === 'down';
    this.listener?.(state);
  }
  /** Until `connect()`, the node is still connecting (the first acquisition waits for it). */
  connectLater(): () => void {
    let connect!: () => void;
    this.ready = new Promise((resolve) => (connect = resolve));
    return connect;
  }
  override whenReady(): Promise<void> {
    return this.ready ?? Promise.resolve();
  }
  subscribe(channel: string, onMessage: (id: string) => void): () => void {
    let set = this.subscribers.get(channel);
    if (set === undefined) this.subscribers.set(channel, (set = new Set()));
    set.add(onMessage);
    return () => {
      set.delete(onMessage);
      if (set.size === 0) this.subscribers.delete(channel);
    };
  }
  listening(channel: string): boolean {
    return this.subscribers.has(channel);
  }
  /**
   * Every script's messages reach subscribers as the script publishes them: a release's on each key
   * it deleted (RELEASE_SCRIPT), the fair hand-off's (HAND_OFF, ACQUIRE_QUEUED) too.
   */
  protected override publish(channel: string, message: string): void {
    for (const notify of this.subscribers.get(channel) ?? []) notify(message);
  }
  override ping(): Promise<void> {
    return this.answer(() => undefined);
  }
  inspect(key: string): Promise<KeyState> {
    return this.answer(() => ({ value: this.valueAt(key) ?? null, pttl: this.pttlOf(key) }));
  }
  /**
   * PTTL, for a waiter's probe (rounds.ts probeRound): undefined (no probes) unless
   * {@link readLeases} turned it on — specs that count acquire scripts keep their meaning.
   */
  lease?: (key: string) => Promise<number>;
  /**
   * Answers lease reads: read when the command is applied, after the delays `fault` gives any
   * command (as it gives `ping`'s), or never when it loses the command.
   */
  readLeases(): this {
    this.lease = (key) => {
      const fault = this.fault?.('ping', [key], '') ?? {};
      return new Promise<number>((resolve, reject) => {
        if (fault.lose === true) return;
        this.clock.setTimer(() => {
          if (fault.error !== undefined) return reject(fault.error);
          const pttl = this.pttlOf(key);
          if (fault.dropReply !== true) {
            this.clock.setTimer(() => resolve(pttl), fault.replyDelay ?? 0);
          }
        }, fault.applyDelay ?? 0);
      });
    };
    return this;
  }
  private answer<T>(read: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.hung) return;
      this.clock.setTimer(() => {
        if (this.answerError) reject(this.answerError);
        else resolve(read());
      }, this.answerDelay);
    });
  }
}
