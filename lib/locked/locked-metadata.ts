import { LockResourceError, RedlockConfigError, type LockOptions } from '../core';
import type { LockedErrorMapper } from '../exceptions/locked-error-mapper';
import type { LockedContext } from './locked-context';
import { validateLockedOptions, type LockedOptions } from './locked-options';
import { parseResourceTemplate, type ResourceTemplate } from './resource-template';

/**
 * What `@Locked` locks: a resource template, several (locked all-or-nothing), or a function
 * of the call's {@link LockedContext} returning one or several resource names.
 *
 * @example 'stock:{id}'
 * @example ['account:{body.from}', 'account:{body.to}']
 * @example (ctx: LockedContext) => `stock:${ctx.request.params.id}`
 */
export type LockedResource =
  string | readonly string[] | ((context: LockedContext) => string | readonly string[]);

/** Reflect-metadata key under which `@Locked` stores its {@link LockedMetadata} on the method. */
export const LOCKED_METADATA = 'nestjs-redlock:locked';

/**
 * What `@Locked` leaves on a method, built once at decoration time. The same object travels
 * with the method when the explorer wraps it (metadata is copied by reference), which is how
 * a wrapped method recognises that an interceptor already holds its lock.
 */
export interface LockedMetadata {
  /** `@Locked on Class.method`, for messages. */
  readonly where: string;
  /** The templates, for a template resource; empty for a resource function. */
  readonly templates: readonly ResourceTemplate[];
  /** Names the resources of one call. @throws LockResourceError */
  readonly resolve: (context: LockedContext) => string[];
  /** The lock options (validated), passed to `acquire()` and `session()`. */
  readonly lockOptions: Readonly<LockOptions>;
  readonly mapError?: LockedErrorMapper;
}

/**
 * Parses and validates what `@Locked` was given.
 * @throws RedlockConfigError for a malformed template or a bad option.
 */
export function buildLockedMetadata(
  resource: LockedResource,
  options: LockedOptions | undefined,
  where: string,
): LockedMetadata {
  const lockOptions = validateLockedOptions(options, where);
  const mapError = options?.mapError;
  if (typeof resource === 'function') {
    return Object.freeze({
      where,
      templates: [],
      resolve: (context: LockedContext) => checkResolved(resource(context), where),
      lockOptions,
      mapError,
    });
  }
  const list: readonly unknown[] = typeof resource === 'string' ? [resource] : resource;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RedlockConfigError(
      `${where} resource`,
      resource,
      'must be a template, a non-empty array of templates, or a function',
    );
  }
  const templates = list.map((template) => parseResourceTemplate(template as string, where));
  return Object.freeze({
    where,
    templates,
    resolve: (context: LockedContext) => templates.map((t) => t.render(context)),
    lockOptions,
    mapError,
  });
}

/** The `@Locked` metadata of a method, if it has any. */
export function getLockedMetadata(method: unknown): LockedMetadata | undefined {
  return typeof method === 'function' ? Reflect.getMetadata(LOCKED_METADATA, method) : undefined;
}

/**
 * A resource function's result must name at least one non-empty string. Like a template
 * value, a bad result usually comes from the request (`ctx.request.params.id` is undefined),
 * so it is a LockResourceError; a Promise is a programming error and says so.
 */
function checkResolved(result: unknown, where: string): string[] {
  if (typeof result === 'object' && result !== null && 'then' in result) {
    throw new RedlockConfigError(
      `${where} resource function`,
      result,
      'must return the resource names synchronously, not a Promise',
    );
  }
  const names = typeof result === 'string' ? [result] : result;
  if (
    !Array.isArray(names) ||
    names.length === 0 ||
    !names.every((n) => typeof n === 'string' && n.length > 0)
  ) {
    throw new LockResourceError(
      // No class or method name: over HTTP this message is the 400 body.
      'A @Locked resource function must return a non-empty string or a non-empty array of them',
      result,
    );
  }
  return names as string[];
}
