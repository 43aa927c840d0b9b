import { NotFoundException } from '@nestjs/common';

/** 404 Not Found for an item whose stock was never set (`PUT /stock/:id` first). */
export class StockNotFoundException extends NotFoundException {
  constructor(id: string) {
    super({
      statusCode: 404,
      error: 'Not Found',
      message: 'Unknown item: set its stock first',
      id,
    });
  }
}
