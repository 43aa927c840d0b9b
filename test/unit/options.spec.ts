import Redis from 'ioredis';
import {
  Redlock,
  RedlockConfigError,
  type LockedErrorMapper,
  type LockedOnBusy,
  type LockedOptions,
  type LockOptions,
} from '../../lib';
import type { CallSettings, ResolvedRedlockOptions } from '../../lib/core/options';
import type { RedlockTelemetryOptions } from '../../lib/core/observability/telemetry';
import { memoryNodes } from './memory-node';

function configError(create: () => unknown): RedlockConfigError {
  try {
    create();
  } catch (error) {
    expect(error).toBeInstanceOf(RedlockConfigError);
    return error as RedlockConfigError;
  }
  throw new Error('expected a RedlockConfigError');
}

describe('option validation', () => {
  const nodes = memoryNodes(3);

  it.each([
    ['ttl', 0],
    ['ttl', -5],
    ['ttl', NaN],
    ['ttl', Infinity],
    ['ttl', 1.5],
    ['ttl', '1000'],
    ['driftFactor', -0.1],
    ['driftFactor', 1],
    ['driftFactor', NaN],
    ['nodeTimeout', 0],
    ['nodeTimeout', NaN],
    ['wait', -1],
    ['wait', NaN],
    ['retryDelay', -1],
    ['retryDelay', Infinity],
    ['retryJitter', -1],
    ['maxHold', 0],
    ['keyPrefix', 42],
    ['fairness', 'fifo'],
    ['fairness', true],
    ['handOffLease', 0],
    ['handOffLease', -1],
    ['handOffLease', NaN],
    ['handOffLease', Infinity],
    ['handOffLease', 20_000],
    // `quarantine: <ms>` is gone (issue 23): a restarted node waits maxTtl; only on or off.
    ['quarantine', 30_000],
    ['quarantine', 'on'],
    ['maxTtl', 0],
    ['maxTtl', 1.5],
    ['maxTtl', 86_400_001],
  ])('rejects %s = %p, naming the option and the value', (option, value) => {
    const error = configError(() => new Redlock(nodes, { [option]: value }));
    expect(error.option).toBe(option);
    expect(Object.is(error.value, value)).toBe(true);
    expect(error.message).toContain(option);
    expect(error.message).toContain(
      String(typeof value === 'string' ? JSON.stringify(value) : value),
    );
  });

  it.each([1000, 900, 251])(
    'rejects nodeTimeout %p with ttl 1000: more than a quarter of the ttl (issue 6 item 10)',
    (nodeTimeout) => {
      const error = configError(() => new Redlock(nodes, { ttl: 1000, nodeTimeout }));
      expect(error.option).toBe('nodeTimeout');
      expect(error.message).toMatch(/at most a quarter of ttl/);
    },
  );

  it("rejects fairness: 'queue' without release notifications: nobody would tell the next waiter", () => {
    const error = configError(
      () => new Redlock(nodes, { fairness: 'queue', notifications: false }),
    );
    expect(error.option).toBe('fairness');
    expect(error.message).toMatch(/notifications/);
  });

  it('accepts nodeTimeout of exactly a quarter of the ttl', () => {
    expect(() => new Redlock(nodes, { ttl: 1000, nodeTimeout: 250 })).not.toThrow();
  });

  it('rejects a per-call ttl below 4 × nodeTimeout', async () => {
    const redlock = new Redlock(nodes, { nodeTimeout: 100 });
    const error = (await redlock
      .acquire('r', { ttl: 399 })
      .catch((e: unknown) => e)) as RedlockConfigError;
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.message).toMatch(/at least 4 × nodeTimeout \(100 ms\)/);
  });

  it('accepts the defaults, wait: 0 and wait: Infinity', () => {
    expect(() => new Redlock(nodes)).not.toThrow();
    expect(() => new Redlock(nodes, { wait: 0 })).not.toThrow();
    expect(() => new Redlock(nodes, { wait: Infinity })).not.toThrow();
  });

  it.each([[[]], [undefined], ['redis://a:6379']])('rejects nodes = %p', (list) => {
    const error = configError(() => new Redlock(list as never));
    expect(error.option).toBe('nodes');
  });

  it.each([
    ['a host name', 'localhost:6379'],
    ['an http URL', 'http://a:6379'],
    ['a number', 6379],
    ['null', null],
    ['an options object with a string port', { host: 'a', port: '6379' }],
  ])('rejects a node that is %s, naming its index', (_, spec) => {
    const error = configError(() => new Redlock(['redis://a:6379', spec as never]));
    expect(error.option).toBe('nodes[1]');
  });

  it('rejects the same node listed twice, in any form, before connecting to anything', () => {
    expect(
      configError(() => new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://a:6379'])).option,
    ).toBe('nodes[2]');
    expect(
      configError(() => new Redlock(['redis://a:6379', { host: 'a', port: 6379 }])).option,
    ).toBe('nodes[1]');
    expect(configError(() => new Redlock(['redis://a', 'redis://a:6379'])).option).toBe('nodes[1]');
    const client = new Redis({ lazyConnect: true, host: 'c', port: 7000 });
    expect(configError(() => new Redlock([client, 'redis://c:7000'])).option).toBe('nodes[1]');
    client.disconnect();
  });

  it('never puts a password from a node URL into the error', () => {
    const error = configError(
      () => new Redlock(['redis://a:6379', 'redis://:s3cret@b:6379/0?x', 'http://:s3cret@c']),
    );
    expect(error.option).toBe('nodes[2]');
    expect(error.message).not.toContain('s3cret');
  });

  it('validates per-call options when they are used, naming the option', async () => {
    const nodes = memoryNodes(3);
    const redlock = new Redlock(nodes, { nodeTimeout: 100 });
    for (const [option, value] of [
      ['ttl', 0],
      ['ttl', 50], // not larger than nodeTimeout
      ['wait', -1],
      ['retryDelay', NaN],
      ['retryJitter', -3],
    ] as const) {
      await expect(redlock.acquire('r', { [option]: value })).rejects.toMatchObject({
        name: 'RedlockConfigError',
        option,
      });
    }
    // nothing was sent to any node for a rejected call
    expect(nodes.map((n) => n.calls.acquire)).toEqual([0, 0, 0]);
    await redlock.close();
  });
});

