import { HealthIndicatorService } from '@nestjs/terminus';
import type { RedlockHealth, RedlockService } from 'nestjs-redlock';
import { RedlockHealthIndicator } from 'nestjs-redlock/terminus';

/**
 * RedlockHealthIndicator's mapping of `health()` to a terminus result, with terminus's own
 * HealthIndicatorService (the flip with real node kills is test/e2e/health.spec.ts).
 */

function indicatorFor(health: () => Promise<RedlockHealth>) {
  const service = { health } as unknown as RedlockService;
  return new RedlockHealthIndicator(service, new HealthIndicatorService());
}

const nodes = [
  { node: 'a:6379', up: true, latencyMs: 0.4321, voting: true },
  { node: 'b:6379', up: false, error: 'no answer within nodeTimeout', voting: false },
  { node: 'c:6379', up: true, latencyMs: 12.96, voting: true },
];

describe('RedlockHealthIndicator', () => {
  it('up when the core says a quorum answered, under the given key, latency to 0.1 ms', async () => {
    const result = await indicatorFor(async () => ({ up: true, quorum: 2, nodes })).check('locks');
    expect(result).toEqual({
      locks: {
        status: 'up',
        quorum: 2,
        nodesUp: 2,
        nodesVoting: 2,
        nodes: [
          { node: 'a:6379', status: 'up', latencyMs: 0.4, voting: true },
          { node: 'b:6379', status: 'down', error: 'no answer within nodeTimeout', voting: false },
          { node: 'c:6379', status: 'up', latencyMs: 13, voting: true },
        ],
      },
    });
  });

  it('down when the core says no quorum, even with nodes answering (quarantined ones)', async () => {
    const result = await indicatorFor(async () => ({ up: false, quorum: 2, nodes })).check();
    expect(result.redlock).toMatchObject({ status: 'down', quorum: 2, nodesUp: 2 });
  });

  it('down, with the message, when the check itself fails', async () => {
    const result = await indicatorFor(async () => {
      throw new Error('the lock manager is closed');
    }).check('redlock');
    expect(result).toEqual({
      redlock: { status: 'down', message: 'the lock manager is closed' },
    });
  });
});
