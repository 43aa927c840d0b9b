import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { RedisFleet } from '../support/fleet';
import { AppModule } from '../../sample/src/app.module';
import { LocalRedis } from '../../sample/src/local-redis';

/** The admin token the instances of {@link startSampleInstance} require on `/locks`. */
export const TEST_ADMIN_TOKEN = 'e2e-admin-token';

/**
 * One instance of the sample app (with `GET /health` and `GET /locks/:resource`, admin token
 * {@link TEST_ADMIN_TOKEN}) against its own real fleet: 5 lock nodes and a stock node.
 */
export interface SampleInstance {
  /** The 5 lock nodes, to fault. */
  readonly locks: RedisFleet;
  readonly app: INestApplication;
  /** A supertest agent for the instance. */
  http(): ReturnType<typeof request>;
  /** Closes the app, then stops the nodes. */
  close(): Promise<void>;
}

/** Starts the nodes and the instance; on a failure, stops whatever started. */
export async function startSampleInstance(): Promise<SampleInstance> {
  const local = await LocalRedis.start({ lockNodes: true, stock: true });
  let app: INestApplication | undefined;
  const close = async () => {
    await app?.close();
    await local.stop();
  };
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({
          lockNodes: local.lockNodes!,
          stockRedisUrl: local.stockRedisUrl!,
          adminToken: TEST_ADMIN_TOKEN,
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const url = await app.getUrl();
    return { locks: local.lockFleet!, app, http: () => request(url), close };
  } catch (error) {
    await close();
    throw error;
  }
}
