import { setTimeout as sleep } from 'node:timers/promises';
import {
  Body,
  Controller,
  DefaultValuePipe,
  HttpCode,
  Param,
  ParseIntPipe,
  Post,
  Query,
} from '@nestjs/common';
import { CurrentLock, Locked, type Lock } from 'nestjs-redlock';
import { switchMap, timer, type Observable } from 'rxjs';
import type { StockLevel } from '../../sample/src/stock/stock-level';
import { StockService } from '../../sample/src/stock/stock.service';

/**
 * Test-only routes beside the sample's stock API (added to the e2e apps, not to the sample):
 * handlers the sample has no reason to have — slow, Observable, naming the lock from the body —
 * each locking the same `stock:{id}` resource as the sample's own decrements, so that the two
 * contend for one lock.
 */

/** The lease of {@link StockTestAidsController.hold}: short, so a test can outlive it 3 times. */
export const HOLD_TTL_MS = 800; // at least 4 × the sample's nodeTimeout (200 ms)

/** How many `occupy` handlers are inside at once, across both apps (one process). */
export const occupancy = {
  current: 0,
  max: 0,
  reset(): void {
    this.current = 0;
    this.max = 0;
  },
};

/** How often each aid's handler body ran (it must not, when the lock could not be taken). */
export const aidRuns = new Map<string, number>();
const ran = (name: string) => aidRuns.set(name, (aidRuns.get(name) ?? 0) + 1);

@Controller('aids/stock')
export class StockTestAidsController {
  constructor(private readonly stock: StockService) {}

  /**
   * Holds the item's lock, with a {@link HOLD_TTL_MS} lease, for `ms` — longer than the lease:
   * auto-extension must keep it. Reports whether the lock was ever reported lost meanwhile.
   */
  @Post(':id/hold')
  @HttpCode(200)
  @Locked('stock:{id}', { ttl: HOLD_TTL_MS, wait: 0 })
  async hold(@Query('ms', ParseIntPipe) ms: number, @CurrentLock() lock: Lock) {
    ran('hold');
    await sleep(ms);
    return { aborted: lock.signal.aborted, remainingMs: lock.remainingMs() };
  }

  /** Waits for the item's lock and stays inside for `ms`, counting who else is inside. */
  @Post(':id/occupy')
  @HttpCode(200)
  @Locked('stock:{id}')
  async occupy(@Query('ms', ParseIntPipe) ms: number) {
    occupancy.current++;
    occupancy.max = Math.max(occupancy.max, occupancy.current);
    try {
      await sleep(ms);
    } finally {
      occupancy.current--;
    }
    return {};
  }

  /** An Observable handler: decrements after `after` ms, then completes. */
  @Post(':id/decrement-observable')
  @HttpCode(200)
  @Locked('stock:{id}')
  decrementLater(
    @Param('id') id: string,
    @Query('after', new DefaultValuePipe(0), ParseIntPipe) after: number,
  ): Observable<StockLevel> {
    ran('decrementLater');
    return timer(after).pipe(switchMap(() => this.stock.decrement(id)));
  }

  /** Names the lock from the body: `{ "id": … }`, which the client may leave out or mangle. */
  @Post('decrement')
  @HttpCode(200)
  @Locked('stock:{body.id}')
  decrementFromBody(@Body('id') id: string): Promise<StockLevel> {
    ran('decrementFromBody');
    return this.stock.decrement(id);
  }
}
