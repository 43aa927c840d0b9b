import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { RedisFleet } from '../support/fleet';
import { AppModule } from '../../sample/src/app.module';
import { LocalRedis } from '../../sample/src/local-redis';
import { StockTestAidsController } from './stock-test-aids.controller';

/**
 * The set-up the stock e2e tests share: a real fleet of 5 lock nodes and one more Redis node
 * for the stock data (the sample's own local set-up), and two instances of the sample app with
 * the test-only routes, each on its own port. The instances live in one process but share
 * nothing except the Redis nodes: each has its own module graph, RedlockService and
 * connections, as two deployed instances would.
 */
export interface StockCluster {
  /** The 5 lock nodes, to fault. */
  readonly locks: RedisFleet;
  /** The two instances. */
  readonly apps: readonly [INestApplication, INestApplication];
  /** Their base URLs, `http://127.0.0.1:<port>`, in the order of `apps`. */
  readonly urls: readonly [string, string];
  /** A supertest agent for instance `i % 2`: bursts alternate over both instances. */
  on(i: number): ReturnType<typeof request>;
  /** The stock of `id`, read through instance b. */
  stockOf(id: string): Promise<number>;
  /** Closes both apps, then stops the nodes. */
  close(): Promise<void>;
}

async function startInstance(lockNodes: string[], stockRedisUrl: string) {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register({ lockNodes, stockRedisUrl })],
    controllers: [StockTestAidsController],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

/** Starts the nodes and the two instances; on a failure, stops whatever started. */
export async function startStockCluster(): Promise<StockCluster> {
  const local = await LocalRedis.start({ lockNodes: true, stock: true });
  const apps: INestApplication[] = [];
  const close = async () => {
    await Promise.all(apps.map((app) => app.close()));
    await local.stop();
  };
  try {
    for (let i = 0; i < 2; i++) {
      apps.push(await startInstance(local.lockNodes!, local.stockRedisUrl!));
    }
    const [a, b] = apps;
    const urls: [string, string] = [await a.getUrl(), await b.getUrl()];
    const on = (i: number) => request(urls[i % 2]);
    return {
      locks: local.lockFleet!,
      apps: [a, b],
      urls,
      on,
      stockOf: async (id) => (await on(1).get(`/stock/${id}`).expect(200)).body.quantity as number,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
