import { UseFilters } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { Locked, LockedErrorFilter } from 'nestjs-redlock';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

/** A socket.io gateway (socketio.main): the message payload names the lock; replies are acks. */
@WebSocketGateway()
export class StockGateway {
  constructor(
    private readonly store: StockStore,
    private readonly service: StockService,
  ) {}

  @SubscribeMessage('decrement')
  @Locked('stock:{data.id}', { wait: 10_000 })
  async decrement(@MessageBody() data: { id: string }) {
    return this.store.decrement(data.id);
  }

  @SubscribeMessage('try-decrement')
  @Locked('stock:{data.id}', { wait: 0 })
  async tryDecrement(@MessageBody() data: { id: string }) {
    return this.store.decrement(data.id);
  }

  /**
   * Not locked itself: the lock is taken by the provider method it calls. Nest applies no global
   * filter to gateways, so the library's filter is bound here, as its docs say.
   */
  @SubscribeMessage('try-decrement-via-service')
  @UseFilters(new LockedErrorFilter())
  async tryDecrementViaService(@MessageBody() data: { id: string }) {
    return this.service.tryDecrement(data.id);
  }
}
