// The docs cells of the compat matrix (test/compat/run.mjs: docs-nest11-cjs, docs-nest12-esm).
// Before this spec runs, scripts/check-doc-examples.js compiled every TypeScript example of
// README.md and docs/ in this app (a Nest 11 CommonJS or a Nest 12 ESM app, installed from the
// packed package), with emit, into dist-doc-examples/. Here the headline examples boot as they
// were compiled, against the cell's three real redis-server nodes: the README's minimal app
// (sample/minimal/) and docs/recipes.md's GraphQL recipe (sample/recipes/graphql/), each alone.
// Plain JavaScript on node:test: the same file runs in both kinds of app.
/* global fetch */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

const nodes = process.env.REDLOCK_COMPAT_NODES;
if (!nodes) throw new Error('REDLOCK_COMPAT_NODES is not set: run npm run test:compat');
// What the examples read, as a user's environment would give it.
process.env.LOCK_NODES = nodes;

const app = process.cwd();
const esm = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')).type === 'module';
const compiled = (file) => path.join(app, 'dist-doc-examples', 'included', 'sample', file);
/** A compiled example's exports, loaded as this kind of app loads its own files. */
const load = async (file) =>
  esm ? import(pathToFileURL(compiled(file)).href) : createRequire(import.meta.url)(compiled(file));

const { NestFactory } = await import('@nestjs/core');

/** The example's AppModule, served on a free loopback port. */
async function serve(file) {
  const { AppModule } = await load(file);
  const nest = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  await nest.listen(0, '127.0.0.1');
  return { nest, url: await nest.getUrl() };
}

const post = async (url, body) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
};

describe("the README's minimal app (sample/minimal)", () => {
  let served;
  before(async () => (served = await serve('minimal/app.module.js')));
  after(() => served?.nest.close());

  it('answers the README\'s curl: POST /stock/42/decrement → {"id":42,"quantity":99}', async () => {
    assert.deepEqual(await post(`${served.url}/stock/42/decrement`), {
      status: 201,
      body: { id: 42, quantity: 99 },
    });
  });

  it('is exact under 20 concurrent decrements', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => post(`${served.url}/stock/1/decrement`)),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(20).fill(201),
    );
    const quantities = responses.map((r) => r.body.quantity).sort((a, b) => a - b);
    assert.deepEqual(
      quantities,
      Array.from({ length: 20 }, (_, i) => 80 + i),
    );
    console.log(
      `exclusion: minimal app, 20 concurrent decrements → ${quantities[0]}..${quantities[19]}`,
    );
  });

  it('restock takes the same lock through RedlockService', async () => {
    assert.deepEqual(await post(`${served.url}/stock/2/restock`, { units: 5 }), {
      status: 201,
      body: { id: 2, quantity: 105 },
    });
  });
});

describe("docs/recipes.md's GraphQL recipe (sample/recipes/graphql), alone", () => {
  let served;
  before(async () => (served = await serve('recipes/graphql/app.module.js')));
  after(() => served?.nest.close());

  const graphql = (query, variables) => post(`${served.url}/graphql`, { query, variables });
  const CLOSE = 'mutation ($email: String!) { closeAccount(email: $email) }';

  it('boots and answers its query', async () => {
    const answer = await graphql('query ($email: String!) { isClosed(email: $email) }', {
      email: 'a@example.com',
    });
    assert.deepEqual(answer.body, { data: { isClosed: false } });
  });

  it('closes an account once under 10 concurrent mutations', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => graphql(CLOSE, { email: 'b@example.com' })),
    );
    const closed = answers.filter((a) => a.body.data?.closeAccount === true).length;
    const already = answers.filter((a) => a.body.data?.closeAccount === false).length;
    assert.deepEqual({ closed, already }, { closed: 1, already: 9 });
    console.log(`exclusion: GraphQL recipe, 10 concurrent closeAccount → ${closed} closed it`);
  });
});
