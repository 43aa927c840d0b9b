import 'reflect-metadata';
import { LockResourceError, RedlockConfigError } from '../../lib';
import type { LockedContext } from '../../lib';
import { parseResourceTemplate } from '../../lib/locked/resource-template';

const http = (request: Record<string, unknown>): LockedContext => ({
  args: [request],
  request,
  data: undefined,
  executionContext: undefined,
});
const rpc = (data: unknown, args: unknown[] = [data]): LockedContext => ({
  args,
  request: undefined,
  data,
  executionContext: undefined,
});
const provider = (...args: unknown[]): LockedContext => ({
  args,
  request: undefined,
  data: undefined,
  executionContext: undefined,
});

/** The log line (diagnostic) of the LockResourceError `render` throws. */
function diagnosticOf(render: () => unknown): string {
  try {
    render();
  } catch (error) {
    if (error instanceof LockResourceError) return error.diagnostic;
    throw error;
  }
  throw new Error('rendered without an error');
}

describe('resource templates: parsing', () => {
  it('parses {id} as the route parameter and names sources explicitly', () => {
    const t = parseResourceTemplate(
      'stock:{id}:{query.q}:{body.a.b}:{user.id}:{data.x}:{args.2.y}',
    );
    expect(t.placeholders.map((p) => [p.source, p.path])).toEqual([
      ['params', ['id']],
      ['query', ['q']],
      ['body', ['a', 'b']],
      ['user', ['id']],
      ['data', ['x']],
      ['args', ['2', 'y']],
    ]);
  });

  it('lower-cases header names once, at parse time (Node delivers them lower-case)', () => {
    const t = parseResourceTemplate('tenant:{headers.X-Tenant}');
    expect(t.placeholders[0].path).toEqual(['x-tenant']);
    expect(t.render(http({ headers: { 'x-tenant': 'acme' } }))).toBe('tenant:acme');
  });

  it('treats {{ and }} as literal braces', () => {
    expect(parseResourceTemplate('a{{b}}c').render(http({}))).toBe('a{b}c');
    expect(parseResourceTemplate('{{{id}}}').render(http({ params: { id: '7' } }))).toBe('{7}');
  });

  it('renders a template without placeholders as a constant', () => {
    const t = parseResourceTemplate('reports:daily');
    expect(t.placeholders).toEqual([]);
    expect(t.render(provider())).toBe('reports:daily');
  });

  it.each([
    ['', /must not be empty/],
    ['stock:{}', /empty placeholder/],
    ['stock:{unknown.x}', /unknown source "unknown"/],
    ['stock:{id', /unbalanced "\{"/],
    ['stock:id}', /unbalanced "\}"/],
    ['stock:{a{b}}', /unbalanced "\{"/],
    ['stock:{{id}', /unbalanced "\}"/],
    ['stock:{args.x}', /numeric argument index/],
    ['stock:{args.01}', /numeric argument index/],
    ['stock:{args}', /names a whole source/],
    ['stock:{params}', /names a whole source/],
    ['stock:{body}', /names a whole source/],
    ['stock:{params..id}', /empty path segment/],
    ['stock:{.id}', /empty path segment/],
    ['stock:{id.}', /empty path segment/],
    ['stock:{ id }', /whitespace/],
    ['stock:{headers.a.b}', /one header by name/],
  ])('rejects %p with RedlockConfigError (%p)', (template, message) => {
    let caught: unknown;
    try {
      parseResourceTemplate(template, '@Locked on X.y');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RedlockConfigError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).toContain('@Locked on X.y');
  });

  it('rejects a non-string template', () => {
    expect(() => parseResourceTemplate(42 as never)).toThrow(RedlockConfigError);
  });
});

