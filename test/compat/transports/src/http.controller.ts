import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

/** Served by Fastify (fastify.main): the route parameter names the lock. */
@Controller('stock')
export class StockController {
  constructor(
    private readonly store: StockStore,
    private readonly service: StockService,
  ) {}

  /** Queues for the lock (up to 10 s): the exclusion run. */
  @Post(':id/decrement')
  @HttpCode(200)
  @Locked('stock:{id}', { wait: 10_000 })
  async decrement(@Param('id') id: string) {
    return this.store.decrement(id);
  }

  /** One attempt: the busy and unavailable answers. */
  @Post(':id/try-decrement')
  @HttpCode(200)
  @Locked('stock:{id}', { wait: 0 })
  async tryDecrement(@Param('id') id: string) {
    return this.store.decrement(id);
  }

  /** Not locked itself: the lock is taken by the provider method it calls. */
  @Post(':id/try-decrement-via-service')
  @HttpCode(200)
  async tryDecrementViaService(@Param('id') id: string) {
    return this.service.tryDecrement(id);
  }
}
