import 'reflect-metadata';
import { Param, SetMetadata } from '@nestjs/common';
import { INTERCEPTORS_METADATA, PROPERTY_DEPS_METADATA } from '@nestjs/common/constants';
import {
  CurrentLock,
  Locked,
  LockedInterceptor,
  LOCKED_METADATA,
  RedlockConfigError,
  RedlockService,
} from '../../lib';
import type { LockedContext } from '../../lib';
import { getLockedMetadata } from '../../lib/locked/locked-metadata';
import { isLockedWrapper } from '../../lib/locked/locked-method';
import { redlockModuleDefined } from '../../lib/module-registry';

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

describe('@Locked wraps the method on the prototype, when applied', () => {
  it('replaces the method with the locking wrapper, keeping name, length and every metadata', () => {
    class Service {
      @SetMetadata('test:above', 1)
      @Locked('settle:{args.0}')
      @SetMetadata('test:below', 2)
      async settle(_day: string, _n: number) {}
    }
    const wrapper = Service.prototype.settle;
    expect(isLockedWrapper(wrapper)).toBe(true);
    expect(wrapper.name).toBe('settle');
    expect(wrapper.length).toBe(2);
    expect(Reflect.getMetadata('test:above', wrapper)).toBe(1);
    expect(Reflect.getMetadata('test:below', wrapper)).toBe(2);
    expect(Reflect.getMetadata(LOCKED_METADATA, wrapper)).toBe(getLockedMetadata(wrapper));
  });

  it('declares the lock-manager injection once per class (a subclass inherits it)', () => {
    // Nest reads the injected type only in an app that defined RedlockModule (otherwise the
    // getter throws the forgotten-module error, tested in missing-module.spec): one is defined
    // here, whatever other spec files ran before in this worker.
    redlockModuleDefined();
    class Service {
      @Locked('a')
      async a() {}
      @Locked('b')
      async b() {}
    }
    class Sub extends Service {
      @Locked('c')
      async c() {}
    }
    const deps = (type: object): { type: unknown }[] =>
      Reflect.getMetadata(PROPERTY_DEPS_METADATA, type);
    expect(deps(Service).filter((d) => d.type === RedlockService)).toHaveLength(1);
    expect(deps(Sub).filter((d) => d.type === RedlockService)).toHaveLength(1);
  });

  it('records how the method returns', () => {
    class Shapes {
      @Locked('a')
      async promised() {}
      @Locked('b')
      async *generated() {}
      @Locked('c')
      plain() {}
    }
    const kind = (method: unknown) => getLockedMetadata(method)!.kind;
    expect(kind(Shapes.prototype.promised)).toBe('async');
    expect(kind(Shapes.prototype.generated)).toBe('asyncGenerator');
    expect(kind(Shapes.prototype.plain)).toBe('sync');
  });

  it('rejects a synchronous generator: a lock cannot be held across its steps', () => {
    expect(() => {
      class Gen {
        @Locked('a')
        *items() {}
      }
      return Gen;
    }).toThrow(/@Locked on Gen\.items.*async \*/);
  });

  it('a call on an instance no application created fails closed (sync: throws; async: rejects)', async () => {
    let ran = 0;
    class Orphan {
      @Locked('a')
      async work() {
        ran++;
      }
      @Locked('b')
      plain() {
        ran++;
      }
    }
    await expect(new Orphan().work()).rejects.toThrow(/@Locked on Orphan\.work.*RedlockService/);
    expect(() => new Orphan().plain()).toThrow(/@Locked on Orphan\.plain.*declare it `async`/);
    expect(ran).toBe(0);
  });
});

describe('@Locked naming the lock from the arguments ({args.N})', () => {
  it('flags templates reading only args; request, payload, constant and function keys are not', () => {
    const reads = (decorator: MethodDecorator) =>
      getLockedMetadata(define(() => decorator).prototype.method)!.readsArguments;
    expect(reads(Locked('stock:{args.0}'))).toBe(true);
    expect(reads(Locked(['a:{args.0.from}', 'a:{args.1}']))).toBe(true);
    expect(reads(Locked('stock:{id}'))).toBe(false);
    expect(reads(Locked('msg:{data.id}'))).toBe(false);
    expect(reads(Locked('constant'))).toBe(false);
    expect(reads(Locked(() => 'fn'))).toBe(false);
  });

  it('accepts args mixed with request placeholders: one lock, named after the pipes', () => {
    expect(() => define(() => Locked(['a:{args.0}', 'b:{body.x}']))).not.toThrow();
  });

  it('finds the @CurrentLock() parameters the wrapper fills in', () => {
    class Handler {
      @Locked('stock:{args.0}')
      async decrement(@Param('id') _id: string, @CurrentLock() _lock: unknown) {}
    }
    expect(getLockedMetadata(Handler.prototype.decrement)!.currentLockParams).toEqual([1]);
  });
});
