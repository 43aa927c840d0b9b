// One app instance, as it would be deployed:
// `COMPAT_TRANSPORT=fastify|nats|rabbitmq|graphql|socketio|cron|bullmq node dist/src/main.js`. The specs start two of them (two processes) per transport; each prints
// `READY <instance>` once it serves.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { brokerOptions, env } from './env.js';
import {
  BullmqAppModule,
  BullmqSkipAppModule,
  CronAppModule,
  FastifyAppModule,
  GraphqlAppModule,
  MicroserviceAppModule,
  SocketioAppModule,
} from './app.modules.js';

async function main(): Promise<void> {
  const transport = env('COMPAT_TRANSPORT');
  const port = Number(process.env.COMPAT_PORT ?? 0);
  let close: () => Promise<void>;
  switch (transport) {
    case 'fastify': {
      const app = await NestFactory.create<NestFastifyApplication>(
        FastifyAppModule,
        new FastifyAdapter(),
      );
      await app.listen(port, '127.0.0.1');
      close = () => app.close();
      break;
    }
    case 'nats':
    case 'rabbitmq': {
      const app = await NestFactory.createMicroservice<MicroserviceOptions>(
        MicroserviceAppModule,
        brokerOptions(transport),
      );
      await app.listen();
      close = () => app.close();
      break;
    }
    case 'graphql': {
      const app = await NestFactory.create(GraphqlAppModule);
      await app.listen(port, '127.0.0.1');
      close = () => app.close();
      break;
    }
    case 'socketio': {
      const app = await NestFactory.create(SocketioAppModule);
      await app.listen(port, '127.0.0.1');
      close = () => app.close();
      break;
    }
    case 'cron':
    case 'bullmq':
    case 'bullmq-skip': {
      const modules = {
        cron: CronAppModule,
        bullmq: BullmqAppModule,
        'bullmq-skip': BullmqSkipAppModule,
      };
      const app = await NestFactory.createApplicationContext(modules[transport]);
      close = () => app.close();
      break;
    }
    default:
      throw new Error(`unknown COMPAT_TRANSPORT ${transport}`);
  }
  process.once('SIGTERM', () => {
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  console.log(`READY ${env('COMPAT_INSTANCE')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
