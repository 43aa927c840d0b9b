import fc from 'fast-check';
import { LockResourceError, RedlockConfigError } from '../../lib';
import type { LockedContext } from '../../lib/locked/locked-context';
import { parseResourceTemplate } from '../../lib/locked/resource-template';

/**
 * Issue 9 item 4: resource templates, by their public behaviour only (parse, then render).
 *
 * - Parsing any string either gives a template or throws RedlockConfigError — never anything
 *   else, never a template that fails later for a reason the parse could have seen.
 * - No input produces a key outside its template: the key is the template's literal text (with
 *   `{{`/`}}` unescaped) in order, with one non-empty value where each placeholder was.
 * - Distinct inputs produce distinct keys, except in two documented collision classes:
 *   (1) a number and its decimal string render alike (`42` and `'42'`: both are item 42);
 *   (2) with two or more placeholders, a value containing the literal text that separates it
 *   from its neighbour can shift the boundary (`{a}:{b}` renders `x:y` + `z` and `x` + `y:z`
 *   both as `x:y:z`) — pick separators that values cannot contain, or pipe the values
 *   (docs/locked.md).
 */

/** Literal text: any characters, braces included (escaped when written into a template). */
const literal = fc.string({ maxLength: 6 });
const escape = (text: string) => text.replace(/\{/g, '{{').replace(/\}/g, '}}');

/** A placeholder and where its value goes in a context. */
interface Slot {
  readonly written: string;
  readonly put: (context: MutableContext, value: unknown) => void;
}
interface MutableContext {
  args: unknown[];
  request: {
    params: Record<string, unknown>;
    query: Record<string, unknown>;
    body: Record<string, unknown>;
    headers: Record<string, unknown>;
    user: Record<string, unknown>;
  };
  data: Record<string, unknown>;
}

const slotName = fc.constantFrom('id', 'sku', 'x', 'tenant', 'n1');
const slot: fc.Arbitrary<(index: number) => Slot> = fc
  .tuple(
    fc.constantFrom('short', 'params', 'query', 'body', 'headers', 'user', 'data', 'args'),
    slotName,
  )
  .map(([source, name]) => (index: number): Slot => {
    // The index keeps placeholders apart: each reads its own value.
    const key = `${name}${index}`;
    switch (source) {
      case 'short':
        return { written: `{${key}}`, put: (c, v) => (c.request.params[key] = v) };
      case 'headers':
        return {
          written: `{headers.X-${key}}`,
          put: (c, v) => (c.request.headers[`x-${key}`.toLowerCase()] = v),
        };
      case 'data':
        return { written: `{data.${key}}`, put: (c, v) => (c.data[key] = v) };
      case 'args':
        return { written: `{args.${index}.${key}}`, put: (c, v) => (c.args[index] = { [key]: v }) };
      default: {
        const field = source as 'params' | 'query' | 'body' | 'user';
        return { written: `{${field}.${key}}`, put: (c, v) => (c.request[field][key] = v) };
      }
    }
  });

/** A template: literal, placeholder, literal, …, literal. */
const template = fc
  .tuple(fc.array(fc.tuple(slot, literal), { minLength: 1, maxLength: 3 }), literal)
  .map(([pairs, head]) => {
    const slots = pairs.map(([make], i) => make(i));
    const literals = [head, ...pairs.map(([, text]) => text)];
    const text =
      escape(literals[0]) + slots.map((s, i) => s.written + escape(literals[i + 1])).join('');
    return { text, slots, literals };
  });

// A value names something: not empty, not whitespace alone (refused since issue 25).
const value = fc.oneof(
  fc.string({ minLength: 1, maxLength: 8 }).filter((text) => text.trim().length > 0),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.constantFrom(':', 'a:b', '{x}', '}}', '0', '042', 42),
);

