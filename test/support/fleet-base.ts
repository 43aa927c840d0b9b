import type { FleetNode, RedisFleet } from './fleet';

/** A node as the backends keep it: a {@link FleetNode} that also says whether it is paused. */
export interface PausableNode extends FleetNode {
  readonly paused: boolean;
}

/** What every backend's fleet does the same way; `stop()` is each backend's own. */
export abstract class FleetBase<N extends PausableNode> implements RedisFleet {
  protected abstract readonly members: readonly N[];

  get nodes(): readonly FleetNode[] {
    return this.members;
  }

  urls(): string[] {
    return this.members.map((node) => node.url);
  }

  async flushAll(): Promise<void> {
    await Promise.all(
      this.members
        .filter((node) => node.running() && !node.paused)
        .map((node) => node.command('FLUSHALL')),
    );
  }

  abstract stop(): Promise<void>;
}
