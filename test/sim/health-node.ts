import type { NodeHealth } from '../../lib/core/node';
import { SimNode } from './sim-node';

/** A simulated node whose connection state a test sets: down, up, slow. */
export class HealthNode extends SimNode {
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
}
