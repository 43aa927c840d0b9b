// Type-checks every TypeScript example of README.md and docs/*.md as a user's app compiles it,
// in the two kinds of app the docs claim (doc-examples/projects.js): a Nest 11 CLI app
// (CommonJS) and a Nest 12 CLI app (ESM, NodeNext: a relative import needs its `.js`). See
// doc-examples/extract.js for the kinds of example and how a block is marked. Also fails when an
// included file differs from its block.
//
//   node scripts/check-doc-examples.js
//       Both kinds, against the BUILT package (run `npm run build` first): `nestjs-redlock`
//       resolved through the package's own package.json to dist/ (dist/index.d.ts for the
//       CommonJS pass, dist/index.d.mts for the ESM one), with this repository's TypeScript and
//       packages (Nest 11's types). .ci/run runs it after the build.
//   node scripts/check-doc-examples.js --app <dir> --project nest11|nest12
//       In an installed app (test/compat/run.mjs's docs cells: Nest 11 and Nest 12, installed
//       from the packed package): that app's TypeScript, Nest and `nestjs-redlock`. Compiles
//       with emit, as `nest build` does (declarations included), into <dir>/dist-doc-examples/,
//       where the compat e2e starts the headline examples.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const { root, allBlocks } = require('./doc-examples/extract');
const { projects } = require('./doc-examples/projects');

const failures = [];

/**
 * Writes every checked example under `dir`: included files at `included/<their path>` (so their
 * relative imports reach each other), the others at `blocks/` or beside the files they import.
 * Returns the files written, where each came from, and the blocks marked not checked.
 */
function writeExamples(dir, installed = () => false) {
  const prelude = fs.readFileSync(path.join(__dirname, 'doc-examples', 'prelude.ts'), 'utf8');
  const preludeLines = prelude.split('\n').length - 1;
  /** file written → { doc, line, offset }: maps tsc's line numbers back to the document. */
  const origins = new Map();
  const globals = path.join(dir, 'globals.d.ts');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(__dirname, 'doc-examples', 'globals.d.ts'), globals);
  const files = [globals];
  const skipped = [];

  for (const block of allBlocks()) {
    const where = `${block.doc}:${block.line}`;
    if (block.skip) {
      // Marked because this repository lacks a package it imports: an app that has every one
      // of them checks it all the same.
      const packages = [...block.code.matchAll(/from '([^'.][^']*)'/g)].map(([, s]) => s);
      if (!packages.every(installed)) {
        skipped.push(`${where} — ${block.skip}`);
        continue;
      }
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
    const file = path.join(dir, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    origins.set(file, { doc: block.doc, line: block.line, offset });
    files.push(file);
  }
  return { files, origins, skipped };
}

/** Runs tsc; its diagnostics, one per line, each tagged with the project's name. */
function tsc(tscPath, tsconfig, cwd, tag) {
  try {
    execFileSync(process.execPath, [tscPath, '-p', tsconfig, '--pretty', 'false'], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return [];
  } catch (error) {
    const out = `${error.stdout ?? ''}${error.stderr ?? ''}`;
    if (out.trim() === '') throw error;
    return out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => (/^(.+?)\((\d+),(\d+)\): /.test(l) ? `${l} [${tag}]` : l));
  }
}

/** Maps tsc's `file(line,col): message` lines back to the documents' lines. */
function report(lines, origins, cwd) {
  for (const line of lines) {
    const at = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(line);
    const origin = at && origins.get(path.resolve(cwd, at[1]));
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
}

function finish(skipped, summary) {
  for (const reason of skipped) console.log(`not type-checked: ${reason}`);
  if (failures.length > 0) {
    console.error(`Doc examples failed:\n- ${failures.join('\n- ')}`);
    process.exit(1);
  }
  console.log(summary);
}

/** Both kinds of app, against dist/, with this repository's packages. */
function checkHere() {
  if (!fs.existsSync(path.join(root, 'dist', 'index.d.ts'))) {
    console.error('dist/ is missing: run `npm run build` first');
    process.exit(1);
  }
  // One folder per checkout: git worktrees sharing one node_modules do not write over each other.
  const hash = createHash('sha1').update(root).digest('hex').slice(0, 8);
  const work = path.join(root, 'node_modules', '.cache', `doc-examples-${hash}`);
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(path.join(work, 'node_modules'), { recursive: true });
  // The package as an app resolves it: node_modules/nestjs-redlock → this repository (its
  // package.json `exports` point at dist/). Everything else resolves from the repository's
  // node_modules, the parent folders of this one.
  fs.symlinkSync(root, path.join(work, 'node_modules', 'nestjs-redlock'), 'dir');
  const { files, origins, skipped } = writeExamples(work);

  // One pass per kind of app. The folder's package.json `type` says which format the examples
  // are, as in an app: CommonJS resolves `require` → dist/index.d.ts, ESM `import` →
  // dist/index.d.mts, and only ESM needs the `.js` of a relative import.
  const lines = [];
  for (const [name, project] of Object.entries(projects)) {
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: project.type }));
    const tsconfig = path.join(work, `tsconfig.${name}.json`);
    const compilerOptions = {
      ...project.compilerOptions,
      noEmit: true,
      types: ['node'],
      typeRoots: [path.join(root, 'node_modules', '@types')],
    };
    fs.writeFileSync(tsconfig, JSON.stringify({ compilerOptions, files }, null, 2));
    const tscPath = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    lines.push(...tsc(tscPath, tsconfig, work, name));
  }
  report(lines, origins, work);
  const kinds = Object.values(projects).map((p) => p.title);
  finish(
    skipped,
    `doc examples: ${files.length - 1} TypeScript blocks type-checked against dist/ as a ${kinds.join(' and as a ')} (strict), ${skipped.length} marked not checked`,
  );
}

