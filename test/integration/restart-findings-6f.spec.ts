import { RedlockConfigError, type Lock, type Redlock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import {
  attempt,
  collectWarnings,
  managers,
  nodeName,
  occupy,
  secondHolders,
  vacate,
} from './restart-findings';

/**
 * Issue 23, finding 6 (f): one client with `ttl: 1e12` quarantined nodes for every other client
 * for 2·10¹² ms; a timer overflow (`TimeoutOverflowWarning`) then let them vote in the same
 * second. The longest lease is one bound every client of a fleet shares and enforces (`maxTtl`):
 * a ttl above it — in the constructor, per call, in `extend()` — is refused with a
 * RedlockConfigError naming the option and the value, and no timer can overflow.
 */
describe('finding 6f: a ttl of 10^12 ms (3 real nodes, no persistence)', () => {
  let fleet: RedisFleet;
  const created = managers();
  const HUGE = 1e12;
  const OPTIONS = { ttl: 3_000, maxTtl: 3_000 };
  const collected = collectWarnings();
  const warnings = collected.warnings;
  beforeAll(async () => {
    fleet = await startFleet(3);
  });
  afterEach(async () => {
    for (const node of fleet.nodes) if (!node.running()) await node.restart();
    await fleet.flushAll();
  });
  afterAll(async () => {
    collected.stop();
    await fleet?.stop();
  });

  /** What `work` threw, or 'no error' (a lock it returned is released). */
  const refusal = async (work: () => Promise<unknown>): Promise<unknown> => {
    try {
      const result = await work();
      if (result !== null && typeof result === 'object' && 'release' in result) {
        await (result as Lock).release();
      }
      return 'no error';
    } catch (error) {
      return error;
    }
  };
  const describeRefusal = (error: unknown) =>
    error instanceof RedlockConfigError
      ? `RedlockConfigError(${error.option}, ${String(error.value)}): ${error.message}`
      : String(error);
  const namesTheBound = (error: unknown) =>
    error instanceof RedlockConfigError && /ttl/i.test(error.option) && error.value === HUGE;

  it('ttl 1e12 is refused in the constructor, per call and in extend(), naming ttl/maxTtl; no TimeoutOverflowWarning', async () => {
    warnings.length = 0;
    const inConstructor = await refusal(async () =>
      created.create(fleet.urls(), { ...OPTIONS, ttl: HUGE }),
    );
    const redlock = created.create(fleet.urls(), OPTIONS).redlock;
    const perCall = await refusal(() => redlock.acquire('r', { ttl: HUGE, wait: 0 }));
    const lock = await redlock.acquire('r', { wait: 3_000 });
    const inExtend = await refusal(() => lock.extend(HUGE));
    await lock.release();
    // Timers that overflow fire within a millisecond and warn on the next turn.
    await delay(100);
    const shown = { inConstructor, perCall, inExtend };
    console.log(
      `finding 6f: ${Object.entries(shown)
        .map(([where, error]) => `${where}: ${describeRefusal(error)}`)
        .join('; ')}; warnings: ${JSON.stringify(warnings)}`,
    );
    expect(
      Object.entries(shown)
        .filter(([, error]) => !namesTheBound(error))
        .map(([where, error]) => `${where}: ${describeRefusal(error)}`),
    ).toEqual([]);
    expect(warnings.filter((w) => w.startsWith('TimeoutOverflowWarning'))).toEqual([]);
  });

  it("a client asking for ttl 1e12 leaves no overflowing quarantine: a restarted node does not vote while r's lease is valid, and votes again within maxTtl × 1.01 + 2 s", async () => {
    warnings.length = 0;
    const [, b, c] = fleet.nodes;
    const urls = fleet.urls();
    // r's lease on exactly {a, c}, by a client of the fleet's usual ttl.
    const holder = created.create(urls, OPTIONS).redlock;
    await holder.ready();
    await occupy(b, 'r');
    const held = await holder.acquire('r', { wait: 3_000 });
    await vacate(b, 'r');
    // Another client asks for a lease of 10^12 ms, however it is allowed to ask.
    let huge: Redlock | undefined;
    try {
      huge = created.create(urls, { ...OPTIONS, ttl: HUGE }).redlock;
    } catch (error) {
      if (!(error instanceof RedlockConfigError)) throw error;
      huge = created.create(urls, OPTIONS).redlock;
    }
    const asked = await refusal(() => huge.acquire('other', { ttl: HUGE, wait: 0 }));
    // c restarts empty: it lost r's key.
    await c.restart();
    const restartedAt = performance.now();
    const next = created.create(urls, OPTIONS).redlock;
    let rejoinedAt: number | undefined;
    next.on('nodeRejoined', (event) => {
      if (event.node === nodeName(c)) rejoinedAt ??= performance.now();
    });
    await next.ready();
    const overlaps = await secondHolders(held, () => next.tryAcquire('r'), { forMs: 4_000 });
    // After r's lease: a lock on {a, c} (b paused) shows c votes again, within the bound.
    const bound = OPTIONS.maxTtl * 1.01 + 2_000;
    await b.pause();
    let votedAfter: number | undefined;
    try {
      while (votedAfter === undefined && performance.now() - restartedAt < bound + 3_000) {
        const outcome = await attempt(() => next.acquire('s', { wait: 0 }));
        if (typeof outcome !== 'string') {
          votedAfter = performance.now() - restartedAt;
          await outcome.release();
        } else {
          await delay(100);
        }
      }
    } finally {
      await b.resume();
    }
    console.log(
      `finding 6f: the 1e12 request: ${describeRefusal(asked)}; c voted again ${votedAfter === undefined ? 'never' : `${Math.round(votedAfter)} ms`} after its restart (rejoined event ${rejoinedAt === undefined ? 'none' : `${Math.round(rejoinedAt - restartedAt)} ms`}); warnings: ${JSON.stringify(warnings)}`,
    );
    expect(overlaps).toEqual([]);
    expect(warnings.filter((w) => w.startsWith('TimeoutOverflowWarning'))).toEqual([]);
    expect(votedAfter).toBeDefined();
    expect(votedAfter).toBeLessThanOrEqual(bound);
  }, 40_000);
});
