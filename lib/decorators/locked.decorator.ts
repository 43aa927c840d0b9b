import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { RedlockConfigError } from '../core';
import { LockedInterceptor } from '../interceptors/locked.interceptor';
import {
  buildLockedMetadata,
  getLockedMetadata,
  LOCKED_METADATA,
  type LockedResource,
} from '../locked/locked-metadata';
import type { LockedOptions } from '../locked/locked-options';

/**
 * Runs the method under a distributed lock: acquire → auto-extend while it runs → release
 * when its result settles. Fail closed: the method never runs without the lock.
 *
 * On a controller, WebSocket gateway or microservice handler it works through
 * {@link LockedInterceptor}: a busy lock becomes 409 Conflict with `Retry-After`, unavailable
 * nodes 503, an unresolvable template value 400, and a lock lost while a successful handler
 * ran 500 (typed errors are rethrown outside HTTP). The handler's own exceptions pass through
 * untouched. On a provider method (service, queue consumer) the module's explorer wraps the
 * method at bootstrap; a locked provider method always returns a Promise.
 *
 * Resource templates are parsed here, when the decorator is applied (class definition, i.e.
 * bootstrap): `{id}` = route param `id`; `{params.x}`, `{query.x}`, `{body.x}`,
 * `{headers.x-name}` (case-insensitive), `{user.x}`, `{data.x}` (RPC/WebSocket payload; `{data}`
 * for the whole payload), `{args.N.x}` (call arguments); `{{` / `}}` are literal braces. A
 * value must be a non-empty string or a finite number, else `LockResourceError` — never a
 * lock on `stock:undefined`.
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
 * @Injectable()
 * export class Settlement {
 *   @Locked('settlement:{args.0}')        // a provider method: wrapped at bootstrap
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
    const metadata = buildLockedMetadata(resource, options, where);
    SetMetadata(LOCKED_METADATA, metadata)(target, propertyKey, descriptor);
    UseInterceptors(LockedInterceptor)(target, propertyKey, descriptor);
    return descriptor;
  };
}
