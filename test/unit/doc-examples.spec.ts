import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The docs' TypeScript examples, as scripts/check-doc-examples.js reads them (it type-checks them
 * against dist/ in CI, after the build). What needs no build is checked here, in `npm test`: the
 * README's headline example and its minimal app are the files of sample/minimal/, verbatim —
 * the files test/e2e/minimal-app.spec.ts boots against real Redis nodes; so is docs/recipes.md's
 * GraphQL recipe (sample/recipes/graphql/, booted by test/e2e/recipe-graphql.spec.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { root, allBlocks, extractBlocks } = require('../../scripts/doc-examples/extract') as {
  root: string;
  allBlocks(): DocBlock[];
  extractBlocks(doc: string): DocBlock[];
};

interface DocBlock {
  doc: string;
  line: number;
  kind: 'file' | 'fragment' | 'members' | 'statements';
  code: string;
  include?: string;
  beside?: string;
  skip?: string;
}

const MINIMAL_APP = ['app.module.ts', 'main.ts', 'stock.controller.ts', 'stock.service.ts'].map(
  (name) => `sample/minimal/${name}`,
);

/** docs/recipes.md's GraphQL recipe: the files test/e2e/recipe-graphql.spec.ts boots, alone. */
const GRAPHQL_RECIPE = ['account.resolver.ts', 'app.module.ts'].map(
  (name) => `sample/recipes/graphql/${name}`,
);

describe('doc examples', () => {
  const blocks = allBlocks();

  it('finds the examples of README.md and docs/*.md', () => {
    const docs = new Set(blocks.map((b) => b.doc));
    expect(docs).toContain('README.md');
    expect(docs).toContain('docs/locked.md');
    expect(blocks.length).toBeGreaterThan(20);
  });

  it('the README opens with the minimal app controller, whole', () => {
    const [first] = extractBlocks('README.md');
    expect(first.include).toBe('sample/minimal/stock.controller.ts');
    expect(first.kind).toBe('file');
  });

  it('the README includes every file of the minimal app', () => {
    const included = extractBlocks('README.md').map((b) => b.include);
    for (const file of MINIMAL_APP) expect(included).toContain(file);
    expect(fs.readdirSync(path.join(root, 'sample/minimal')).sort()).toEqual(
      MINIMAL_APP.map((f) => path.basename(f)),
    );
  });

  it('docs/recipes.md includes every file of the GraphQL recipe', () => {
    const included = extractBlocks('docs/recipes.md').map((b) => b.include);
    for (const file of GRAPHQL_RECIPE) expect(included).toContain(file);
    expect(fs.readdirSync(path.join(root, 'sample/recipes/graphql')).sort()).toEqual(
      GRAPHQL_RECIPE.map((f) => path.basename(f)),
    );
  });

  it.each(blocks.filter((b) => b.include).map((b) => [`${b.doc}:${b.line}`, b] as const))(
    '%s is its file, verbatim',
    (_where, block) => {
      expect(block.code).toBe(fs.readFileSync(path.join(root, block.include!), 'utf8'));
    },
  );

  it('README.md stays a first page: at most 25 000 bytes (the rest lives in docs/)', () => {
    expect(fs.statSync(path.join(root, 'README.md')).size).toBeLessThanOrEqual(25_000);
  });

  it("the README's install line names the tarball `npm pack` writes for this version", () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      version: string;
    };
    const named = [...readme.matchAll(/nestjs-redlock-([^\s/"`]+)\.tgz/g)].map(([, v]) => v);
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set([version]));
  });

  it('a block left unchecked says why, and imports something this repository lacks', () => {
    for (const block of blocks.filter((b) => b.skip)) {
      const missing = [...block.code.matchAll(/from '([^'.][^']*)'/g)]
        .map(([, specifier]) => specifier)
        .filter((specifier) => {
          try {
            require.resolve(specifier, { paths: [root] });
            return false;
          } catch {
            return true;
          }
        });
      expect({ where: `${block.doc}:${block.line}`, missing: missing.length > 0 }).toEqual({
        where: `${block.doc}:${block.line}`,
        missing: true,
      });
      expect(block.skip).toMatch(/\S/);
    }
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.*)$/gm)].map(([, heading]) => slug(heading)));
}

describe('doc links', () => {
  const docs = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).map((f) => `docs/${f}`)]
    .filter((f) => f.endsWith('.md'))
    .map((f) => [f] as const);

  it.each(docs)('every relative link of %s reaches its file and heading', (doc) => {
    const text = fs.readFileSync(path.join(root, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [file, anchor] = target.split('#');
      const resolved =
        file === '' ? path.join(root, doc) : path.join(root, path.dirname(doc), file);
      if (!fs.existsSync(resolved)) broken.push(target);
      else if (anchor !== undefined && !anchorsOf(resolved).has(anchor)) broken.push(target);
    }
    expect(broken).toEqual([]);
  });
});
