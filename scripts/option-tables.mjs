#!/usr/bin/env node
/**
 * The module-option tables of the docs, from one source (issue 26: the defaults were written in
 * four places and the option table twice).
 *
 *   node scripts/option-tables.mjs           rewrite the tables (npm run docs:options)
 *   node scripts/option-tables.mjs --check   fail when a table is stale (CI)
 *
 * Where each part of a row comes from:
 * - the option names, and which are required: the interfaces `RedlockOptions`
 *   (lib/core/options.ts) and `RedlockModuleOptions` (lib/redlock-module-options.ts), read with
 *   the TypeScript parser, so an option added there without a row fails the check;
 * - the defaults: `REDLOCK_DEFAULTS`, the one place the lock manager's defaults are set; for the
 *   options it has no value for (computed, module-only), the option's JSDoc `@default`. Each
 *   `@default` tag of `RedlockOptions` (what editors show) must state `REDLOCK_DEFAULTS`' value,
 *   or this fails too;
 * - the wording: scripts/option-tables.data.mjs.
 * `@Locked`'s own default (`SKIP_MIN_HOLD_MS`, lib/locked/locked-options.ts) is checked against
 * the `@default` of `LockedOptions.minHold` the same way (docs/locked.md has no options table).
 *
 * The tables sit between `<!-- option-table:NAME:start -->` and `<!-- option-table:NAME:end -->`
 * and are formatted with the repository's Prettier settings, so that `prettier --check` agrees.
 * Reads the sources, not dist/: no build needed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import ts from 'typescript';
import { README_MENTIONS, README_ROWS, ROWS, UNDOCUMENTED } from './option-tables.data.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const problems = [];

// ---- the sources --------------------------------------------------------------------------

function parse(path) {
  const text = readFileSync(join(root, path), 'utf8');
  return ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
}

function findInterface(file, name) {
  const found = file.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!found) throw new Error(`${file.fileName}: interface ${name} not found`);
  return found;
}

/** The JSDoc tag `tag` of a declaration, as text (undefined when it has none). */
function jsDocTag(node, tag) {
  const found = ts.getJSDocTags(node).find((t) => t.tagName.text === tag);
  if (!found) return undefined;
  return (ts.getTextOfJSDocComment(found.comment) ?? '').trim();
}

/** An interface's properties: name → { optional, defaultTag, internal }. */
function members(declaration) {
  const result = new Map();
  for (const member of declaration.members) {
    if (!ts.isPropertySignature(member)) continue;
    result.set(member.name.getText(), {
      optional: member.questionToken !== undefined,
      defaultTag: jsDocTag(member, 'default'),
      internal: ts.getJSDocTags(member).some((t) => t.tagName.text === 'internal'),
    });
  }
  return result;
}

/** The value of a literal in the source: the only kinds a default constant may hold. */
function literal(node) {
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (ts.isStringLiteral(node)) return node.text;
  if (node.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (node.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (ts.isIdentifier(node) && node.text === 'Infinity') return Infinity;
  if (ts.isIdentifier(node) && node.text === 'NaN') return NaN;
  if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken) {
    return -literal(node.operand);
  }
  throw new Error(`cannot read the default ${node.getText()} (a literal is expected)`);
}

/** `REDLOCK_DEFAULTS = Object.freeze({ … })`: name → value. */
function redlockDefaults(file) {
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (declaration.name.getText() !== 'REDLOCK_DEFAULTS') continue;
      let init = declaration.initializer;
      if (init && ts.isCallExpression(init)) init = init.arguments[0];
      if (!init || !ts.isObjectLiteralExpression(init)) break;
      const values = new Map();
      for (const property of init.properties) {
        if (ts.isPropertyAssignment(property)) {
          values.set(property.name.getText(), literal(property.initializer));
        }
      }
      return values;
    }
  }
  throw new Error('lib/core/options.ts: REDLOCK_DEFAULTS = Object.freeze({ … }) not found');
}

/** The names of `Omit<RedlockOptions, 'a' | 'b'>` in an interface's `extends`. */
function omittedFromCore(declaration) {
  for (const clause of declaration.heritageClauses ?? []) {
    for (const type of clause.types) {
      const [base, names] = type.typeArguments ?? [];
      if (type.expression.getText() !== 'Omit' || base?.getText() !== 'RedlockOptions') continue;
      const literals = names && ts.isUnionTypeNode(names) ? names.types : [names];
      return literals.map((n) => n.literal.text);
    }
  }
  throw new Error('RedlockModuleOptions: `extends Omit<RedlockOptions, …>` not found');
}

const optionsFile = parse('lib/core/options.ts');
const moduleFile = parse('lib/redlock-module-options.ts');
const core = members(findInterface(optionsFile, 'RedlockOptions'));
const moduleInterface = findInterface(moduleFile, 'RedlockModuleOptions');
const omitted = omittedFromCore(moduleInterface);
const defaults = redlockDefaults(optionsFile);

/** Every option `RedlockModuleOptions` has: its own, then the core's it does not omit. */
const moduleOptions = new Map([
  ...members(moduleInterface),
  ...[...core].filter(([name]) => !omitted.includes(name)),
]);

// ---- defaults: one source, and the JSDoc must agree with it ---------------------------------