/** One kind of app, in an installed app folder, with emit. */
function checkInApp(dir, name) {
  const project = projects[name];
  if (project === undefined) throw new Error(`--project must be one of ${Object.keys(projects)}`);
  const app = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if ((app.type ?? 'commonjs') !== project.type) {
    throw new Error(`${dir} is a ${app.type ?? 'commonjs'} app, not ${project.type}`);
  }
  const work = path.join(dir, 'doc-examples');
  fs.rmSync(work, { recursive: true, force: true });
  /** A package (or a subpath of one) installed in the app. */
  const installed = (specifier) => {
    const parts = specifier.split('/');
    const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
    if (specifier.startsWith('node:') || name === 'nestjs-redlock') return true;
    return fs.existsSync(path.join(dir, 'node_modules', name));
  };
  const { files, origins, skipped } = writeExamples(work, installed);
  const tsconfig = path.join(dir, 'tsconfig.doc-examples.json');
  const compilerOptions = {
    ...project.compilerOptions,
    rootDir: './doc-examples',
    outDir: './dist-doc-examples',
    types: ['node'],
  };
  fs.writeFileSync(tsconfig, JSON.stringify({ compilerOptions, files }, null, 2));
  const tscPath = path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  const version = JSON.parse(
    fs.readFileSync(path.join(dir, 'node_modules', 'typescript', 'package.json'), 'utf8'),
  ).version;
  report(tsc(tscPath, tsconfig, dir, name), origins, dir);
  finish(
    skipped,
    `doc examples: ${files.length - 1} TypeScript blocks compiled in this ${project.title} (TypeScript ${version}, strict, with emit), ${skipped.length} marked not checked`,
  );
}

function main() {
  const args = process.argv.slice(2);
  const option = (flag) => {
    const i = args.indexOf(flag);
    return i === -1 ? undefined : args[i + 1];
  };
  const app = option('--app');
  if (app === undefined) checkHere();
  else checkInApp(path.resolve(app), option('--project'));
}

main();
