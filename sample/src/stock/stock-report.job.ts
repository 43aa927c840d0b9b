import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import type Redis from 'ioredis';
import { Locked } from 'nestjs-redlock';
import { STOCK_REDIS } from './stock.constants';

/** Where the report lives in the stock Redis: the last report, and the ticks that produced one. */
export const STOCK_REPORT_KEY = 'stock-report:last';
export const STOCK_REPORT_TICKS_KEY = 'stock-report:ticks';

/**
 * How long a run keeps the lock at least. Every instance's scheduler fires the same tick within a
 * few milliseconds of the others; a lock excludes concurrent runs but does not remember a
 * finished one, so a report that took 2 ms would let a late instance run the same tick after it.
 * Holding the lock for half the period makes every other instance's run of the tick find it held.
 */
const MIN_HOLD_MS = 500;

/**
 * A scheduled job that must run on one instance of the cluster per tick, whatever the number of
 * instances: every second, counts the keys of the stock Redis and stores the count. `onBusy: 'skip'`: the
 * instances that find the lock held skip the tick with a debug line, not an error.
 */
@Injectable()
export class StockReportJob {
  constructor(@Inject(STOCK_REDIS) private readonly redis: Redis) {}

  @Cron(CronExpression.EVERY_SECOND, { name: 'stock-report' })
  @Locked('jobs:stock-report', { onBusy: 'skip' })
  async report(): Promise<void> {
    const started = Date.now();
    const tick = Math.floor(started / 1000);
    let keyCount = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', 'stock:*', 'COUNT', 1000);
      keyCount += keys.length;
      cursor = next;
    } while (cursor !== '0');
    await this.redis
      .multi()
      .set(STOCK_REPORT_KEY, JSON.stringify({ tick, keys: keyCount }))
      .rpush(STOCK_REPORT_TICKS_KEY, String(tick))
      .ltrim(STOCK_REPORT_TICKS_KEY, -1000, -1)
      .exec();
    await sleep(Math.max(0, MIN_HOLD_MS - (Date.now() - started)));
  }
}
