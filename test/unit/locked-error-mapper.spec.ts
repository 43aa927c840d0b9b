import {
  BadRequestException,
  ConflictException,
  HttpException,
  InternalServerErrorException,
  IntrinsicException,
  NotFoundException,
  ServiceUnavailableException,
} from '@nestjs/common';
import {
  defaultLockedErrorMapper,
  LockLostError,
  LockNotAcquiredError,
  LockResourceError,
  LockedCallException,
  RedlockConfigError,
  type LockedErrorContext,
} from '../../lib';
import { mapLockedError, retryAfterSeconds } from '../../lib/exceptions/locked-error-mapper';

function httpContext(stage: LockedErrorContext['stage'] = 'acquire') {
  const headers: Record<string, string> = {};
  const context: LockedErrorContext = {
    type: 'http',
    stage,
    resources: ['stock:1'],
    setHeader: (name, value) => {
      headers[name] = value;
    },
  };
  return { context, headers };
}

const held = (retryAfterMs?: number) =>
  new LockNotAcquiredError(['stock:1'], 'held', 1, [], retryAfterMs);
const unavailable = () => new LockNotAcquiredError(['stock:1'], 'unavailable', 3, []);

describe('default @Locked error mapping over HTTP', () => {
  it('held → 409 Conflict with Retry-After in whole seconds, rounded up', () => {
    const { context, headers } = httpContext();
    const mapped = defaultLockedErrorMapper(held(1_001), context);
    expect(mapped).toBeInstanceOf(ConflictException);
    expect((mapped as HttpException).getStatus()).toBe(409);
    expect((mapped as HttpException).cause).toBeInstanceOf(LockNotAcquiredError);
    expect(headers['Retry-After']).toBe('2');
  });

  it.each([
    [1, '1'],
    [999, '1'],
    [1000, '1'],
    [1001, '2'],
    [4_990.5, '5'],
    [0, '0'],
  ])('Retry-After for %p ms is %p', (ms, header) => {
    const { context, headers } = httpContext();
    defaultLockedErrorMapper(held(ms), context);
    expect(headers['Retry-After']).toBe(header);
  });

  it('held without a known lease → 409 and no Retry-After', () => {
    const { context, headers } = httpContext();
    expect(defaultLockedErrorMapper(held(undefined), context)).toBeInstanceOf(ConflictException);
    expect(headers).toEqual({});
  });

  it('keeps lock keys and owner values out of the response body', () => {
    const { context } = httpContext();
    const body = JSON.stringify(
      (defaultLockedErrorMapper(held(10), context) as HttpException).getResponse(),
    );
    expect(body).not.toContain('stock:1');
  });

  it('unavailable → 503 Service Unavailable', () => {
    const { context, headers } = httpContext();
    const mapped = defaultLockedErrorMapper(unavailable(), context);
    expect(mapped).toBeInstanceOf(ServiceUnavailableException);
    expect((mapped as HttpException).getStatus()).toBe(503);
    expect(headers).toEqual({});
  });

  it('an unresolvable resource → 400 Bad Request naming neither the template nor the placeholder (issue 25)', () => {
    const { context } = httpContext('resolve');
    const error = new LockResourceError(
      'A value the lock is named from is missing',
      undefined,
      'Lock resource "stock:{id}": params.id is missing',
    );
    const mapped = defaultLockedErrorMapper(error, context);
    expect(mapped).toBeInstanceOf(BadRequestException);
    expect((mapped as HttpException).getResponse()).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: 'The lock resource could not be named from the request',
    });
    expect((mapped as HttpException).cause).toBe(error);
  });

  it('409 and 503 bodies are spelt out, the same on every Nest major (issue 25)', () => {
    const held = defaultLockedErrorMapper(
      new LockNotAcquiredError(['stock:1'], 'held', 1, []),
      httpContext('acquire').context,
    );
    expect((held as HttpException).getResponse()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'The resource is locked by another request; retry later',
    });
    const down = defaultLockedErrorMapper(
      new LockNotAcquiredError(['stock:1'], 'unavailable', 1, []),
      httpContext('acquire').context,
    );
    expect((down as HttpException).getResponse()).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'The lock service is unavailable; retry later',
    });
  });

  it('lost while a successful handler ran → 500 saying so', () => {
    const { context } = httpContext('hold');
    const mapped = defaultLockedErrorMapper(new LockLostError(['stock:1']), context);
    expect(mapped).toBeInstanceOf(InternalServerErrorException);
    expect((mapped as HttpException).message).toMatch(/lock was lost while the handler ran/);
    expect((mapped as HttpException).message).toMatch(/may not have been exclusive/);
  });

  it('passes any other error through as the very same object', () => {
    const { context } = httpContext();
    for (const error of [
      new NotFoundException(),
      new TypeError('x'),
      new RedlockConfigError('ttl', -1, 'must be positive'),
      'a string',
    ]) {
      expect(defaultLockedErrorMapper(error, context)).toBe(error);
    }
  });
});