const emptyContext = (): MutableContext => ({
  args: [],
  request: { params: {}, query: {}, body: {}, headers: {}, user: {} },
  data: {},
});
const asLocked = (c: MutableContext): LockedContext =>
  ({ ...c, executionContext: undefined }) as unknown as LockedContext;

function render(t: { text: string; slots: readonly Slot[] }, values: readonly unknown[]): string {
  const context = emptyContext();
  t.slots.forEach((s, i) => s.put(context, values[i]));
  return parseResourceTemplate(t.text).render(asLocked(context));
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('resource templates (property tests of the public behaviour)', () => {
  it('any string parses to a template or throws RedlockConfigError, nothing else', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (text) => {
        try {
          parseResourceTemplate(text);
        } catch (error) {
          return error instanceof RedlockConfigError;
        }
        return true;
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('{', '}', '.', 'a', 'args', 'params', '0', ' ', 'headers'), {
          maxLength: 12,
        }),
        (parts) => {
          try {
            parseResourceTemplate(parts.join(''));
          } catch (error) {
            return error instanceof RedlockConfigError;
          }
          return true;
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('a template of literal text alone renders that text, braces unescaped', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), (text) => {
        return parseResourceTemplate(escape(text)).render(asLocked(emptyContext())) === text;
      }),
    );
  });

  it('no input produces a key outside its template: literals in order, a non-empty value in each slot', () => {
    fc.assert(
      fc.property(template, fc.array(value, { minLength: 3, maxLength: 3 }), (t, values) => {
        const key = render(t, values);
        // The template's literals in order, each placeholder filled by at least one character.
        const pattern = new RegExp(`^${t.literals.map(escapeRegExp).join('([\\s\\S]+)')}$`);
        const expected =
          t.literals[0] + t.slots.map((_, i) => String(values[i]) + t.literals[i + 1]).join('');
        return key === expected && pattern.test(key);
      }),
      { numRuns: 1_000 },
    );
  });

  it('distinct inputs give distinct keys, outside the two documented collision classes', () => {
    fc.assert(
      fc.property(
        template,
        fc.array(value, { minLength: 3, maxLength: 3 }),
        fc.array(value, { minLength: 3, maxLength: 3 }),
        (t, first, second) => {
          const n = t.slots.length;
          const a = first.slice(0, n);
          const b = second.slice(0, n);
          if (render(t, a) !== render(t, b)) return true;
          const asText = (vs: unknown[]) => vs.map(String);
          // Class 1: the same text (a number and its decimal string).
          if (asText(a).every((v, i) => v === String(b[i]))) return true;
          // Class 2: a value contains the literal separating two placeholders (or they touch).
          const separators = t.literals.slice(1, n);
          return (
            n > 1 &&
            separators.some(
              (sep) => sep === '' || [...asText(a), ...asText(b)].some((v) => v.includes(sep)),
            )
          );
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('a single placeholder is injective on the text of its value', () => {
    fc.assert(
      fc.property(literal, literal, value, value, (before, after, x, y) => {
        const t = { text: `${escape(before)}{id}${escape(after)}`, slots: [], literals: [] };
        const keyOf = (v: unknown) =>
          parseResourceTemplate(t.text).render(
            asLocked({
              ...emptyContext(),
              request: { ...emptyContext().request, params: { id: v } },
            }),
          );
        return (keyOf(x) === keyOf(y)) === (String(x) === String(y));
      }),
    );
  });

  it('a value that is not a non-empty string or a finite number never renders: LockResourceError', () => {
    const bad = fc.oneof(
      fc.constantFrom('', null, NaN, Infinity, -Infinity, true, false, undefined),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.object({ maxDepth: 1 }),
    );
    fc.assert(
      fc.property(template, bad, fc.nat({ max: 2 }), (t, badValue, at) => {
        const values = t.slots.map((_, i) => (i === at % t.slots.length ? badValue : 'ok'));
        try {
          render(t, values);
          return false;
        } catch (error) {
          return error instanceof LockResourceError;
        }
      }),
      { numRuns: 500 },
    );
  });
});
