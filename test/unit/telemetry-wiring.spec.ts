import { metrics, trace } from '@opentelemetry/api';
import type { DataPoint } from '@opentelemetry/sdk-metrics';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Redlock, type RedlockOptions } from '../../lib';
import { loadOtelApi } from '../../lib/core/observability/telemetry';
import { HealthNode } from '../sim/health-node';
import { TelemetryCapture } from '../support/telemetry-capture';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * How the lock manager (redlock.ts) feeds OpenTelemetry, in virtual time over simulated nodes:
 * which calls are traced, with which figures, and when nothing is. What the spans and metrics
 * look like against real nodes is test/integration/telemetry.spec.ts; this spec exists because
 * the mutation run (stryker.config.mjs) runs unit specs only, and several of redlock.ts's
 * telemetry lines survived it (issue 9 item 5).
 */
describe('telemetry wiring of the lock manager (virtual time)', () => {
  let clock: VirtualClock;
  let nodes: HealthNode[];
  let spans: InMemorySpanExporter;
  let capture: TelemetryCapture;
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, {
      logger: quiet,
      clock,
      notifications: false,
      retryJitter: 0,
      ...options,
    });
    managers.push(redlock);
    return redlock;
  };
  // Attribute names hold dots: toHaveProperty gets them as one-element paths, since a dotted
  // string would be read as a nested path that never exists (and `not` would always pass).
  const finished = (name: string): ReadableSpan[] => capture.finished(name);
  const points = (name: string): Promise<DataPoint<unknown>[]> => capture.points(name);

  beforeAll(async () => {
    // Loaded once per process; loaded here so that "right after construction" below is about
    // the manager's own wait for it, not about the module system's first import.
    expect(await loadOtelApi()).toBeDefined();
  });
  beforeEach(() => {
    clock = new VirtualClock();
    nodes = Array.from({ length: 3 }, (_, i) => new HealthNode(`h${i}`, clock));
    capture = new TelemetryCapture();
    spans = capture.spans;
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });
  afterAll(() => TelemetryCapture.stop());

  it('traces the very first acquisition, made right after construction, with its attempts', async () => {
    for (const node of nodes) node.put('redlock:r', 'rival', 150);
    const redlock = manager({ retryDelay: 100 });
    const lock = await clock.run(redlock.acquire('r'));
    const [acquire] = finished('redlock.acquire');
    expect(acquire).toBeDefined();
    // Attempts at 0 (held), 100 (held, 50 ms left), 150 (the rival's lease over): three.
    expect(acquire.attributes).toMatchObject({
      'redlock.acquire.attempts': 3,
      'redlock.outcome': 'acquired',
      'redlock.nodes.acquired': expect.any(Number),
    });
    expect(acquire.attributes['redlock.nodes.acquired']).toBeGreaterThanOrEqual(2);
    await clock.run(lock.release());
  });

  it('an extension span with its ttl; a release span with the exact time held, or "lost"', async () => {
    const redlock = manager({ ttl: 5_000 });
    const lock = await clock.run(redlock.acquire('r'));
    await clock.advance(400);
    await clock.run(lock.extend(7_000));
    await clock.advance(100);
    await clock.run(lock.release());
    expect(finished('redlock.extend')[0].attributes).toMatchObject({
      'redlock.lock.ttl_ms': 7_000,
      'redlock.outcome': 'extended',
    });
    expect(finished('redlock.release')[0].attributes['redlock.lock.held_ms']).toBe(500);

    const lost = await clock.run(redlock.acquire('gone', { ttl: 1_000 }));
    await clock.advance(2_000);
    await clock.run(lost.release().catch(() => undefined));
    const [, release] = finished('redlock.release');
    expect(release.attributes['redlock.lock.lost']).toBe(true);
    expect(release.attributes).not.toHaveProperty(['redlock.lock.held_ms']);
  });

  it('a failed acquisition is traced as failed; a held lock shows in the held-locks gauge', async () => {
    const redlock = manager();
    for (const node of nodes) node.put('redlock:busy', 'rival', 60_000);
    expect(await clock.run(redlock.tryAcquire('busy'))).toBeNull();
    expect(finished('redlock.acquire')[0].attributes).toMatchObject({
      'redlock.outcome': 'failed',
      'redlock.reason': 'held',
    });
    const lock = await clock.run(redlock.acquire('r'));
    expect(await points('redlock.locks.held')).toMatchObject([{ value: 1 }]);
    await clock.run(lock.release());
    expect(await points('redlock.locks.held')).toMatchObject([{ value: 0 }]);
    // A traced release still releases: the key is gone from every node.
    expect(finished('redlock.release')).toHaveLength(1);
    expect(nodes.every((node) => node.valueAt('redlock:r') === undefined)).toBe(true);
  });

  it('a traced extension still extends on the nodes', async () => {
    const redlock = manager({ ttl: 2_000 });
    const lock = await clock.run(redlock.acquire('r'));
    await clock.run(lock.extend(9_000));
    expect(finished('redlock.extend')).toHaveLength(1);
    expect(nodes.every((node) => node.pttlOf('redlock:r') === 9_000)).toBe(true);
    await clock.run(lock.release());
  });

  it('resource names on spans only with recordResources: true', async () => {
    const plain = manager();
    await clock.run((await clock.run(plain.acquire('order:7'))).release());
    expect(finished('redlock.acquire')[0].attributes).not.toHaveProperty(['redlock.resources']);
    spans.reset();
    const named = manager({ telemetry: { recordResources: true } });
    await clock.run((await clock.run(named.acquire('order:8'))).release());
    expect(finished('redlock.acquire')[0].attributes['redlock.resources']).toEqual(['order:8']);
    spans.reset();
    const unnamed = manager({ telemetry: { recordResources: false } });
    await clock.run((await clock.run(unnamed.acquire('order:9'))).release());
    expect(finished('redlock.acquire')[0].attributes).not.toHaveProperty(['redlock.resources']);
  });

  it('counts a node going down or slow as a node error, by node; coming back is none', async () => {
    const redlock = manager();
    await clock.run(redlock.ready());
    await clock.advance(1);
    nodes[1].report('down');
    nodes[1].report('up');
    nodes[2].report('slow');
    const errors = await points('redlock.node.errors');
    const byNode = Object.fromEntries(
      errors.map((point) => [
        `${String(point.attributes['redlock.node'])} ${String(point.attributes['error.type'])}`,
        point.value,
      ]),
    );
    expect(byNode).toEqual({ 'h1 down': 1, 'h2 slow': 1 });
  });

  it('a manager closed before the API was loaded records nothing', async () => {
    const redlock = manager();
    void redlock.close();
    await clock.advance(10);
    expect(await points('redlock.locks.held')).toEqual([]);
  });

  it('with the API loaded but no provider recording, extensions and releases still reach the nodes', async () => {
    trace.disable();
    metrics.disable();
    const redlock = manager({ ttl: 2_000 });
    const lock = await clock.run(redlock.acquire('r'));
    await clock.run(lock.extend(9_000));
    expect(nodes.every((node) => node.pttlOf('redlock:r') === 9_000)).toBe(true);
    await clock.run(lock.release());
    expect(nodes.every((node) => node.valueAt('redlock:r') === undefined)).toBe(true);
    expect(spans.getFinishedSpans()).toEqual([]);
  });

  it('telemetry: false records nothing', async () => {
    const redlock = manager({ telemetry: false });
    await clock.run((await clock.run(redlock.acquire('r'))).release());
    expect(spans.getFinishedSpans()).toEqual([]);
    expect(await points('redlock.locks.held')).toEqual([]);
  });
});
