import { LockResourceError, RedlockConfigError } from '../core';
import type { BoundArguments } from './bound-arguments';
import type { LockedContext } from './locked-context';
import type { TemplateSource } from './template-source';

export type { TemplateSource } from './template-source';

const SOURCES: readonly TemplateSource[] = [
  'params',
  'query',
  'body',
  'headers',
  'user',
  'data',
  'args',
];

/** Reads each source from a {@link LockedContext}; a source that does not exist is `undefined`. */
const READ_SOURCE: Record<TemplateSource, (context: LockedContext) => unknown> = {
  params: (context) => context.request?.params,
  query: (context) => context.request?.query,
  body: (context) => context.request?.body,
  headers: (context) => context.request?.headers,
  user: (context) => context.request?.user,
  data: (context) => context.data,
  args: (context) => context.args,
};

/**
 * A placeholder, parsed: the source it reads and the property path below it.
 * `{id}` is `{ source: 'params', path: ['id'] }`; `{args.0.sku}` is `{ source: 'args', path: ['0', 'sku'] }`.
 */
export interface TemplatePlaceholder {
  readonly source: TemplateSource;
  readonly path: readonly string[];
  /** The placeholder as the user should read it in an error, e.g. `params.id`. */
  readonly label: string;
}

/** A resource template, parsed once: renders a lock resource name from a {@link LockedContext}. */
export interface ResourceTemplate {
  /** The template as written, e.g. `stock:{id}`. */
  readonly template: string;
  /** The placeholders, in order of appearance. */
  readonly placeholders: readonly TemplatePlaceholder[];
  /**
   * The resource name for this call. With `bound` (a handler call), a placeholder the handler
   * binds reads the value it received, after its pipes; the others read `context`.
   * @throws LockResourceError when a placeholder's value is missing, empty or not a scalar.
   */
  render(context: LockedContext, bound?: BoundArguments): string;
}

type Part = string | TemplatePlaceholder;

/**
 * Parses a resource template such as `stock:{id}` or `tenant:{headers.x-tenant}:{body.sku}`.
 *
 * Syntax: text with `{placeholder}`s; `{{` and `}}` stand for literal braces. A placeholder is
 * `name` (the route parameter `name`), `source.path.to.value` with a source among `params`,
 * `query`, `body`, `headers` (one header name, case-insensitive), `user`, `data`, or
 * `args.N.path` with a numeric index. `{data}` alone is the whole RPC/WebSocket payload, for
 * handlers whose message is a bare id.
 *
 * Parsing happens when `@Locked` is applied — at class definition, i.e. bootstrap — so a
 * malformed template stops the app from starting instead of failing on every request.
 *
 * @param where names the decorated method in error messages, e.g. `@Locked on StockController.decrement`.
 * @throws RedlockConfigError for a malformed template.
 * @example
 * parseResourceTemplate('stock:{id}').render(context) // 'stock:42' for the route param id=42
 */
export function parseResourceTemplate(template: string, where = '@Locked'): ResourceTemplate {
  const invalid = (requirement: string) =>
    new RedlockConfigError(`${where} resource template`, template, requirement);
  if (typeof template !== 'string') throw invalid('must be a string');
  if (template.length === 0) throw invalid('must not be empty: a lock needs a resource name');

  const parts: Part[] = [];
  let text = '';
  for (let i = 0; i < template.length; i++) {
    const char = template[i];
    if (char === '}') {
      if (template[i + 1] === '}') {
        text += '}';
        i++;
        continue;
      }
      throw invalid(`has an unbalanced "}" at position ${i} (write "}}" for a literal brace)`);
    }
    if (char !== '{') {
      text += char;
      continue;
    }
    if (template[i + 1] === '{') {
      text += '{';
      i++;
      continue;
    }
    const close = template.indexOf('}', i + 1);
    const nested = template.indexOf('{', i + 1);
    if (close === -1 || (nested !== -1 && nested < close)) {
      throw invalid(`has an unbalanced "{" at position ${i} (write "{{" for a literal brace)`);
    }
    if (text !== '') parts.push(text);
    text = '';
    parts.push(parsePlaceholder(template.slice(i + 1, close), invalid));
    i = close;
  }
  if (text !== '') parts.push(text);

  const placeholders = parts.filter((p): p is TemplatePlaceholder => typeof p !== 'string');
  if (placeholders.length === 0) {
    // A constant key: nothing to read per call.
    const constant = parts.join('');
    return { template, placeholders, render: () => constant };
  }
  return {
    template,
    placeholders,
    render(context, bound) {
      let out = '';
      for (const part of parts) {
        out += typeof part === 'string' ? part : renderPlaceholder(template, part, context, bound);
      }
      return out;
    },
  };
}

