// Type-checks every TypeScript example of README.md and docs/*.md against the BUILT package
// (run `npm run build` first), as a user's app compiles it: strict, experimentalDecorators,
// emitDecoratorMetadata, isolatedModules (the Nest CLI's settings), `nestjs-redlock` resolved
// through the package's own package.json to dist/. See doc-examples/extract.js for the kinds of
// example and how a block is marked. Also fails when an included file differs from its block.
//
//   node scripts/check-doc-examples.js        (.ci/run runs it after the build)
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { root, allBlocks } = require('./doc-examples/extract');

const work = path.join(root, 'node_modules', '.cache', 'doc-examples');
const failures = [];

function main() {
  if (!fs.existsSync(path.join(root, 'dist', 'index.d.ts'))) {
    console.error('dist/ is missing: run `npm run build` first');
    process.exit(1);
  }
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(path.join(work, 'node_modules'), { recursive: true });
  // The package as an app resolves it: node_modules/nestjs-redlock → this repository (its
  // package.json `exports` point at dist/). Everything else resolves from the repository's
  // node_modules, the parent folders of this one.
  fs.symlinkSync(root, path.join(work, 'node_modules', 'nestjs-redlock'), 'dir');

  const prelude = fs.readFileSync(path.join(__dirname, 'doc-examples', 'prelude.ts'), 'utf8');
  const preludeLines = prelude.split('\n').length - 1;
  /** file written → { doc, line, offset }: maps tsc's line numbers back to the document. */
  const origins = new Map();
  const files = [path.join(__dirname, 'doc-examples', 'globals.d.ts')];
  const skipped = [];
  let checked = 0;

  for (const block of allBlocks()) {
    const where = `${block.doc}:${block.line}`;
    if (block.skip) {
      skipped.push(`${where} — ${block.skip}`);
      continue;
    }
    let relative;
    let text;
    let offset = 0;
    if (block.include) {
      const source = path.join(root, block.include);
      if (!fs.existsSync(source)) {
        failures.push(`${where}: includes ${block.include}, which does not exist`);
        continue;
      }
      if (fs.readFileSync(source, 'utf8') !== block.code) {
        failures.push(
          `${where}: differs from ${block.include} (the block must be the file verbatim)`,
        );
      }
      if (block.kind !== 'file') failures.push(`${where}: an included file is a whole file`);
      relative = path.join('included', block.include);
      text = block.code;
    } else {
      const name = `${block.doc.replace(/[/.]/g, '_')}_L${block.line}.ts`;
      relative = block.beside
        ? path.join('included', block.beside, name)
        : path.join('blocks', name);
      if (block.kind === 'file') {
        text = block.code;
      } else if (block.kind === 'fragment') {
        text = prelude + block.code;
        offset = preludeLines;
      } else {
        const head = [
          "@Controller('doc-example')",
          'export class DocExample {',
          '  constructor(',
          '    private readonly redlock: RedlockService,',
          '    private readonly stock: any, // eslint-disable-line',
          '    private readonly payments: any, // eslint-disable-line',
          '    private readonly indexer: any, // eslint-disable-line',
          '  ) {}',
          ...(block.kind === 'statements' ? ['  async run(): Promise<void> {'] : []),
        ];
        const tail = [...(block.kind === 'statements' ? ['  }'] : []), '}', ''];
        text = prelude + head.join('\n') + '\n' + block.code + tail.join('\n');
        offset = preludeLines + head.length;
      }
    }
    const file = path.join(work, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    origins.set(file, { doc: block.doc, line: block.line, offset });
    files.push(file);
    checked++;
  }

  // Two passes, one per build of the package: a CommonJS app (`require` → dist/index.d.ts, as a
  // Nest 11 CLI project compiles) and an ESM one (`import` → dist/index.d.mts).
  // The folder's package.json `type` says which format the examples are, as in an app.
  const passes = {
    commonjs: { module: 'nodenext', moduleResolution: 'nodenext' },
    module: { module: 'esnext', moduleResolution: 'bundler' },
  };
  let output = '';
  for (const [name, resolution] of Object.entries(passes)) {
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: name }));
    const tsconfig = path.join(work, `tsconfig.${name}.json`);
    fs.writeFileSync(
      tsconfig,
      JSON.stringify(
        {
          compilerOptions: {
            strict: true,
            experimentalDecorators: true,
            emitDecoratorMetadata: true,
            isolatedModules: true,
            target: 'ES2022',
            lib: ['ES2022', 'esnext.disposable'],
            ...resolution,
            esModuleInterop: true,
            skipLibCheck: true,
            noEmit: true,
            types: ['node'],
            typeRoots: [path.join(root, 'node_modules', '@types')],
          },
          files,
        },
        null,
        2,
      ),
    );
    try {
      execFileSync(
        process.execPath,
        [
          path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
          '-p',
          tsconfig,
          '--pretty',
          'false',
        ],
        { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
    } catch (error) {
      const out = `${error.stdout ?? ''}${error.stderr ?? ''}`;
      if (out.trim() === '') throw error;
      output += out
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => (/^(.+?)\((\d+),(\d+)\): /.test(l) ? `${l} [${name}]` : l))
        .join('\n');
      output += '\n';
    }
  }
  for (const line of output.split('\n').filter((l) => l.trim() !== '')) {
    const at = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(line);
    const origin = at && origins.get(path.resolve(work, at[1]));
    if (!origin) {
      failures.push(line);
      continue;
    }
    const codeLine = Number(at[2]) - origin.offset;
    failures.push(
      codeLine >= 1
        ? `${origin.doc}:${origin.line + codeLine - 1}:${at[3]}: ${at[4]}`
        : `${origin.doc}:${origin.line} (wrapper line ${at[2]}): ${at[4]}`,
    );
  }

  for (const reason of skipped) console.log(`not type-checked: ${reason}`);
  if (failures.length > 0) {
    console.error(`Doc examples failed:\n- ${failures.join('\n- ')}`);
    process.exit(1);
  }
  console.log(
    `doc examples: ${checked} TypeScript blocks type-checked against dist/, as a CommonJS and as an ESM app (strict, decorators, isolatedModules), ${skipped.length} marked not checked`,
  );
}

main();
