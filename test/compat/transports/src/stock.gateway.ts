import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { Locked } from 'nestjs-redlock';
import { StockStore } from './stock.store.js';

/** A socket.io gateway (socketio.main): the message payload names the lock; replies are acks. */
@WebSocketGateway()
export class StockGateway {
  constructor(private readonly store: StockStore) {}

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
}
