// ESM cells only: the app imports the ESM build while a CommonJS dependency would require() the
// CommonJS build of the same package. Both copies must behave as one: @CurrentLock() from the
// CommonJS copy sees the lock @Locked (ESM copy) took, and errors match instanceof across copies.
import { Controller, Module, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createRequire } from 'node:module';
import request from 'supertest';
import * as esm from 'nestjs-redlock';
import type { Lock } from 'nestjs-redlock';
import { compatNodes } from '../src/app.module.js';

const cjs = createRequire(import.meta.url)('nestjs-redlock') as typeof esm;

@Controller('dual')
class DualController {
  @Post(':id')
  @esm.Locked('dual:{id}')
  async run(@cjs.CurrentLock() lock: Lock) {
    return { resources: lock.resources };
  }
}

@Module({
  imports: [esm.RedlockModule.forRoot({ nodes: compatNodes(), wait: 0, keyPrefix: 'dual:' })],
  controllers: [DualController],
})
class DualModule {}

describe('the ESM and CommonJS builds in one app', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [DualModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('are two copies (the hazard is real here)', () => {
    expect(cjs.RedlockModule).not.toBe(esm.RedlockModule);
  });

  it('@CurrentLock() of the CommonJS copy injects the lock @Locked of the ESM copy took', async () => {
    const res = await request(app.getHttpServer()).post('/dual/x').expect(201);
    expect(res.body).toEqual({ resources: ['dual:x'] });
  });

  it('errors of one copy are instanceof the classes of the other', async () => {
    const service = app.get(esm.RedlockService);
    const lock = await service.acquire('y');
    try {
      const error = await service.acquire('y', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(cjs.LockNotAcquiredError);
      expect(error).toBeInstanceOf(cjs.RedlockError);
      expect(error).not.toBeInstanceOf(cjs.LockLostError);
    } finally {
      await lock.release();
    }
  });
});
