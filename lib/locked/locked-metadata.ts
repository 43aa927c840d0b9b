import { LockResourceError, RedlockConfigError, type LockOptions } from '../core';
import type { LockedErrorMapper } from '../exceptions/locked-error-mapper';
import type { BoundArguments } from './bound-arguments';
import type { LockedContext } from './locked-context';
import {
  minHoldOf,
  validateLockedOptions,
  type LockedOnBusy,
  type LockedOptions,
} from './locked-options';
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
 * How a decorated method returns, which decides how a lock can be held around it:
 * - `async`: an `async` method — held until its Promise settles;
 * - `asyncGenerator`: an `async *` method — held from its first step until it finishes;
 * - `sync`: anything else. A lock cannot be taken synchronously, so only the interceptor (for a
 *   handler Nest calls) can lock it; the bootstrap refuses it where the wrapper would have to.
 */
export type LockedMethodKind = 'async' | 'asyncGenerator' | 'sync';

/**
 * What `@Locked` leaves on a method, built once at decoration time, and shared (by reference)
 * by the interceptor and the method wrapper: that identity is how the wrapper recognises that
 * the interceptor already holds the lock for this very invocation.
 */
export interface LockedMetadata {
  /** `@Locked on Class.method`, for messages. */
  readonly where: string;
  /** The templates, for a template resource; empty for a resource function. */
  readonly templates: readonly ResourceTemplate[];
  /** The decorated method's property key, to find its route-argument metadata. */
  readonly key: string | symbol;
  /** True when a placeholder reads `{args.N}` (the method's own arguments). */
  readonly readsArguments: boolean;
  /** How the method returns (see {@link LockedMethodKind}). */
  readonly kind: LockedMethodKind;
  /** Positions of `@CurrentLock()` parameters, filled in by the wrapper when it takes the lock. */
  readonly currentLockParams: readonly number[];
  /**
   * Names the resources of one call; for a handler call, `bound` gives what the handler
   * received after its pipes (see `boundArguments`). @throws LockResourceError
   */
  readonly resolve: (context: LockedContext, bound?: BoundArguments) => string[];
  /** The lock options (validated), passed to `acquire()` and `session()`. */
  readonly lockOptions: Readonly<LockOptions>;
  readonly mapError?: LockedErrorMapper;
  /** What a call does when the lock is held elsewhere (see `LockedOptions.onBusy`). */
  readonly onBusy: LockedOnBusy;
  /** Shortest hold in ms from the acquisition (see `LockedOptions.minHold`). */
  readonly minHold: number;
}

/**
 * Parses and validates what `@Locked` was given.
 * @throws RedlockConfigError for a malformed template or a bad option.
 */
export function buildLockedMetadata(
  resource: LockedResource,
  options: LockedOptions | undefined,
  where: string,
  method: {
    kind: LockedMethodKind;
    key?: string | symbol;
    currentLockParams?: readonly number[];
  } = { kind: 'async' },
): LockedMetadata {
  const lockOptions = validateLockedOptions(options, where);
  const mapError = options?.mapError;
  const onBusy = options?.onBusy ?? 'throw';
  const minHold = minHoldOf(options);
  const kind = method.kind;
  const key = method.key ?? '';
  const currentLockParams = Object.freeze([...(method.currentLockParams ?? [])]);
  if (typeof resource === 'function') {
    return Object.freeze({
      where,
      templates: [],
      readsArguments: false,
      kind,
      key,
      currentLockParams,
      resolve: (context: LockedContext) => checkResolved(resource(context), where),
      lockOptions,
      mapError,
      onBusy,
      minHold,
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
  // Every placeholder is rendered at one moment (inside the call, after guards and pipes), so
  // arguments and request values can be mixed in one lock.
  const sources = new Set(templates.flatMap((t) => t.placeholders.map((p) => p.source)));
  return Object.freeze({
    where,
    templates,
    readsArguments: sources.has('args'),
    kind,
    key,
    currentLockParams,
    resolve: (context: LockedContext, bound?: BoundArguments) =>
      templates.map((t) => t.render(context, bound)),
    lockOptions,
    mapError,
    onBusy,
    minHold,
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
