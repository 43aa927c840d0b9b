import 'reflect-metadata';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { Locked, LockedInterceptor, LOCKED_METADATA, RedlockConfigError } from '../../lib';
import type { LockedContext } from '../../lib';
import { getLockedMetadata } from '../../lib/locked/locked-metadata';

const context = (request: unknown): LockedContext => ({
  args: [request],
  request,
  data: undefined,
  executionContext: undefined,
});

/** Defines a class with one decorated method; decorators run at class definition. */
function define(decorate: () => MethodDecorator) {
  class Target {
    @decorate()
    method() {
      return 'ran';
    }
  }
  return Target;
}

describe('@Locked at decoration time (class definition = bootstrap)', () => {
  it('stores parsed metadata and applies LockedInterceptor to the method', () => {
    const Target = define(() => Locked('stock:{id}', { ttl: 5_000, wait: 0 }));
    const metadata = getLockedMetadata(Target.prototype.method);
    expect(metadata).toBeDefined();
    expect(Reflect.getMetadata(LOCKED_METADATA, Target.prototype.method)).toBe(metadata);
    expect(metadata!.where).toBe('@Locked on Target.method');
    expect(metadata!.lockOptions).toEqual({ ttl: 5_000, wait: 0 });
    expect(metadata!.resolve(context({ params: { id: '1' } }))).toEqual(['stock:1']);
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Target.prototype.method)).toEqual([
      LockedInterceptor,
    ]);
  });

  it('parses every template of an array once', () => {
    const Target = define(() => Locked(['a:{body.from}', 'a:{body.to}']));
    expect(
      getLockedMetadata(Target.prototype.method)!.resolve(
        context({ body: { from: 'x', to: 'y' } }),
      ),
    ).toEqual(['a:x', 'a:y']);
  });

  it('fails at class definition for a malformed template, naming the method', () => {
    expect(() => define(() => Locked('stock:{unknown.x}'))).toThrow(RedlockConfigError);
    expect(() => define(() => Locked('stock:{id'))).toThrow(/@Locked on Target\.method/);
    expect(() => define(() => Locked(['ok:{id}', '{}']))).toThrow(RedlockConfigError);
    expect(() => define(() => Locked([]))).toThrow(RedlockConfigError);
    expect(() => define(() => Locked([42 as never]))).toThrow(RedlockConfigError);
  });

  it.each([
    [{ ttl: 0 }, /options\.ttl/],
    [{ ttl: 1.5 }, /options\.ttl/],
    [{ wait: -1 }, /options\.wait/],
    [{ wait: NaN }, /options\.wait/],
    [{ retryDelay: Infinity }, /options\.retryDelay/],
    [{ retryJitter: -5 }, /options\.retryJitter/],
    [{ maxHold: 0 }, /options\.maxHold/],
    [{ autoExtend: 'yes' }, /options\.autoExtend/],
    [{ mapError: 'x' }, /options\.mapError/],
    [{ ttL: 100 }, /options\.ttL: is not an option/],
    ['fast', /options/],
  ])('rejects bad options %p at class definition', (options, message) => {
    expect(() => define(() => Locked('r', options as never))).toThrow(message);
  });

  it('accepts Infinity for wait and maxHold, and autoExtend false', () => {
    const Target = define(() =>
      Locked('r', { wait: Infinity, maxHold: Infinity, autoExtend: false }),
    );
    expect(getLockedMetadata(Target.prototype.method)!.lockOptions).toEqual({
      wait: Infinity,
      maxHold: Infinity,
      autoExtend: false,
    });
  });

  it('rejects being applied twice to one method', () => {
    expect(() => {
      class Twice {
        @Locked('a')
        @Locked('b')
        method() {}
      }
      return Twice;
    }).toThrow(/applied twice/);
  });

  it('rejects static methods and properties', () => {
    expect(() => {
      class Static {
        @Locked('a')
        static method() {}
      }
      return Static;
    }).toThrow(/instance method/);
    expect(() =>
      (Locked('a') as (t: object, k: string, d?: PropertyDescriptor) => void)({}, 'field'),
    ).toThrow(/must decorate a method/);
  });

  it('the resource function: result is validated per call', () => {
    const Target = define(() =>
      Locked((ctx: LockedContext) => ctx.request.params.ids as string | string[]),
    );
    const { resolve } = getLockedMetadata(Target.prototype.method)!;
    expect(resolve(context({ params: { ids: ['a', 'b'] } }))).toEqual(['a', 'b']);
    expect(resolve(context({ params: { ids: 'a' } }))).toEqual(['a']);
    for (const bad of ['', [], ['a', ''], 7, undefined, { a: 1 }]) {
      expect(() => resolve(context({ params: { ids: bad } }))).toThrow(
        /must return a non-empty string or a non-empty array/,
      );
    }
    expect(() => resolve(context({ params: { ids: Promise.resolve('a') } }))).toThrow(
      /synchronously/,
    );
  });
});
