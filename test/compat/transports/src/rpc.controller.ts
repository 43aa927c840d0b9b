import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Locked } from 'nestjs-redlock';
import { StockStore } from './stock.store.js';

/** A microservice handler (NATS or RabbitMQ): the message payload names the lock. */
@Controller()
export class StockRpcController {
  constructor(private readonly store: StockStore) {}

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
}
