import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Redis } from 'ioredis';
import { env } from './env.js';

/** What one decrement did, as every transport returns it. */
export interface Outcome {
  ok: boolean;
  left: number;
  instance: string;
}

/**
 * A stock counter shared by both app instances, in a Redis node of its own (not one of the
 * lock's nodes). `decrement` is a read-modify-write with an await in the middle: only safe
 * under the lock. It also counts overlapping critical sections across instances: `active` is
 * incremented on entry and decremented on exit; an entry that finds another one inside
 * increments `overlaps`.
 */
@Injectable()
export class StockStore implements OnModuleDestroy {
  readonly instance = env('COMPAT_INSTANCE');
  private readonly redis = new Redis(env('REDLOCK_COMPAT_STORE'), { lazyConnect: false });

  async decrement(id: string): Promise<Outcome> {
    const key = `item:${id}`;
    if ((await this.redis.incr(`${key}:active`)) > 1) await this.redis.incr(`${key}:overlaps`);
    try {
      const stock = Number(await this.redis.get(`${key}:stock`));
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (!(stock > 0)) return { ok: false, left: stock, instance: this.instance };
      await this.redis.set(`${key}:stock`, stock - 1);
      return { ok: true, left: stock - 1, instance: this.instance };
    } finally {
      await this.redis.decr(`${key}:active`);
    }
  }

  /** One run of the scheduled job for `tick` (a second), by this instance. */
  async recordTick(tick: number): Promise<void> {
    await this.redis.hincrby('ticks', String(tick), 1);
    await this.redis.hincrby(`ticks:${this.instance}`, String(tick), 1);
  }

  async onModuleDestroy(): Promise<void> {
    await this.redis.quit();
  }
}
