import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { StockStore } from './stock.store.js';

/**
 * A `@Locked` provider method reached from a plain route (as a CQRS command handler or a domain
 * service would be): architecture.md §5.12 wants the same answers as a locked handler.
 */
@Injectable()
export class StockService {
  constructor(private readonly store: StockStore) {}

  @Locked('stock:{args.0}', { wait: 0 })
  async tryDecrement(id: string) {
    return this.store.decrement(id);
  }
}