describe('resource templates: values', () => {
  const t = parseResourceTemplate('stock:{id}');

  it('accepts non-empty strings (any characters: a value is data) and finite numbers', () => {
    expect(t.render(http({ params: { id: '42' } }))).toBe('stock:42');
    expect(t.render(http({ params: { id: 'a:{b}*?' } }))).toBe('stock:a:{b}*?');
    expect(t.render(http({ params: { id: 7 } }))).toBe('stock:7');
    expect(t.render(http({ params: { id: 0 } }))).toBe('stock:0');
    expect(t.render(http({ params: { id: -1.5 } }))).toBe('stock:-1.5');
  });

  it.each([
    ['missing', {}, /params.id is missing/],
    ['undefined', { id: undefined }, /params.id is missing/],
    ['empty', { id: '' }, /an empty string/],
    ['whitespace only', { id: ' \t ' }, /only whitespace/],
    ['null', { id: null }, /got null/],
    ['NaN', { id: NaN }, /got NaN/],
    ['Infinity', { id: Infinity }, /got Infinity/],
    ['an object', { id: { a: 1 } }, /got an object/],
    ['an array (repeated query parameter)', { id: ['1', '2'] }, /got an array/],
    ['a boolean', { id: true }, /got a boolean/],
  ])('rejects %s with LockResourceError — never stock:undefined', (_label, params, message) => {
    let caught: unknown;
    try {
      t.render(http({ params }));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(LockResourceError);
    // The detail (placeholder, template) is for logs; the message, which a caller may read,
    // names neither (issue 25).
    expect((caught as LockResourceError).diagnostic).toMatch(message);
    expect((caught as Error).message).not.toMatch(/params|stock|\{/);
  });

  it('fails when the source itself is absent (no request, no params)', () => {
    expect(diagnosticOf(() => t.render(provider('42')))).toMatch(/params.id is missing/);
    expect(() => t.render(http({}))).toThrow(LockResourceError);
  });

  it('reads own properties only, never prototypes', () => {
    const ctor = parseResourceTemplate('x:{body.constructor.name}');
    expect(diagnosticOf(() => ctor.render(http({ body: {} })))).toMatch(
      /body.constructor.name is missing/,
    );
    const proto = parseResourceTemplate('x:{body.__proto__}');
    // JSON.parse makes "__proto__" an ordinary own key: it is data like any other.
    expect(proto.render(http({ body: JSON.parse('{"__proto__": "p"}') }))).toBe('x:p');
    expect(() => proto.render(http({ body: {} }))).toThrow(LockResourceError);
  });

  it('does not traverse through scalars', () => {
    expect(
      diagnosticOf(() =>
        parseResourceTemplate('{body.sku.length}').render(http({ body: { sku: 'abc' } })),
      ),
    ).toMatch(/body.sku.length is missing/);
  });

  it('reads null-prototype objects (Express 5 query)', () => {
    const query = Object.assign(Object.create(null), { q: 'x' });
    expect(parseResourceTemplate('{query.q}').render(http({ query }))).toBe('x');
  });

  it('reads the RPC/WS payload, whole or by path', () => {
    expect(parseResourceTemplate('order:{data}').render(rpc('o-1'))).toBe('order:o-1');
    expect(parseResourceTemplate('order:{data.id}').render(rpc({ id: 9 }))).toBe('order:9');
    expect(() => parseResourceTemplate('order:{data}').render(rpc({ id: 9 }))).toThrow(
      /got an object/,
    );
  });

  it('reads provider call arguments by index', () => {
    const tpl = parseResourceTemplate('job:{args.0}:{args.1.day}');
    expect(tpl.render(provider('a', { day: '2024-01-01' }))).toBe('job:a:2024-01-01');
    expect(diagnosticOf(() => tpl.render(provider('a')))).toMatch(/args.1.day is missing/);
  });

  it('reads the authenticated user and headers from the request', () => {
    const tpl = parseResourceTemplate('u:{user.id}:{headers.x-tenant}');
    expect(tpl.render(http({ user: { id: 5 }, headers: { 'x-tenant': 't' } }))).toBe('u:5:t');
    expect(diagnosticOf(() => tpl.render(http({ headers: { 'x-tenant': 't' } })))).toMatch(
      /user.id is missing/,
    );
  });

  it('never echoes a rejected value in the message', () => {
    try {
      t.render(http({ params: { id: { secret: 'hunter2' } } }));
    } catch (error) {
      expect((error as Error).message).not.toContain('hunter2');
    }
    expect.assertions(1);
  });
});
