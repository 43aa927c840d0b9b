import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from 'nestjs-redlock';
import { HealthModule } from './health/health.module';
import { LocksModule } from './locks/locks.module';
import { StockModule } from './stock/stock.module';

/** What {@link AppModule} is built from: where the lock nodes and the stock data live. */
export interface AppOptions {
  /** The independent Redis masters of the lock (an odd number, 3 or more). */
  lockNodes: string[];
  /** The Redis of the stock levels: another instance (or database) than the lock nodes. */
  stockRedisUrl: string;
  /** Pause between a decrement's read and its write, ms. @default 5 */
  raceWindowMs?: number;
  /** Run the scheduled stock report (every second, on one instance per tick). @default false */
  stockReport?: boolean;
  /**
   * The token `GET /locks/:resource` requires in `x-admin-token`; unset: that route refuses
   * every request (403).
   */
  adminToken?: string;
}

/**
 * The sample app: the stock API under Redlock. A dynamic module because its configuration is
 * only known at start-up (environment variables, or the embedded local Redis nodes), and so
 * that tests can build it against their own fleet.
 *
 * @example
 * NestFactory.create(AppModule.register({ lockNodes, stockRedisUrl }))
 */
@Module({})
export class AppModule {
  static register(options: AppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // Global: @Locked works in every module. The library's defaults otherwise (10 s lease,
        // auto-extended while a handler runs; waiting requests give up after 10 s with a 409).
        RedlockModule.forRoot({ nodes: options.lockNodes }),
        ...(options.stockReport === true ? [ScheduleModule.forRoot()] : []),
        StockModule.register({
          redisUrl: options.stockRedisUrl,
          raceWindowMs: options.raceWindowMs,
          report: options.stockReport,
        }),
        // GET /health (@nestjs/terminus and nestjs-redlock/terminus)
        HealthModule,
        // GET /locks/:resource, read-only, behind the admin token
        LocksModule.register({ adminToken: options.adminToken }),
      ],
      // For modules built on top of the app (the e2e tests add test-only routes this way).
      exports: [StockModule],
    };
  }
}
