import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { StockService } from './stock.service.js';

@Controller('stock')
export class StockController {
  constructor(private readonly stock: StockService) {}

  @Post(':id/decrement')
  @Locked('stock:{id}') // the id the handler receives: /stock/042 and /stock/42 share stock:42
  decrement(@Param('id', ParseIntPipe) id: number) {
    return this.stock.decrement(id); // busy → waits (10 s by default), then 409; no quorum → 503
  }

  @Post(':id/restock')
  restock(@Param('id', ParseIntPipe) id: number, @Body('units', ParseIntPipe) units: number) {
    return this.stock.restock(id, units); // locked inside the service
  }
}