describe('default @Locked error mapping outside HTTP', () => {
  it.each(['rpc', 'ws', 'graphql'])(
    '%s: a LockedCallException with the code, retryAfterMs when known, and no resource or node',
    (type) => {
      const context: LockedErrorContext = { type, stage: 'acquire' };
      const cases: [unknown, string, number | undefined][] = [
        [held(1_234.5), 'LOCK_BUSY', 1_235],
        [held(undefined), 'LOCK_BUSY', undefined],
        [unavailable(), 'LOCK_UNAVAILABLE', undefined],
        [
          new LockNotAcquiredError(['secret:alice@example.com'], 'unavailable', 1, [
            { node: '127.0.0.1:6379', outcome: 'timeout' },
          ]),
          'LOCK_UNAVAILABLE',
          undefined,
        ],
        [new LockLostError(['secret:alice@example.com']), 'LOCK_LOST', undefined],
        [new LockResourceError('bad'), 'LOCK_RESOURCE_INVALID', undefined],
      ];
      for (const [error, code, retryAfterMs] of cases) {
        const mapped = defaultLockedErrorMapper(error, context) as LockedCallException;
        expect(mapped).toBeInstanceOf(LockedCallException);
        expect(mapped).toBeInstanceOf(IntrinsicException); // Nest does not log it
        expect(mapped.cause).toBe(error);
        expect(mapped.payload).toEqual({
          status: 'error',
          code,
          message: expect.any(String),
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        });
        expect(mapped.extensions).toEqual({
          code,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        });
        const shown = JSON.stringify({ ...mapped.payload, message: mapped.message });
        expect(shown).not.toMatch(/secret|alice|127\.0\.0\.1|\d+:\d{2,5}/);
      }
    },
  );

  it('provider: rethrows the typed errors as they are (the global filter answers)', () => {
    const context: LockedErrorContext = { type: 'provider', stage: 'acquire' };
    for (const error of [held(100), unavailable(), new LockLostError(['r'])]) {
      expect(defaultLockedErrorMapper(error, context)).toBe(error);
    }
  });

  it('leaves other errors as they are in every transport', () => {
    for (const type of ['rpc', 'ws', 'graphql']) {
      const error = new TypeError('x');
      expect(defaultLockedErrorMapper(error, { type, stage: 'acquire' })).toBe(error);
    }
  });
});

describe('mapper overrides', () => {
  it('asks the decorator first, then the module, then the default', () => {
    const { context } = httpContext();
    const calls: string[] = [];
    const decorator = (e: unknown) => {
      calls.push('decorator');
      return e instanceof LockNotAcquiredError && e.reason === 'held'
        ? new HttpException('Locked', 423)
        : undefined;
    };
    const module = () => {
      calls.push('module');
      return undefined;
    };
    const mapped = mapLockedError(held(10), context, [decorator, module]);
    expect((mapped as HttpException).getStatus()).toBe(423);
    expect(calls).toEqual(['decorator']);

    calls.length = 0;
    expect(mapLockedError(unavailable(), context, [decorator, module])).toBeInstanceOf(
      ServiceUnavailableException,
    );
    expect(calls).toEqual(['decorator', 'module']);
  });

  it('lets the module mapper answer when the decorator has none', () => {
    const context: LockedErrorContext = { type: 'rpc', stage: 'acquire' };
    const replacement = new Error('rpc busy');
    expect(mapLockedError(held(), context, [undefined, () => replacement])).toBe(replacement);
  });

  it('falls back to the default when every mapper returns undefined', () => {
    const { context, headers } = httpContext();
    expect(mapLockedError(held(2_500), context, [() => undefined, () => undefined])).toBeInstanceOf(
      ConflictException,
    );
    expect(headers['Retry-After']).toBe('3');
  });
});

describe('retryAfterSeconds', () => {
  it('ignores unknown or nonsensical leases', () => {
    expect(retryAfterSeconds(undefined)).toBeUndefined();
    expect(retryAfterSeconds(-1)).toBeUndefined();
    expect(retryAfterSeconds(NaN)).toBeUndefined();
    expect(retryAfterSeconds(Infinity)).toBeUndefined();
  });
});
