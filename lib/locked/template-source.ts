/**
 * Where a template placeholder reads its value from:
 * - `params`, `query`, `body`, `headers`, `user`: the HTTP request's fields (`request.user` is
 *   what an auth guard attached);
 * - `data`: the RPC message or WebSocket payload;
 * - `args`: the method's own arguments — a provider method's call arguments, or a handler's
 *   parameters after pipes and parameter decorators (`{args.0}` of
 *   `decrement(@Param('id', ParseIntPipe) id: number)` is the number). A template reading `args`
 *   is rendered by the method wrapper inside the call, so it cannot also read the request.
 */
export type TemplateSource = 'params' | 'query' | 'body' | 'headers' | 'user' | 'data' | 'args';
