import { Redlock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, timed } from './helpers';

describe('multi-resource locks and cancellation (5 real nodes)', () => {
  let fleet: RedisFleet;
  let one: Redlock;
  let two: Redlock;

  beforeAll(async () => {
    fleet = await startFleet(5);
    one = new Redlock(fleet.urls(), { retryDelay: 5, retryJitter: 10, wait: 30_000 });
    two = new Redlock(fleet.urls(), { retryDelay: 5, retryJitter: 10, wait: 30_000 });
  });

  afterAll(async () => {
    await one?.close();
    await two?.close();
    await fleet?.stop();
  });

  it('[a, b] and [b, a] contending from two clients all finish, one at a time', async () => {
    let inside = 0;
    let maxInside = 0;
    let done = 0;
    const work = async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      await delay(1);
      inside--;
      done++;
    };
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 ? one.using(['a', 'b'], work) : two.using(['b', 'a'], work),
      ),
    );
    expect(done).toBe(40);
    expect(maxInside).toBe(1);
  });

  it('is all-or-nothing: one held resource blocks the lock and nothing else is written', async () => {
    const held = await one.acquire('y');
    expect(await two.tryAcquire(['x', 'y', 'x'])).toBeNull();
    for (const node of fleet.nodes) expect(await node.command('EXISTS', 'redlock:x')).toBe(0);
    await held.release();
    const both = await two.acquire(['y', 'x', 'x']);
    expect(both.resources).toEqual(['x', 'y']);
    expect(await one.tryAcquire('x')).toBeNull();
    expect(await one.tryAcquire('y')).toBeNull();
    await both.release();
  });

  it('a waiting acquire stops promptly when its signal aborts', async () => {
    const held = await one.acquire('busy');
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('client went away')), 150);
    const { ms, result } = await timed(() =>
      two
        .acquire('busy', { wait: 20_000, retryDelay: 1_000, signal: controller.signal })
        .catch((e: unknown) => e),
    );
    expect(result).toEqual(new Error('client went away'));
    expect(ms).toBeLessThan(400);
    await held.release();
    // and it left nothing behind
    const free = await one.tryAcquire('busy');
    expect(free).not.toBeNull();
    await free!.release();
  });

  it('an already aborted signal fails before any attempt', async () => {
    await expect(one.acquire('z', { signal: AbortSignal.abort('nope') })).rejects.toBe('nope');
  });
});
