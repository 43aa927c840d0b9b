import { setTimeout as sleep } from 'node:timers/promises';
import { RedlockService } from 'nestjs-redlock';
import type { Response } from 'supertest';
import { StockService } from '../../sample/src/stock/stock.service';
import { startStockCluster, type StockCluster } from './stock-cluster';
import { aidRuns, HOLD_TTL_MS, occupancy } from './stock-test-aids.controller';

/**
 * The sample's stock API end to end: two app instances against one real fleet (5 lock nodes,
 * 1 stock node). Every concurrent burst is spread alternately over both instances, so only the
 * distributed lock — not anything in one process — can keep it exact.
 */

let cluster: StockCluster;

beforeAll(async () => {
  cluster = await startStockCluster();
});

afterAll(async () => {
  await cluster?.close();
});

/** A supertest agent for instance `i % 2`. */
const on = (i: number) => cluster.on(i);

/** Sets the stock of `id` (through instance a). */
async function setStock(id: string, quantity: number): Promise<void> {
  await on(0).put(`/stock/${id}`).send({ quantity }).expect(200);
}

/** The stock of `id` (through instance b). */
const stockOf = (id: string) => cluster.stockOf(id);

/** `count` concurrent POSTs of `path`, alternately to each instance. */
function burst(count: number, path: string): Promise<Response[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => on(i).post(path)));
}

/** How many responses had each outcome. */
function tally(responses: Response[]) {
  const ok = responses.filter((r) => r.status >= 200 && r.status < 300).length;
  const conflict = responses.filter((r) => r.status === 409).length;
  return { ok, conflict, other: responses.length - ok - conflict };
}

