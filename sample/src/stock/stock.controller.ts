import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { CurrentLock, Locked, type Lock } from 'nestjs-redlock';
import { ParseQuantityPipe } from './parse-quantity.pipe';
import { ParseStockIdPipe } from './parse-stock-id.pipe';
import type { StockLevel } from './stock-level';
import { StockService } from './stock.service';

/**
 * The stock API. Three decrements run the same non-atomic read-modify-write
 * ({@link StockService.decrement}); only the lock differs:
 *
 * - `decrement-unsafe`: no lock — concurrent requests lose updates (the classic race);
 * - `decrement`: `@Locked('stock:{id}')` — waits for the lock (up to the module's `wait`), exact;
 * - `decrement-nowait`: `@Locked('stock:{id}', { wait: 0 })` — one attempt, 409 when busy, exact.
 *
 * Every route reads the item id through {@link ParseStockIdPipe} (`/stock/042` is item `42`).
 * `{id}` locks the id the handler receives — after that pipe — so `/stock/042` and `/stock/42`
 * take one lock on one stock level.
 *
 * Every decrement answers 200 with the new level, 404 for an unknown item, 409 "Out of stock"
 * at 0. A lock held by another request is 409 too (with `Retry-After`), nodes down is 503.
 */
@Controller('stock')
export class StockController {
  constructor(private readonly stock: StockService) {}

  /** The stock of an item; 404 when it was never set. */
  @Get(':id')
  get(@Param('id', ParseStockIdPipe) id: string): Promise<StockLevel> {
    return this.stock.get(id);
  }

  /**
   * Sets the stock of an item: body `{ "quantity": 100 }`. Locked too: a plain write landing
   * between a locked decrement's read and write would be overwritten by it.
   */
  @Put(':id')
  @Locked('stock:{id}', { fencing: true })
  async set(
    @Param('id', ParseStockIdPipe) id: string,
    @Body('quantity', new ParseQuantityPipe()) quantity: number,
    @CurrentLock() lock: Lock,
  ): Promise<StockLevel> {
    return this.stock.set(id, quantity, lock.fencingToken);
  }

  /** No lock: shows what goes wrong without one. Never do this. */
  @Post(':id/decrement-unsafe')
  @HttpCode(200)
  decrementUnsafe(@Param('id', ParseStockIdPipe) id: string): Promise<StockLevel> {
    return this.stock.decrement(id);
  }

  /**
   * Waits for the item's lock, then decrements. The lock's fencing token makes the stock refuse
   * the write of a holder that was paused past its lease (409); its signal stops the work early
   * when the loss is noticed in time.
   */
  @Post(':id/decrement')
  @HttpCode(200)
  @Locked('stock:{id}', { fencing: true })
  async decrement(
    @Param('id', ParseStockIdPipe) id: string,
    @CurrentLock() lock: Lock,
  ): Promise<StockLevel> {
    return this.stock.decrement(id, { signal: lock.signal, fencingToken: lock.fencingToken });
  }

  /** One attempt at the item's lock: 409 at once when another request holds it. */
  @Post(':id/decrement-nowait')
  @HttpCode(200)
  @Locked('stock:{id}', { wait: 0, fencing: true })
  async decrementNoWait(
    @Param('id', ParseStockIdPipe) id: string,
    @CurrentLock() lock: Lock,
  ): Promise<StockLevel> {
    return this.stock.decrement(id, { signal: lock.signal, fencingToken: lock.fencingToken });
  }

  /**
   * Adds units: body `{ "quantity": 10 }`. Not locked here: {@link StockService.restock} is
   * locked itself, for its callers outside HTTP.
   */
  @Post(':id/restock')
  @HttpCode(200)
  restock(
    @Param('id', ParseStockIdPipe) id: string,
    @Body('quantity', new ParseQuantityPipe(1)) quantity: number,
  ): Promise<StockLevel> {
    return this.stock.restock(id, quantity);
  }
}
