import { ConflictException, Injectable } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { RedlockService } from 'nestjs-redlock';

@Injectable()
export class StockService {
  // Your database. A Map keeps the example self-contained; with several app instances the
  // stock would live in a store they share, which is what the lock protects.
  private readonly stock = new Map<number, number>();

  constructor(private readonly redlock: RedlockService) {}

  // A read-modify-write: safe only while the caller holds the lock on stock:<id>.
  async decrement(id: number): Promise<{ id: number; quantity: number }> {
    const quantity = this.stock.get(id) ?? 100;
    if (quantity === 0) throw new ConflictException(`item ${id} is out of stock`);
    await delay(5); // the time a real write takes, during which another request could interleave
    this.stock.set(id, quantity - 1);
    return { id, quantity: quantity - 1 };
  }

  // Outside a request (a job, a consumer), take the same lock with RedlockService.
  restock(id: number, units: number): Promise<{ id: number; quantity: number }> {
    return this.redlock.using(`stock:${id}`, async () => {
      const quantity = (this.stock.get(id) ?? 100) + units;
      this.stock.set(id, quantity);
      return { id, quantity };
    });
  }
}
