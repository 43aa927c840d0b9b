import { startStockCluster, type StockCluster } from './stock-cluster';

/**
 * The stock API when lock nodes fail: two app instances, 5 real lock nodes (quorum 3) of which
 * some are killed for real (SIGKILL). A file of its own: it faults the fleet.
 */

let cluster: StockCluster;

beforeAll(async () => {
  cluster = await startStockCluster();
});

afterAll(async () => {
  await cluster?.close();
});

const on = (i: number) => cluster.on(i);
const stockOf = (id: string) => cluster.stockOf(id);

describe('stock API when lock nodes are down (5 lock nodes)', () => {
  it('2 of 5 down: the locked endpoints still work (a quorum of 3 is up)', async () => {
    await on(0).put('/stock/x').send({ quantity: 10 }).expect(200);
    await Promise.all([cluster.locks.nodes[0].kill(), cluster.locks.nodes[1].kill()]);
    await on(0).post('/stock/x/decrement').expect(200);
    await on(1).post('/stock/x/decrement-nowait').expect(200);
    expect(await stockOf('x')).toBe(8);
  });

  it('3 of 5 down: 503 from both locked endpoints, and the handler does not run', async () => {
    await cluster.locks.nodes[2].kill();
    // The waiting endpoint keeps trying for its whole wait budget (the module's 10 s: nodes may
    // come back meanwhile), then answers 503; the no-wait one answers at once.
    const waiting = await on(0).post('/stock/x/decrement');
    expect(waiting.status).toBe(503);
    expect(waiting.body.message).toBe('The lock service is unavailable; retry later');
    const noWait = await on(1).post('/stock/x/decrement-nowait');
    expect(noWait.status).toBe(503);
    // The stock is elsewhere and still readable; nothing was decremented without the lock.
    expect(await stockOf('x')).toBe(8);
    // The unlocked endpoint does not care: that is the point of the control.
    await on(0).post('/stock/x/decrement-unsafe').expect(200);
    expect(await stockOf('x')).toBe(7);
  });

  it('nodes back: the locked endpoints work again', async () => {
    await Promise.all([0, 1, 2].map((i) => cluster.locks.nodes[i].restart()));
    // The apps' clients reconnect in the background. The restarted nodes lost their data, so
    // they vote again only once every lease recorded on their peers has ended (architecture.md §5.7): at
    // most two of the apps' 10 s ttls after the last attempt of the previous test.
    const deadline = performance.now() + 30_000;
    let status = 0;
    while (performance.now() < deadline) {
      status = (await on(0).post('/stock/x/decrement-nowait')).status;
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    await on(1).post('/stock/x/decrement').expect(200);
    expect(await stockOf('x')).toBe(5);
  });
});
