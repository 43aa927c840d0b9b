// The e2e every compat cell runs (Nest 11 CommonJS + jest, Nest 12 ESM + vitest; ioredis 5 and
// 6), against the *packed* package and real redis-server processes started by
// test/compat/run.mjs. Globals (describe/it/expect) come from jest, or vitest with globals: true.
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockNotAcquiredError, RedlockError, RedlockService } from 'nestjs-redlock';
import { AppModule } from '../src/app.module.js';
import { Ledger } from '../src/ledger.service.js';

describe('nestjs-redlock in this app', () => {
  let app: INestApplication;
  let redlock: RedlockService;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    redlock = app.get(RedlockService);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('@Locked takes the lock and @CurrentLock injects it', async () => {
    const res = await request(app.getHttpServer()).post('/jobs/a').expect(201);
    expect(res.body).toEqual({ resources: ['job:a'], remaining: true });
  });

  it('a busy @Locked route answers 409 with Retry-After, and runs again once released', async () => {
    const held = await redlock.acquire('job:b');
    try {
      const res = await request(app.getHttpServer()).post('/jobs/b').expect(409);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      // The same body on Nest 11 and Nest 12 (issue 25): spelt out, naming no resource.
      expect(res.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'The resource is locked by another request; retry later',
      });
      expect(app.get(Ledger).count('b')).toBe(0);
    } finally {
      await held.release();
    }
    await request(app.getHttpServer()).post('/jobs/b').expect(201);
    expect(app.get(Ledger).count('b')).toBe(1);
  });

  it('RedlockService: using() serialises a read-modify-write, tryAcquire sees it held', async () => {
    const ledger = app.get(Ledger);
    await Promise.all(Array.from({ length: 20 }, () => ledger.recordLocked('c')));
    expect(ledger.count('c')).toBe(20);

    const lock = await redlock.acquire('d');
    try {
      expect(await redlock.tryAcquire('d')).toBeNull();
      const error = await redlock.acquire('d', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error).toBeInstanceOf(RedlockError);
      expect((error as LockNotAcquiredError).reason).toBe('held');
    } finally {
      await lock.release();
    }
  });

  // Last: it stops two of the three nodes (SIGSTOP: hung, connections open) and resumes them.
  it('a quorum of hung nodes → 503 Service Unavailable', async () => {
    const pids = (process.env.REDLOCK_COMPAT_PIDS ?? '').split(',').map(Number).filter(Boolean);
    expect(pids.length).toBe(3);
    const stopped = pids.slice(0, 2);
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    try {
      const res = await request(app.getHttpServer()).post('/jobs/e').expect(503);
      expect(res.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The lock service is unavailable; retry later',
      });
      expect(app.get(Ledger).count('e')).toBe(0);
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
    }
  });
});
