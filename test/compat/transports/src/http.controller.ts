import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Locked } from 'nestjs-redlock';
import { TryDecrementCommand } from './stock.command.js';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

/** Served by Fastify (fastify.main): the route parameter names the lock. */
@Controller('stock')
export class StockController {
  constructor(
    private readonly store: StockStore,
    private readonly service: StockService,
    private readonly commands: CommandBus,
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

  /** Not locked itself: the lock is taken by the CQRS command handler it dispatches to. */
  @Post(':id/try-decrement-via-command')
  @HttpCode(200)
  async tryDecrementViaCommand(@Param('id') id: string) {
    return this.commands.execute(new TryDecrementCommand(id));
  }
}
