import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Locked } from 'nestjs-redlock';
import { StockStore } from './stock.store.js';

/**
 * A `@Cron` job every second on every instance, run once per tick across them by
 * `onBusy: 'skip'`. COMPAT_CRON_DELAY_MS makes an instance fire later than the others, as an
 * instance whose clock is that far behind would (issue 17 item 4: a 1 ms job ran twice).
 */
@Injectable()
export class ReportJob {
  private readonly delay = Number(process.env.COMPAT_CRON_DELAY_MS ?? 0);

  constructor(private readonly store: StockStore) {}

  @Cron('* * * * * *')
  async fire(): Promise<void> {
    const tick = Math.floor(Date.now() / 1000);
    if (this.delay > 0) await new Promise((resolve) => setTimeout(resolve, this.delay));
    await this.run(tick);
  }

  /** The job itself: about a millisecond. */
  @Locked('jobs:report', { onBusy: 'skip' })
  async run(tick: number): Promise<void> {
    await this.store.recordTick(tick);
  }
}
