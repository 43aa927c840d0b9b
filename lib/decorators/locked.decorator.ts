import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { RedlockConfigError } from '../core';
import { LockedInterceptor } from '../interceptors/locked.interceptor';
import {
  buildLockedMetadata,
  getLockedMetadata,
  LOCKED_METADATA,
  type LockedMethodKind,
  type LockedResource,
} from '../locked/locked-metadata';
import { injectLockManager, lockMethod, type AnyMethod } from '../locked/locked-method';
import type { LockedOptions } from '../locked/locked-options';
import { currentLockParameters } from './current-lock.decorator';

/**
 * Runs the method under a distributed lock: acquire → auto-extend while it runs → release
 * when its result settles. Fail closed: the method never runs without the lock.
 *
 * On a controller, WebSocket gateway or microservice handler it works through
 * {@link LockedInterceptor}: a busy lock becomes 409 Conflict with `Retry-After`, unavailable
 * nodes 503, an unresolvable template value 400, and a lock lost while a successful handler
 * ran 500 (typed errors are rethrown outside HTTP). The handler's own exceptions pass through
 * untouched. The method itself is replaced, on its class's prototype, by a locking wrapper:
 * a direct call (a service, a scheduled job, a `super` call, an instance of any scope) takes
 * the lock through the RedlockService of the application that created the instance. Such a
 * method must be `async` (held until its Promise settles) or `async *` (held until the
 * generator finishes); a synchronous provider method fails the bootstrap, a synchronous
 * generator fails here.
 *
 * Resource templates are parsed here, when the decorator is applied (class definition, i.e.
 * bootstrap), and checked against their source at bootstrap: `{id}` = route param `id`;
 * `{params.x}`, `{query.x}`, `{body.x}`, `{headers.x-name}` (case-insensitive), `{user.x}`,
 * `{data.x}` (RPC/WebSocket payload; `{data}` for the whole payload), `{args.N.x}` (the
 * method's arguments — a handler's after its pipes, so `/stock/042` and `/stock/42` that a
 * pipe makes equal share a lock); `{{` / `}}` are literal braces. A value must be a non-empty
 * string or a finite number, else `LockResourceError` — never a lock on `stock:undefined`.
 *
 * @param resource a template, several templates (locked all-or-nothing), or a function of the
 *   call's {@link LockedContext}.
 * @param options lease, waiting, auto-extension and error mapping for this method; each lock
 *   option falls back to the module's.
 * @throws RedlockConfigError when applied, for a malformed template or a bad option.
 *
 * @example
 * @Post(':id/decrement')
 * @Locked('stock:{id}')
 * decrement(@Param('id') id: string) { return this.stock.decrement(id); }
 *
 * @example
 * @Post('transfer')
 * @Locked(['account:{body.from}', 'account:{body.to}'], { wait: 0 })
 * transfer(@Body() dto: TransferDto) { ... }
 *
 * @example
 * @Locked((ctx: LockedContext) => `tenant:${ctx.request.user.tenantId}:report`)
 *
 * @example
 * @Post(':id/decrement')
 * @Locked('stock:{args.0}')               // the id after ParseIntPipe: 042 and 42 are one lock
 * async decrement(@Param('id', ParseIntPipe) id: number) { ... }
 *
 * @example
 * @Injectable()
 * export class Settlement {
 *   @Locked('settlement:{args.0}')        // a provider method: must be async
 *   async settle(day: string) { ... }
 * }
 */
export function Locked(resource: LockedResource, options?: LockedOptions): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const owner = typeof target === 'function' ? target : target.constructor;
    const where = `@Locked on ${owner.name}.${String(propertyKey)}`;
    if (descriptor === undefined || typeof descriptor.value !== 'function') {
      throw new RedlockConfigError(where, descriptor?.value, 'must decorate a method');
    }
    if (typeof target === 'function') {
      throw new RedlockConfigError(
        where,
        propertyKey,
        'must decorate an instance method: static methods are neither handlers nor provider methods',
      );
    }
    if (getLockedMetadata(descriptor.value) !== undefined) {
      throw new RedlockConfigError(
        where,
        resource,
        'is applied twice; pass an array of resources to lock several at once',
      );
    }
    const original = descriptor.value as unknown as AnyMethod;
    const metadata = buildLockedMetadata(resource, options, where, {
      kind: methodKind(original, where),
      key: propertyKey,
      currentLockParams: currentLockParameters(target, propertyKey),
    });
    // On the prototype, at class definition: every instance (any scope, lazy modules), every
    // super call and every explorer that reads the method later sees the locking wrapper.
    const wrapped = lockMethod(original, metadata);
    (descriptor as PropertyDescriptor).value = wrapped;
    injectLockManager(target);
    SetMetadata(LOCKED_METADATA, metadata)(target, propertyKey, descriptor);
    UseInterceptors(LockedInterceptor)(target, propertyKey, descriptor);
    return descriptor;
  };
}

const AsyncFunction = (async () => undefined).constructor;
const AsyncGeneratorFunction = async function* () {}.constructor;
const GeneratorFunction = function* () {}.constructor;

/**
 * What the method returns, from how it is declared. A synchronous generator cannot hold a lock
 * across its steps (taking one is asynchronous): refused here.
 */
function methodKind(method: AnyMethod, where: string): LockedMethodKind {
  if (method instanceof AsyncFunction) return 'async';
  if (method instanceof AsyncGeneratorFunction) return 'asyncGenerator';
  if (method instanceof GeneratorFunction) {
    throw new RedlockConfigError(
      where,
      'a generator method',
      'cannot be locked: a lock is taken asynchronously; declare it `async *`',
    );
  }
  return 'sync';
}
