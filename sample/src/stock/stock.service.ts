import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { Locked, RedlockService } from 'nestjs-redlock';
import { DEFAULT_RACE_WINDOW_MS, STOCK_MODULE_OPTIONS, STOCK_REDIS } from './stock.constants';
import type { StockModuleOptions } from './stock-module-options';
import type { StockLevel } from './stock-level';
import { OutOfStockException } from './out-of-stock.exception';
import { FENCED_WRITE } from './fenced-write';
import { StaleWriteException } from './stale-write.exception';
import { StockNotFoundException } from './stock-not-found.exception';

/**
 * Stock levels in Redis, changed by read-modify-write: read the level, do some work, write the
 * new level back. That is deliberately **not** atomic (no `DECR`, no Lua, no `WATCH`): it is how
 * most real updates look once there is work between the read and the write, and it is what a
 * distributed lock exists for. Without one, concurrent decrements read the same level and
 * overwrite each other (lost updates, overselling); under the item's lock (`stock:<id>`) they are exact.
 */
@Injectable()
export class StockService {
  private readonly raceWindowMs: number;

  constructor(
    @Inject(STOCK_REDIS) private readonly redis: Redis,
    @Inject(STOCK_MODULE_OPTIONS) options: StockModuleOptions,
    private readonly redlock: RedlockService,
  ) {
    this.raceWindowMs = options.raceWindowMs ?? DEFAULT_RACE_WINDOW_MS;
  }

  /**
   * The stock of `id`.
   * @throws StockNotFoundException (404) when it was never set
   */
  async get(id: string): Promise<StockLevel> {
    const raw = await this.redis.get(key(id));
    if (raw === null) throw new StockNotFoundException(id);
    return { id, quantity: Number(raw) };
  }

  /**
   * Sets the stock of `id` to `quantity` (a whole number ≥ 0).
   * @param fencingToken the caller's lock token: a stale one writes nothing (see {@link write})
   */
  async set(id: string, quantity: number, fencingToken?: number): Promise<StockLevel> {
    await this.write(id, quantity, fencingToken);
    return { id, quantity };
  }

  /**
   * Takes one unit of `id`: read, check, work, write. Safe only while the caller holds the lock
   * `stock:{id}`; without it, concurrent calls lose updates (which the sample's unsafe endpoint
   * shows on purpose). The level never goes below 0: a read of 0 is refused, and a write is
   * always one less than a read of at least 1.
   *
   * @param options.signal the lock's signal: once it aborts the lock is gone and another holder
   *   may be writing, so the stale write is skipped (the call rejects with the signal's reason).
   * @param options.fencingToken the lock's fencing token: the write is refused (409,
   *   {@link StaleWriteException}) when a later holder has written since — the check a signal
   *   cannot make, since a paused process runs no timers.
   * @throws StockNotFoundException (404) when the stock of `id` was never set
   * @throws OutOfStockException (409) when it is 0
   */
  async decrement(
    id: string,
    options: { signal?: AbortSignal; fencingToken?: number } = {},
  ): Promise<StockLevel> {
    const { quantity } = await this.get(id);
    if (quantity <= 0) throw new OutOfStockException(id);
    // The work between read and write (a price lookup, a payment call): the race window.
    await sleep(this.raceWindowMs);
    options.signal?.throwIfAborted();
    await this.write(id, quantity - 1, options.fencingToken);
    return { id, quantity: quantity - 1 };
  }

  /**
   * Writes a level: fenced when a token is given (the level refuses a token lower than the last
   * it saw: a later holder has written), plain otherwise (the unsafe endpoint, which has no lock).
   * @throws StaleWriteException when the token is stale
   */
  private async write(id: string, quantity: number, fencingToken?: number): Promise<void> {
    if (fencingToken === undefined) {
      await this.redis.set(key(id), quantity);
      return;
    }
    const written = await this.redis.eval(
      FENCED_WRITE,
      2,
      key(id),
      tokenKey(id),
      quantity,
      fencingToken,
    );
    if (written !== 1) throw new StaleWriteException(id);
  }

  /**
   * Adds `quantity` units to `id` (from 0 when it was never set). Locked here, on the service
   * method, rather than on a route: a supplier feed, a queue consumer or a cron job calling it
   * directly is serialized with the locked HTTP decrements of the same item, on every instance.
   * Called from a `@Locked('stock:…')` handler of the same item it would wait for its own lock:
   * the lock is not reentrant. `id` must be canonical (see `ParseStockIdPipe`): the lock and the
   * stock key are both named from it.
   */
  @Locked('stock:{args.0}', { fencing: true })
  async restock(id: string, quantity: number): Promise<StockLevel> {
    const current = Number((await this.redis.get(key(id))) ?? 0);
    await sleep(this.raceWindowMs);
    await this.write(id, current + quantity, this.redlock.currentLock()?.fencingToken);
    return { id, quantity: current + quantity };
  }
}

/**
 * The stock Redis key of an item. The lock on the same item lives elsewhere (the lock nodes,
 * under `redlock:stock:{id}`).
 */
function key(id: string): string {
  return `stock:${id}`;
}

/** Where an item's stock level keeps the last fencing token it accepted. */
function tokenKey(id: string): string {
  return `stock:${id}:token`;
}