/** Resolves once `condition()` holds; rejects after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await sleep(5);
  }
}

const BUSY = 'The resource is locked by another request; retry later';
const UNAVAILABLE = 'The lock service is unavailable; retry later';

describe('stock API on two instances (5 lock nodes, 1 stock node)', () => {
  beforeEach(() => {
    aidRuns.clear();
    occupancy.reset();
  });

  it('control: 100 concurrent unsafe decrements from 100 lose updates (final stock is not 0)', async () => {
    await setStock('unsafe', 100);
    const responses = await burst(100, '/stock/unsafe/decrement-unsafe');
    expect(tally(responses)).toEqual({ ok: 100, conflict: 0, other: 0 });
    const final = await stockOf('unsafe');
    // 100 successes from a stock of 100 should leave 0; the race leaves more (lost updates).
    expect(final).toBeGreaterThan(0);
  });

  it('decrement: 100 concurrent from 100 → all 200, final stock 0', async () => {
    await setStock('locked', 100);
    const responses = await burst(100, '/stock/locked/decrement');
    expect(tally(responses)).toEqual({ ok: 100, conflict: 0, other: 0 });
    expect(await stockOf('locked')).toBe(0);
    // Every success reports a distinct level: 99, 98, …, 0 — each saw the one before.
    const levels = responses.map((r) => r.body.quantity as number).sort((x, y) => x - y);
    expect(levels).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('decrement: 120 concurrent from 100 → 100 × 200, 20 × 409 "Out of stock", never negative', async () => {
    await setStock('oversell', 100);
    const responses = await burst(120, '/stock/oversell/decrement');
    expect(tally(responses)).toEqual({ ok: 100, conflict: 20, other: 0 });
    for (const res of responses.filter((r) => r.status === 409)) {
      expect(res.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'Out of stock',
        id: 'oversell',
        quantity: 0,
      });
    }
    expect(await stockOf('oversell')).toBe(0);
  });

  it('decrement-nowait: 100 concurrent from 100 → 2xx + 409 (+ 503) = 100, final stock = 100 − 2xx', async () => {
    await setStock('nowait', 100);
    const responses = await burst(100, '/stock/nowait/decrement-nowait');
    const { ok, conflict, other } = tally(responses);
    // A no-wait request makes one attempt. On a machine with both cores busy, the nodes can
    // miss the default 200 ms nodeTimeout for a burst of 100, and that attempt honestly ends
    // 503 "unavailable" (a fresh CI run under load saw 67 of 100). That is the documented
    // outcome, not a defect; the properties below hold either way.
    const unavailable = responses.filter((r) => r.status === 503);
    expect(other).toBe(unavailable.length);
    for (const res of unavailable) expect(res.body.message).toBe(UNAVAILABLE);
    expect(ok + conflict + unavailable.length).toBe(100);
    expect(ok).toBeGreaterThan(0);
    expect(ok).toBeLessThan(100); // 100 at once on one lock without waiting: not all get in
    expect(await stockOf('nowait')).toBe(100 - ok);
    for (const res of responses.filter((r) => r.status === 409)) {
      expect(res.body.message).toBe(BUSY);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('locks on different ids do not serialize each other; on one id they do', async () => {
    const hold = 400;
    const ids = ['d1', 'd2', 'd3', 'd4', 'd5', 'd6'];
    let started = performance.now();
    const different = await Promise.all(
      ids.map((id, i) => on(i).post(`/aids/stock/${id}/occupy?ms=${hold}`)),
    );
    const differentMs = performance.now() - started;
    expect(different.map((r) => r.status)).toEqual(Array(ids.length).fill(200));
    expect(occupancy.max).toBe(ids.length); // all inside at once
    expect(differentMs).toBeLessThan(ids.length * hold); // about the time of one, not six

    occupancy.reset();
    started = performance.now();
    const same = await Promise.all(
      [0, 1, 2].map((i) => on(i).post(`/aids/stock/s/occupy?ms=${hold}`)),
    );
    expect(same.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(occupancy.max).toBe(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * hold);
  });

  it('400 for an unresolvable template value, and the handler does not run', async () => {
    await setStock('body', 5);
    for (const body of [{}, { id: '' }, { id: { $ne: 1 } }, { id: ['body', 'x'] }]) {
      const res = await on(0).post('/aids/stock/decrement').send(body);
      expect(res.status).toBe(400);
      // The body names neither the template nor the placeholder (issue 25).
      expect(res.body.message).toBe('The lock resource could not be named from the request');
    }
    expect(aidRuns.get('decrementFromBody')).toBeUndefined();
    expect(await stockOf('body')).toBe(5);
    const ok = await on(1).post('/aids/stock/decrement').send({ id: 'body' });
    expect(ok.status).toBe(200);
    expect(await stockOf('body')).toBe(4);
  });

  it(`a handler running 3× the ttl keeps its lock: concurrent no-wait requests get 409 throughout`, async () => {
    await setStock('slow', 10);
    const holdMs = 3 * HOLD_TTL_MS;
    // then(): a supertest request is sent when it is first awaited or then()-ed.
    const held = on(0)
      .post(`/aids/stock/slow/hold?ms=${holdMs}`)
      .then((r) => r);
    await until(() => aidRuns.get('hold') === 1); // inside: the lock is taken
    const inside = performance.now();
    const probes: Response[] = [];
    // Probe from both instances until the holder is nearly done (past 3 leases).
    for (let i = 0; performance.now() - inside < holdMs - 150; i++) {
      probes.push(await on(i).post('/stock/slow/decrement-nowait'));
      await sleep(50);
    }
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body.aborted).toBe(false);
    expect(probes.length).toBeGreaterThanOrEqual(10);
    expect(probes.map((p) => p.status)).toEqual(Array(probes.length).fill(409));
    expect(probes.every((p) => p.body.message === BUSY)).toBe(true);
    expect(await stockOf('slow')).toBe(10);
    // Released when the handler finished: the next no-wait request gets in.
    await on(1).post('/stock/slow/decrement-nowait').expect(200);
    expect(await stockOf('slow')).toBe(9);
  });

  it("a handler's 404 stays 404, and its lock is released", async () => {
    const res = await on(0).post('/stock/ghost/decrement');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ statusCode: 404, id: 'ghost' });
    const lock = await cluster.apps[1].get(RedlockService).tryAcquire('stock:ghost');
    expect(lock).not.toBeNull();
    await lock!.release();
  });

  it('an Observable handler holds the lock until it completes', async () => {
    // 20 concurrent Observable decrements, each waiting 30 ms before its read-modify-write: if
    // the lock were released when the handler returned (not when the Observable completed),
    // they would all decrement at the same moment and lose updates.
    await setStock('observable', 20);
    const responses = await burst(20, '/aids/stock/observable/decrement-observable?after=30');
    expect(tally(responses)).toEqual({ ok: 20, conflict: 0, other: 0 });
    expect(await stockOf('observable')).toBe(0);

    // While one is pending, the lock is busy for the other instance.
    await setStock('observable', 1);
    aidRuns.clear();
    const pending = on(0)
      .post('/aids/stock/observable/decrement-observable?after=800')
      .then((r) => r);
    await until(() => aidRuns.get('decrementLater') === 1); // the handler returned its Observable
    await on(1).post('/stock/observable/decrement-nowait').expect(409);
    const done = await pending;
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ id: 'observable', quantity: 0 });
  });

  it('@Locked service method (restock) called from two instances keeps an exact count', async () => {
    await setStock('restock', 0);
    const services = cluster.apps.map((app) => app.get(StockService));
    await Promise.all(Array.from({ length: 50 }, (_, i) => services[i % 2].restock('restock', 1)));
    expect(await stockOf('restock')).toBe(50);

    // The service-level lock and the route-level lock are the same lock: restocks and locked
    // HTTP decrements of one item, interleaved on both instances, stay exact too.
    await Promise.all([
      ...Array.from({ length: 30 }, (_, i) => services[i % 2].restock('restock', 1)),
      ...Array.from({ length: 30 }, (_, i) => on(i).post('/stock/restock/decrement').expect(200)),
    ]);
    expect(await stockOf('restock')).toBe(50);
  });

  it('rejects a bad quantity (400) and an unknown item (404)', async () => {
    await on(0).put('/stock/v').send({ quantity: -1 }).expect(400);
    await on(0).put('/stock/v').send({ quantity: 1.5 }).expect(400);
    await on(0).put('/stock/v').send({ quantity: '7' }).expect(400);
    await on(1).get('/stock/never-set').expect(404);
  });
});
