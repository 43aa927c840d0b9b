#!/usr/bin/env node
/**
 * Fails when the package's own modules import each other in a cycle — type-only imports
 * included (issue 26: a type cycle is still two files that cannot be read, moved or tested apart).
 * Reads every `import … from './x'` / `export … from './x'` under lib/ and reports each strongly
 * connected group of files (Tarjan). Part of `npm run lint`.
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'lib');

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+['"](\.[^'"]+)['"]/gs;
const graph = new Map();
for (const file of files(lib)) {
  const deps = new Set();
  for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const target = resolve(dirname(file), spec);
    for (const candidate of [`${target}.ts`, join(target, 'index.ts')]) {
      if (existsSync(candidate)) deps.add(candidate);
    }
  }
  graph.set(file, deps);
}

// Tarjan's strongly connected components.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const cycles = [];
function visit(node) {
  index.set(node, counter);
  low.set(node, counter++);
  stack.push(node);
  onStack.add(node);
  for (const next of graph.get(node)) {
    if (!index.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), index.get(next)));
  }
  if (low.get(node) !== index.get(node)) return;
  const group = [];
  let member;
  do {
    member = stack.pop();
    onStack.delete(member);
    group.push(member);
  } while (member !== node);
  if (group.length > 1) cycles.push(group);
}
for (const node of graph.keys()) if (!index.has(node)) visit(node);

if (cycles.length > 0) {
  for (const group of cycles) {
    console.error(
      `import cycle: ${group
        .map((file) => relative(root, file))
        .sort()
        .join(' <-> ')}`,
    );
  }
  process.exit(1);
}
console.log(`no import cycles among ${graph.size} files of lib/`);
