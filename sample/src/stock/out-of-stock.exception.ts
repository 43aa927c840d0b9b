import { ConflictException } from '@nestjs/common';

/**
 * 409 Conflict for a decrement of an item whose stock is 0. The body says so in words, so a
 * client can tell it from the 409 of a busy lock ("locked by another request; retry later"),
 * which is worth retrying while this one is not.
 */
export class OutOfStockException extends ConflictException {
  constructor(id: string) {
    super({ statusCode: 409, error: 'Conflict', message: 'Out of stock', id, quantity: 0 });
  }
}
