import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import type { ExecutionContext } from '@nestjs/common';
import type { TemplateSource } from './template-source';

/**
 * A value a handler received for a template placeholder, after its pipes: `{ value }` when the
 * handler binds it, `undefined` when it does not (the template then reads the raw request).
 */
export type BoundValue = { readonly value: unknown } | undefined;

/**
 * Looks up what a handler received, by source: `bound('params', 'id')` is the argument bound
 * with `@Param('id', …)`; `bound('params', undefined)` the one bound with `@Param()` (the
 * whole, piped, object); `bound('args', '0')` the first argument.
 */
export type BoundArguments = (source: TemplateSource, key: string | undefined) => BoundValue;

/** One entry of Nest's route-argument metadata: `@Param('id', pipe)` at position `index`. */
interface RouteArgument {
  readonly index: number;
  readonly data?: unknown;
}

/**
 * The parameter types (Nest's `RouteParamtypes`, `RpcParamtype`, `WsParamtype`) that bind each
 * source, per context type. Numbers as Nest writes them in its metadata keys (`"5:0"` is
 * `@Param()` on the first parameter); written here so that neither `@nestjs/microservices` nor
 * `@nestjs/websockets` is a dependency. A payload is type 3 in both transports.
 */
const PARAM_TYPES: Readonly<Record<string, Partial<Record<TemplateSource, number>>>> = {
  http: { body: 3, query: 4, params: 5, headers: 6 },
  rpc: { data: 3 },
  ws: { data: 3 },
};

/**
 * What a handler call received, for the templates of its `@Locked` (architecture.md §5.10: `{id}` locks
 * the id the handler receives — `@Param('id', ParseIntPipe)` makes `/stock/042` and `/stock/42`
 * one lock). Read from the arguments Nest passed the method, after guards and pipes, and from
 * the route-argument metadata of the handler's class and method. Custom parameter decorators
 * are not matched: a template then reads the raw request, as it does for an unbound value.
 */
export function boundArguments(
  context: ExecutionContext,
  methodKey: string | symbol,
  args: readonly unknown[],
): BoundArguments {
  const types = PARAM_TYPES[context.getType()] ?? {};
  const entries = routeArguments(context.getClass(), methodKey);
  return (source, key) => {
    if (source === 'args') {
      // {args.N}: the method's own arguments, as received.
      return key !== undefined && Number(key) < args.length
        ? { value: args[Number(key)] }
        : undefined;
    }
    const type = types[source];
    if (type === undefined) return undefined;
    // Header names are case-insensitive: the template lower-cases them, @Headers() may not.
    const same = (data: unknown) =>
      key === undefined
        ? data === undefined
        : typeof data === 'string' &&
          (source === 'headers' ? data.toLowerCase() === key : data === key);
    const found = entries.find((entry) => entry.type === type && same(entry.data));
    return found === undefined ? undefined : { value: args[found.index] };
  };
}

/** A handler's parameter bindings, as read from its route-argument metadata. */
interface BoundParameter {
  readonly type: number;
  readonly index: number;
  readonly data: unknown;
}

/** Read once per handler (decorators wrote them when the class was defined), not per call. */
const parametersOf = new WeakMap<object, Map<string | symbol, readonly BoundParameter[]>>();

function routeArguments(owner: object, methodKey: string | symbol): readonly BoundParameter[] {
  let byMethod = parametersOf.get(owner);
  if (byMethod === undefined) parametersOf.set(owner, (byMethod = new Map()));
  let entries = byMethod.get(methodKey);
  if (entries === undefined) {
    const metadata: Record<string, RouteArgument> | undefined = Reflect.getMetadata(
      ROUTE_ARGS_METADATA,
      owner,
      methodKey,
    );
    entries = Object.entries(metadata ?? {}).map(([key, argument]) => ({
      type: Number(key.split(':')[0]),
      index: argument.index,
      data: argument.data,
    }));
    byMethod.set(methodKey, entries);
  }
  return entries;
}
