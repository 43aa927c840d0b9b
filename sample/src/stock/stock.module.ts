import { Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { STOCK_MODULE_OPTIONS, STOCK_REDIS } from './stock.constants';
import { stockRedisProvider } from './stock-redis.provider';
import type { StockModuleOptions } from './stock-module-options';
import { StockController } from './stock.controller';
import { StockService } from './stock.service';
import { StockReportJob } from './stock-report.job';

/**
 * The stock API and its Redis (the data, apart from the lock nodes). Needs `RedlockModule`
 * (global) for its `@Locked` routes and service method.
 *
 * @example
 * StockModule.register({ redisUrl: 'redis://stock:6379' })
 */
@Module({})
export class StockModule implements OnApplicationShutdown {
  constructor(@Inject(STOCK_REDIS) private readonly redis: Redis) {}

  /** The module with its Redis client, created from `options.redisUrl`. */
  static register(options: StockModuleOptions): DynamicModule {
    return {
      module: StockModule,
      controllers: [StockController],
      providers: [
        { provide: STOCK_MODULE_OPTIONS, useValue: options },
        stockRedisProvider(options.redisUrl),
        StockService,
        ...(options.report === true ? [StockReportJob] : []),
      ],
      exports: [StockService],
    };
  }

  /** The module owns the client (a factory-made value gets no lifecycle hooks of its own). */
  async onApplicationShutdown(): Promise<void> {
    // QUIT only over a live connection: queued for a server that is down, it would wait for a
    // reconnection that may never come, and hold up the shutdown.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    this.redis.disconnect();
  }
}
