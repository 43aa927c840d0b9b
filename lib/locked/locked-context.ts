import type { ExecutionContext } from '@nestjs/common';

/**
 * What a `@Locked` resource function (and a template placeholder) can read to name the lock.
 *
 * For a handler, a resource function (and a template reading the request) is resolved in an
 * interceptor, which Nest runs **before** pipes and parameter decorators. So there `args` are
 * not the handler's parameters after `@Param()`/`@Body()` and validation pipes, but the raw
 * arguments of the execution context (a template naming `{args.N}` is the exception: it is
 * rendered inside the handler call, from the piped parameters):
 *
 * | where                       | `args`                                  | `request`   | `data`                    |
 * |-----------------------------|-----------------------------------------|-------------|---------------------------|
 * | HTTP controller             | `[request, response, next]`             | the request | `undefined`               |
 * | microservice (`rpc`)        | `[data, rpcContext]`                    | `undefined` | the message payload       |
 * | WebSocket gateway (`ws`)    | `[client, data, ...]`                   | `undefined` | the message payload       |
 * | other (e.g. GraphQL)        | `context.getArgs()` (`[root, args, ctx, info]`) | `undefined` | `undefined`     |
 * | provider method             | the method's call arguments             | `undefined` | `undefined`               |
 *
 * `request` and `data` are typed `any` by default (as Nest's `getRequest()` is) so that
 * `ctx.request.params.id` reads naturally; they are `undefined` where the table says so.
 *
 * @example
 * @Locked((ctx: LockedContext) => `stock:${ctx.request.params.id}`)
 *
 * @example
 * // Fastify or Express request types, if you want them checked:
 * @Locked((ctx: LockedContext<Request>) => ctx.request.body.items.map((i: Item) => `sku:${i.sku}`))
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as Nest's getRequest<T = any>(): see above
export interface LockedContext<TRequest = any, TData = any> {
  /** The raw arguments (see the table above); for a handler never its piped parameters. */
  readonly args: readonly unknown[];
  /** The HTTP request (Express or Fastify), or `undefined` outside HTTP. */
  readonly request: TRequest;
  /** The RPC message or WebSocket payload, or `undefined` elsewhere. */
  readonly data: TData;
  /** The handler's execution context, or `undefined` for a provider method. */
  readonly executionContext: ExecutionContext | undefined;
}

/** The {@link LockedContext} of a handler call seen by the interceptor. */
export function lockedContextOf(executionContext: ExecutionContext): LockedContext {
  const args = executionContext.getArgs();
  // The arguments by index, as switchToHttp() & co. read them (they build closures per call).
  switch (executionContext.getType()) {
    case 'http':
      return { args, request: args[0], data: undefined, executionContext };
    case 'rpc':
      return { args, request: undefined, data: args[0], executionContext };
    case 'ws':
      return { args, request: undefined, data: args[1], executionContext };
    default:
      return { args, request: undefined, data: undefined, executionContext };
  }
}

/** The {@link LockedContext} of a direct call to a `@Locked` provider method. */
export function providerLockedContext(args: readonly unknown[]): LockedContext {
  return { args, request: undefined, data: undefined, executionContext: undefined };
}
