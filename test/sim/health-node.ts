import type { KeyState, NodeHealth } from '../../lib/core/node';
import { SimNode } from './sim-node';

/**
 * A simulated node whose connection state a test sets (down, up, slow), which answers PING and
 * key inspection (`health()`, `inspect()`), after `answerDelay` ms of virtual time or never
 * (`undefined` reply: a hung node), or with `answerError`.
 */
export class HealthNode extends SimNode {
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
  ping(): Promise<void> {
    return this.answer(() => undefined);
  }
  inspect(key: string): Promise<KeyState> {
    return this.answer(() => ({ value: this.valueAt(key) ?? null, pttl: this.pttlOf(key) }));
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
