import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { GraphQLModule } from '@nestjs/graphql';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from 'nestjs-redlock';
import { env, LOCK_OPTIONS, lockNodes } from './env.js';
import { StockController } from './http.controller.js';
import { ReportJob } from './report.job.js';
import { TryDecrementHandler } from './stock.command.js';
import { StockRpcController } from './rpc.controller.js';
import { StockGateway } from './stock.gateway.js';
import { StockResolver } from './stock.resolver.js';
import { SkippingStockProcessor, StockProcessor, TryStockProcessor } from './stock.processor.js';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

const redlock = RedlockModule.forRoot({ nodes: lockNodes(), ...LOCK_OPTIONS });

/** HTTP on Fastify, with a CQRS command bus. */
@Module({
  imports: [redlock, CqrsModule.forRoot()],
  controllers: [StockController],
  providers: [StockStore, StockService, TryDecrementHandler],
})
export class FastifyAppModule {}

/** A microservice (NATS or RabbitMQ). */
@Module({
  imports: [redlock],
  controllers: [StockRpcController],
  providers: [StockStore, StockService],
})
export class MicroserviceAppModule {}

/** Apollo GraphQL (code first, schema in memory) on Express. */
@Module({
  imports: [
    redlock,
    GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
  ],
  providers: [StockStore, StockService, StockResolver],
})
export class GraphqlAppModule {}

/** A socket.io gateway on the Express server. */
@Module({ imports: [redlock], providers: [StockStore, StockService, StockGateway] })
export class SocketioAppModule {}

/** A scheduled job (no server): @nestjs/schedule. */
@Module({ imports: [redlock, ScheduleModule.forRoot()], providers: [StockStore, ReportJob] })
export class CronAppModule {}

/** BullMQ queues in the stock's Redis node (not one of the lock's). */
const queues = () => {
  const store = new URL(env('REDLOCK_COMPAT_STORE'));
  return [
    BullModule.forRoot({ connection: { host: store.hostname, port: Number(store.port) } }),
    BullModule.registerQueue({ name: 'stock' }, { name: 'stock-try' }, { name: 'stock-skip' }),
  ];
};

/** BullMQ consumers. */
@Module({
  imports: [redlock, ...queues()],
  providers: [StockStore, StockProcessor, TryStockProcessor],
})
export class BullmqAppModule {}

/** A consumer with onBusy 'skip': must not boot. */
@Module({ imports: [redlock, ...queues()], providers: [StockStore, SkippingStockProcessor] })
export class BullmqSkipAppModule {}