/** True when A and B are the same type (each assignable to the other, optionality included). */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/**
 * The option types are derived (Pick / Omit / Required) instead of redeclared (issue 26). Their
 * shapes are a public contract (architecture.md §4): these are the shapes as they were written out before
 * the derivation, checked by the compiler (ts-jest type-checks the spec).
 */
describe('derived option types keep their shapes', () => {
  it('LockOptions, LockedOptions, ResolvedRedlockOptions, CallSettings', () => {
    type OldLockOptions = {
      ttl?: number;
      wait?: number;
      retryDelay?: number;
      retryJitter?: number;
      signal?: AbortSignal;
      autoExtend?: boolean;
      maxHold?: number;
      fencing?: boolean;
      reentrant?: boolean;
    };
    type OldLockedOptions = Omit<OldLockOptions, 'signal'> & {
      minHold?: number;
      onBusy?: LockedOnBusy;
      mapError?: LockedErrorMapper;
    };
    type OldResolved = {
      ttl: number;
      driftFactor: number;
      nodeTimeout: number;
      wait: number;
      retryDelay: number;
      retryJitter: number;
      keyPrefix: string;
      maxHold: number;
      maxResourceLength: number;
      fencing: boolean;
      quarantine: boolean;
      maxTtl: number;
      trustUnidentifiedNodes: boolean;
      reentrant: boolean;
      notifications: boolean;
      fairness: 'off' | 'queue';
      handOffLease: number;
      telemetry: boolean | RedlockTelemetryOptions;
    };
    type OldCallSettings = {
      ttl: number;
      wait: number;
      retryDelay: number;
      retryJitter: number;
      fencing: boolean;
      reentrant: boolean;
    };
    const checks: [
      Same<{ [K in keyof LockOptions]: LockOptions[K] }, OldLockOptions>,
      Same<
        { [K in keyof LockedOptions]: LockedOptions[K] },
        { [K in keyof OldLockedOptions]: OldLockedOptions[K] }
      >,
      Same<ResolvedRedlockOptions, OldResolved>,
      Same<CallSettings, OldCallSettings>,
    ] = [true, true, true, true];
    expect(checks).toEqual([true, true, true, true]);
  });
});