/** A default as code: `10000`, `'redlock:'`, `Infinity`, `false`. */
function formatValue(value) {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

for (const [name, value] of defaults) {
  const tag = core.get(name)?.defaultTag;
  if (tag === undefined) {
    problems.push(`RedlockOptions.${name}: no @default tag (REDLOCK_DEFAULTS has it)`);
  } else if (!Number.isNaN(value) && tag !== formatValue(value)) {
    problems.push(
      `RedlockOptions.${name}: @default ${tag}, but REDLOCK_DEFAULTS.${name} is ${formatValue(value)}`,
    );
  }
}

// `@Locked`'s own default (minHold with onBusy: 'skip') is the constant SKIP_MIN_HOLD_MS; the
// JSDoc editors show must state its value.
const lockedFile = parse('lib/locked/locked-options.ts');
const skipMinHold = lockedFile.statements
  .filter(ts.isVariableStatement)
  .flatMap((s) => s.declarationList.declarations)
  .find((d) => d.name.getText() === 'SKIP_MIN_HOLD_MS');
if (!skipMinHold?.initializer) throw new Error('lib/locked/locked-options.ts: SKIP_MIN_HOLD_MS');
const minHoldTag = members(findInterface(lockedFile, 'LockedOptions')).get('minHold')?.defaultTag;
const skipValue = formatValue(literal(skipMinHold.initializer));
if (!new RegExp(`^${skipValue}\\b`).test(minHoldTag ?? '')) {
  problems.push(
    `LockedOptions.minHold: @default ${minHoldTag}, but SKIP_MIN_HOLD_MS is ${skipValue}`,
  );
}

/** The default column of an option. */
function defaultCell(name) {
  const option = moduleOptions.get(name);
  if (!option.optional) return '(required)';
  const value = defaults.get(name);
  // NaN in REDLOCK_DEFAULTS: computed from other options, described in words by its @default.
  if (value !== undefined && !Number.isNaN(value)) return `\`${formatValue(value)}\``;
  const tag = option.defaultTag;
  if (tag === undefined) {
    problems.push(`${name}: neither REDLOCK_DEFAULTS nor a @default tag gives its default`);
    return '?';
  }
  if (tag === 'undefined') return '—';
  return /^(-?[\d.]+|Infinity|true|false|'[^']*')$/.test(tag) ? `\`${tag}\`` : tag;
}

// ---- the rows cover every option, and only options ------------------------------------------

const rowNames = ROWS.map((row) => row.name);
for (const [name, option] of moduleOptions) {
  if (option.internal || name in UNDOCUMENTED || rowNames.includes(name)) continue;
  problems.push(`${name}: a module option without a row in scripts/option-tables.data.mjs`);
}
for (const name of [...rowNames, ...README_ROWS, ...Object.keys(UNDOCUMENTED)]) {
  if (!moduleOptions.has(name)) problems.push(`${name}: a row or entry for no module option`);
}
for (const name of README_ROWS) {
  if (ROWS.find((row) => row.name === name)?.readme === undefined) {
    problems.push(`${name}: shown in the README's table without a \`readme\` wording`);
  }
}

// ---- rendering ------------------------------------------------------------------------------

/** A meaning with `{default:name}` replaced by that option's default cell. */
function expand(text) {
  return text.replace(/\{default:(\w+)\}/g, (_, name) => defaultCell(name));
}

function table(rows, meaningOf) {
  const cell = (text) => text.replace(/\|/g, '\\|');
  return [
    '| option | default | meaning |',
    '| --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| \`${row.name}\` | ${cell(defaultCell(row.name))} | ${cell(expand(meaningOf(row)))} |`,
    ),
  ].join('\n');
}

/**
 * Items joined by `, ` into lines of at most `width` columns (Prettier keeps prose as it is
 * wrapped), breaking only between items: a link's text stays on one line.
 */
function wrapList(items, width) {
  const lines = [];
  let line = '';
  for (const word of items.map((item, i) => (i < items.length - 1 ? `${item},` : item))) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  return [...lines, line].join('\n');
}

function readmeBlock() {
  const shown = README_ROWS.map((name) => ROWS.find((row) => row.name === name));
  const named = shown.map((row) => row.readme).join(' ');
  const others = ROWS.filter(
    (row) => !README_ROWS.includes(row.name) && !named.includes(`\`${row.name}\``),
  ).map((row) => README_MENTIONS[row.name] ?? `\`${row.name}\``);
  return `${table(shown, (row) => row.readme)}\n\nand ${wrapList(others, 96)}.`;
}

const TABLES = [
  { file: 'docs/operations.md', name: 'module', render: () => table(ROWS, (row) => row.meaning) },
  { file: 'README.md', name: 'module-readme', render: readmeBlock },
];

/** Each file with its tables rendered, before anything is written: a problem writes nothing. */
const outputs = [];
for (const { file, name, render } of TABLES) {
  const path = join(root, file);
  const text = readFileSync(path, 'utf8');
  const start = `<!-- option-table:${name}:start -->`;
  const end = `<!-- option-table:${name}:end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) {
    problems.push(`${file}: markers ${start} … ${end} not found`);
    continue;
  }
  const config = (await prettier.resolveConfig(path)) ?? {};
  const block = (await prettier.format(render(), { ...config, parser: 'markdown' })).trim();
  const next = `${text.slice(0, from + start.length)}\n\n${block}\n\n${text.slice(to)}`;
  if (next !== text) outputs.push({ file, name, path, next });
}

if (problems.length > 0) {
  console.error(problems.map((p) => `option tables: ${p}`).join('\n'));
  process.exit(1);
}
for (const { file, name, path, next } of outputs) {
  if (check) console.error(`${file}: the table ${name} is stale`);
  else {
    writeFileSync(path, next);
    console.log(`${file}: table ${name} rewritten`);
  }
}
if (check && outputs.length > 0) {
  console.error('Run `npm run docs:options` and commit the result.');
  process.exit(1);
}
if (check) console.log('option tables: up to date');
