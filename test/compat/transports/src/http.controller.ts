import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { StockStore } from './stock.store.js';

/** Served by Fastify (fastify.main): the route parameter names the lock. */
@Controller('stock')
export class StockController {
  constructor(private readonly store: StockStore) {}

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
}