function parsePlaceholder(
  body: string,
  invalid: (requirement: string) => RedlockConfigError,
): TemplatePlaceholder {
  if (body === '') throw invalid('has an empty placeholder "{}"');
  if (/\s/.test(body)) throw invalid(`has whitespace in placeholder "{${body}}"`);
  const segments = body.split('.');
  if (segments.some((s) => s === '')) throw invalid(`has an empty path segment in "{${body}}"`);

  const [head, ...rest] = segments;
  if (rest.length === 0) {
    // `{id}` is the route parameter — the common case, so it gets the short form.
    if (head === 'data') return { source: 'data', path: [], label: 'data' };
    if (isSource(head)) {
      throw invalid(
        `"{${head}}" names a whole source; name a value inside it, e.g. {${head === 'args' ? 'args.0' : `${head}.id`}}` +
          (head === 'args' ? '' : ` (or {params.${head}} for a route parameter called ${head})`),
      );
    }
    return { source: 'params', path: [head], label: `params.${head}` };
  }
  if (!isSource(head)) {
    throw invalid(
      `has an unknown source "${head}" in "{${body}}" (expected one of ${SOURCES.join(', ')})`,
    );
  }
  if (head === 'args' && !/^(0|[1-9]\d*)$/.test(rest[0])) {
    throw invalid(`needs a numeric argument index in "{${body}}", e.g. {args.0}`);
  }
  if (head === 'headers') {
    if (rest.length > 1)
      throw invalid(`reads one header by name in "{${body}}", e.g. {headers.x-tenant}`);
    // Node (and Fastify) lower-case incoming header names; the template may not.
    rest[0] = rest[0].toLowerCase();
  }
  return { source: head, path: rest, label: [head, ...rest].join('.') };
}

function isSource(name: string): name is TemplateSource {
  return (SOURCES as readonly string[]).includes(name);
}

function renderPlaceholder(
  template: string,
  placeholder: TemplatePlaceholder,
  context: LockedContext,
  bound: BoundArguments | undefined,
): string {
  const path = placeholder.path;
  // Where the value is read from: what the handler received for the placeholder's first key
  // (its path then starts after it), for the whole source, or else the raw request. No
  // object or array per call: this runs on every request.
  let from = 0;
  let value: unknown;
  const byKey = bound?.(placeholder.source, path[0]);
  if (byKey !== undefined) {
    value = byKey.value;
    from = 1;
  } else {
    const whole = bound?.(placeholder.source, undefined);
    value = whole !== undefined ? whole.value : READ_SOURCE[placeholder.source](context);
  }
  let missing = value === undefined;
  for (let i = from; i < path.length; i++) {
    const key = path[i];
    if (missing) break;
    // Own properties only: a value like `{body.constructor}` must not reach into prototypes
    // (and `__proto__` in a JSON body is an ordinary own key there).
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) {
      missing = true;
      break;
    }
    value = (value as Record<string, unknown>)[key];
    missing = value === undefined;
  }
  if (missing) {
    // The template and the placeholder only in the log line: the message is what a caller (an
    // HTTP client, a queue's dashboard) may read (architecture.md §5.12).
    throw new LockResourceError(
      'A value the lock is named from is missing',
      undefined,
      `Lock resource "${template}": ${placeholder.label} is missing`,
    );
  }
  return templateValue(template, placeholder, value);
}

/**
 * Where a placeholder's path starts: the handler's piped value for its first key (`@Param('id')`
 * for `{id}`), else the piped whole source (`@Param()`), else the raw source of the context.
 */
function templateValue(template: string, placeholder: TemplatePlaceholder, value: unknown): string {
  // Whitespace alone names nothing: `v:   ` would be one lock for every blank value.
  if (typeof value === 'string' && value.trim().length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  const said = `must be a non-empty string or a finite number, got ${describeKind(value)}`;
  throw new LockResourceError(
    `A value the lock is named from ${said}`,
    value,
    `Lock resource "${template}": ${placeholder.label} ${said}`,
  );
}

/** The kind of a rejected value, without its content (it may come from a client). */
function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return value.length === 0 ? 'an empty string' : 'only whitespace';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
