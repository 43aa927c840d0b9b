import { Module } from '@nestjs/common';
import { RedlockModule } from 'nestjs-redlock';
import { StockController } from './stock.controller.js';
import { StockService } from './stock.service.js';

@Module({
  imports: [
    RedlockModule.forRoot({
      // Three independent Redis masters (docs/redis-nodes.compose.yml starts them locally).
      nodes: (
        process.env.LOCK_NODES ??
        'redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003'
      ).split(','),
    }),
  ],
  controllers: [StockController],
  providers: [StockService],
})
export class AppModule {}
