// The two kinds of app the docs' examples must compile in, as the Nest CLI scaffolds them:
// their package.json `type` and tsconfig compiler options (strict on top: the docs must not rely
// on the scaffold's looser checks). scripts/check-doc-examples.js type-checks every example
// under both; test/compat/run.mjs's docs cells do it again in real Nest 11 and Nest 12 apps
// installed from the packed package, with those apps' own TypeScript.
'use strict';

/** Compiler options both scaffolds share (schematics 11.1 and 12.0). */
const shared = {
  module: 'nodenext',
  moduleResolution: 'nodenext',
  resolvePackageJsonExports: true,
  esModuleInterop: true,
  isolatedModules: true,
  declaration: true,
  removeComments: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  target: 'ES2023',
  sourceMap: true,
  skipLibCheck: true,
  strict: true,
  forceConsistentCasingInFileNames: true,
};

const projects = {
  /**
   * `nest new` with @nestjs/cli 11: CommonJS (no `type`), NodeNext resolution — a relative
   * import may leave out `.js`, since `require` resolves it.
   */
  nest11: {
    title: 'Nest 11 CLI app (CommonJS)',
    type: 'commonjs',
    compilerOptions: shared,
  },
  /**
   * `nest new` with @nestjs/cli 12: ESM (`"type": "module"`), NodeNext resolution — a relative
   * import needs its `.js` extension (TS2835 otherwise), as Node's ESM loader does.
   */
  nest12: {
    title: 'Nest 12 CLI app (ESM, NodeNext)',
    type: 'module',
    compilerOptions: shared,
  },
};

module.exports = { projects };
