import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Locked } from 'nestjs-redlock';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

/** A microservice handler (NATS or RabbitMQ): the message payload names the lock. */
@Controller()
export class StockRpcController {
  constructor(
    private readonly store: StockStore,
    private readonly service: StockService,
  ) {}

  @MessagePattern('stock.decrement')
  @Locked('stock:{data.id}', { wait: 10_000 })
  async decrement(@Payload() data: { id: string }) {
    return this.store.decrement(data.id);
  }

  @MessagePattern('stock.try-decrement')
  @Locked('stock:{data.id}', { wait: 0 })
  async tryDecrement(@Payload() data: { id: string }) {
    return this.store.decrement(data.id);
  }

  /** Not locked itself: the lock is taken by the provider method it calls. */
  @MessagePattern('stock.try-decrement-via-service')
  async tryDecrementViaService(@Payload() data: { id: string }) {
    return this.service.tryDecrement(data.id);
  }
}
