import { metrics, trace, SpanStatusCode } from '@opentelemetry/api';
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LockLostError, LockNotAcquiredError, type Redlock, type RedlockOptions } from '../../lib';
import { TelemetryCapture } from '../support/telemetry-capture';
import { eventually, sharedFleet } from './helpers';

/** Issue 11 item 2: spans and metrics through @opentelemetry/api, against 3 real nodes. */
describe('OpenTelemetry (3 real nodes)', () => {
  const shared = sharedFleet(3);
  let capture: TelemetryCapture;
  let spans: InMemorySpanExporter;

  // Fresh global providers per test: the meter is bound when a lock manager starts.
  beforeEach(() => {
    capture = new TelemetryCapture();
    spans = capture.spans;
  });
  afterAll(() => TelemetryCapture.stop());

  /** A lock manager over the fleet, connected. Its first acquisition is traced too. */
  async function manager(options: RedlockOptions = {}): Promise<Redlock> {
    const redlock = shared.manager(options);
    await redlock.ready();
    return redlock;
  }

  /** The data points of metric `name`, as collected now. */
  const points = (name: string): Promise<DataPoint<unknown>[]> => capture.points(name);

  /** The sum of counter `name`'s points whose attributes include `attributes`. */
  async function count(name: string, attributes: Record<string, unknown> = {}): Promise<number> {
    return (await points(name))
      .filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
      .reduce((sum, p) => sum + (p.value as number), 0);
  }

  const finished = (name: string): ReadableSpan[] => capture.finished(name);

  /** Everything a span says: attributes, status, events. */
  const said = (list: ReadableSpan[]): string =>
    JSON.stringify(list.map((s) => [s.attributes, s.status, s.events]));

  it('success: acquire, extend and release spans; duration, attempts, outcome and held-locks metrics', async () => {
    const redlock = await manager();
    const lock = await redlock.acquire('order:secret-42');
    expect(await points('redlock.locks.held')).toMatchObject([{ value: 1 }]);
    await lock.extend();
    await lock.release();

    const [acquire] = finished('redlock.acquire');
    expect(acquire.attributes).toMatchObject({
      'redlock.resource.count': 1,
      'redlock.nodes.total': 3,
      'redlock.nodes.quorum': 2,
      'redlock.acquire.attempts': 1,
      'redlock.outcome': 'acquired',
      'redlock.nodes.error': 0,
    });
    // Granted at quorum: the third node may not have been waited for.
    const granted = acquire.attributes['redlock.nodes.acquired'] as number;
    expect(granted).toBeGreaterThanOrEqual(2);
    expect(granted + (acquire.attributes['redlock.nodes.pending'] as number)).toBe(3);
    expect(acquire.attributes['redlock.nodes.outcomes']).toHaveLength(3);
    expect(acquire.attributes).not.toHaveProperty(['redlock.reason']);
    expect(acquire.status.code).toBe(SpanStatusCode.UNSET);
    const [extend] = finished('redlock.extend');
    expect(extend.attributes).toMatchObject({
      'redlock.outcome': 'extended',
      'redlock.lock.ttl_ms': 10_000,
    });
    const [release] = finished('redlock.release');
    expect(release.attributes['redlock.lock.held_ms']).toEqual(expect.any(Number));
    // No resource name, no owner value, anywhere.
    const everything = said(spans.getFinishedSpans());
    expect(everything).not.toContain('secret-42');
    expect(everything).not.toContain(lock.value);

    const duration = await points('redlock.acquire.duration');
    const acquired = duration.find((p) => p.attributes['redlock.outcome'] === 'acquired')!;
    // In seconds: well under one here.
    expect((acquired.value as Histogram).count).toBe(1);
    expect((acquired.value as Histogram).sum).toBeLessThan(1);
    const attempts = (await points('redlock.acquire.attempts'))[0].value as Histogram;
    expect(attempts).toMatchObject({ count: 1, sum: 1 });
    expect(await count('redlock.acquire.outcomes', { 'redlock.outcome': 'acquired' })).toBe(1);
    expect(await points('redlock.locks.held')).toMatchObject([{ value: 0 }]);
    expect(JSON.stringify(await capture.reader.collect())).not.toContain('secret-42');
  });

  it('held: a failed acquisition says why, per node, without an error status', async () => {
    const redlock = await manager();
    const rival = shared.manager({ telemetry: false });
    const blocker = await rival.acquire('busy-resource');
    expect(await redlock.tryAcquire('busy-resource')).toBeNull();
    await expect(
      redlock.acquire('busy-resource', { wait: 120, retryDelay: 20 }),
    ).rejects.toBeInstanceOf(LockNotAcquiredError);
    await blocker.release();

    const [tried, waited] = finished('redlock.acquire');
    expect(tried.attributes).toMatchObject({
      'redlock.outcome': 'failed',
      'redlock.reason': 'held',
      'redlock.acquire.attempts': 1,
      'redlock.nodes.acquired': 0,
      'redlock.nodes.error': 0,
    });
    // Decided at quorum: a third node may not have been waited for.
    const held = tried.attributes['redlock.nodes.held'] as number;
    expect(held).toBeGreaterThanOrEqual(2);
    expect(held + (tried.attributes['redlock.nodes.pending'] as number)).toBe(3);
    expect(tried.attributes['redlock.nodes.outcomes']).toHaveLength(3);
    expect(tried.status.code).toBe(SpanStatusCode.UNSET);
    expect(waited.attributes['redlock.acquire.attempts']).toBeGreaterThan(1);
    expect(waited.events.map((e) => e.name)).toContain('redlock.attempt_failed');
    expect(waited.events[0].attributes).toMatchObject({ 'redlock.reason': 'held' });
    expect(
      await count('redlock.acquire.outcomes', {
        'redlock.outcome': 'failed',
        'redlock.reason': 'held',
      }),
    ).toBe(2);
    expect(said(spans.getFinishedSpans())).not.toContain('busy-resource');
  });

  it('lost: the lock.lost counter, and the failed extension span', async () => {
    const redlock = await manager();
    const lock = await redlock.acquire('lost-one');
    for (const node of shared.fleet.nodes) await node.command('DEL', 'redlock:lost-one');
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(await count('redlock.lock.lost')).toBe(1);
    const [extend] = finished('redlock.extend');
    expect(extend.attributes['redlock.outcome']).toBe('lost');
    expect(extend.status.code).toBe(SpanStatusCode.ERROR);
    await lock.release();
    expect(finished('redlock.release')[0].attributes['redlock.lock.lost']).toBe(true);
  });

  it('recordResources: resource names on spans (never on metrics), error messages in statuses', async () => {
    const redlock = await manager({ telemetry: { recordResources: true } });
    await (await redlock.acquire(['order:7', 'stock:7'])).release();
    expect(finished('redlock.acquire')[0].attributes['redlock.resources']).toEqual([
      'order:7',
      'stock:7',
    ]);
    expect(finished('redlock.release')[0].attributes['redlock.resources']).toEqual([
      'order:7',
      'stock:7',
    ]);
    expect(JSON.stringify(await capture.reader.collect())).not.toContain('order:7');
  });

  it('telemetry: false records nothing', async () => {
    const redlock = shared.manager({ telemetry: false });
    await (await redlock.acquire('quiet')).release();
    await expect(redlock.acquire('quiet', { wait: 0 })).resolves.toBeDefined();
    expect(spans.getFinishedSpans()).toEqual([]);
    expect(await points('redlock.acquire.outcomes')).toEqual([]);
    expect(await points('redlock.locks.held')).toEqual([]);
  });

  it('no provider registered: no trace is started, and nothing is recorded', async () => {
    trace.disable();
    metrics.disable();
    const redlock = await manager();
    await (await redlock.acquire('unobserved')).release();
    const telemetry = (
      redlock as unknown as {
        parts: { observer: { telemetry: { startAcquire(r: string[]): unknown } } };
      }
    ).parts.observer.telemetry;
    expect(telemetry).toBeDefined();
    expect(telemetry.startAcquire(['x'])).toBeUndefined();
    expect(spans.getFinishedSpans()).toEqual([]);
    expect(await points('redlock.acquire.outcomes')).toEqual([]);
  });

  it('unavailable: nodes killed give an error status and node errors by node', async () => {
    const redlock = await manager();
    const [, second, third] = shared.fleet.nodes;
    const names = [second, third].map((n) => `127.0.0.1:${n.port}`);
    try {
      // One node down: still granted, and the node's failure is on the span and the counter.
      await third.kill();
      expect(
        await eventually(
          async () => (await count('redlock.node.errors', { 'error.type': 'down' })) >= 1,
        ),
      ).toBe(true);
      await (await redlock.acquire('partial')).release();
      const [partial] = finished('redlock.acquire');
      expect(partial.attributes).toMatchObject({
        'redlock.outcome': 'acquired',
        'redlock.nodes.acquired': 2,
        'redlock.nodes.error': 1,
      });
      expect(partial.attributes['redlock.nodes.outcomes']).toContain(`${names[1]}=error`);
      expect(
        await count('redlock.node.errors', { 'redlock.node': names[1], 'error.type': 'error' }),
      ).toBe(1);
      spans.reset();
      await second.kill();
      expect(
        await eventually(
          async () => (await count('redlock.node.errors', { 'error.type': 'down' })) >= 2,
        ),
      ).toBe(true);
      await expect(redlock.acquire('gone', { wait: 0 })).rejects.toMatchObject({
        reason: 'unavailable',
      });
    } finally {
      await second.restart();
      await third.restart();
    }
    const [span] = finished('redlock.acquire');
    expect(span.attributes).toMatchObject({
      'redlock.outcome': 'failed',
      'redlock.reason': 'unavailable',
      'error.type': 'unavailable',
      'redlock.nodes.error': 2,
    });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'unavailable' });
    for (const name of names) {
      expect(
        await count('redlock.node.errors', { 'redlock.node': name, 'error.type': 'down' }),
      ).toBe(1);
    }
    expect(await count('redlock.acquire.outcomes', { 'redlock.reason': 'unavailable' })).toBe(1);
  });
});
