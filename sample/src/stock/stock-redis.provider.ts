import { Logger, type FactoryProvider } from '@nestjs/common';
import Redis from 'ioredis';
import { STOCK_REDIS } from './stock.constants';

/**
 * The ioredis client of the stock data, from `redisUrl`. One retry per command: a request fails
 * (500) rather than hangs while the stock Redis is down; the client reconnects in the
 * background. An outage is logged once when it starts and once when it ends — ioredis emits an
 * error for every reconnection attempt, and without a listener prints each as "Unhandled error
 * event".
 */
export function stockRedisProvider(redisUrl: string): FactoryProvider<Redis> {
  return {
    provide: STOCK_REDIS,
    useFactory: () => {
      const logger = new Logger('StockRedis');
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      let down = false;
      redis.on('error', (error: Error) => {
        if (!down) logger.warn(`The stock Redis is unreachable: ${error.message}`);
        down = true;
      });
      redis.on('ready', () => {
        if (down) logger.log('The stock Redis is reachable again');
        down = false;
      });
      return redis;
    },
  };
}
