#!/usr/bin/env node
/**
 * Issue 23's acceptance figure for a fleet's start (finding 6a): 16 lock managers created together
 * on a flushed 5-node fleet, 0 `unavailable`, no node quarantined, every first lock ≤ 200 ms, in
 * 20 of 20 rounds. Runs the first test of test/integration/restart-findings-6a.spec.ts with those
 * figures (REDLOCK_START_ROUNDS, REDLOCK_START_BOUND_MS) on real redis-server processes and prints
 * each round's median and max first lock; exits with the test's status. One warm-up round runs
 * first, printed and not counted (the process's own cold start, not the fleet's).
 *
 *   node scripts/measure-start.mjs                 # 20 rounds, bound 200 ms
 *   node scripts/measure-start.mjs --rounds 50 --bound 150
 *   node scripts/measure-start.mjs --cold          # no uncounted warm-up round first
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? args[at + 1] : fallback;
};
const rounds = option('rounds', '20');
const bound = option('bound', '200');
// The process's first round compiles the library and ioredis and opens their first connections
// (see the test): it runs first, printed but not counted, unless --cold.
const warmUp = !args.includes('--cold');

const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const child = spawn(
  process.execPath,
  [
    jest,
    '--selectProjects',
    'integration',
    '--testNamePattern',
    'every first lock within',
    '--',
    'test/integration/restart-findings-6a.spec.ts',
  ],
  {
    cwd: root,
    env: {
      ...process.env,
      REDLOCK_START_ROUNDS: rounds,
      REDLOCK_START_BOUND_MS: bound,
      REDLOCK_START_WARM_UP: warmUp ? '1' : '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
let output = '';
child.stdout.on('data', (chunk) => (output += chunk));
child.stderr.on('data', (chunk) => (output += chunk));
child.on('exit', (code) => {
  const figures = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^finding 6a.*first locks/.test(line));
  console.log(
    `${rounds} rounds of 16 lock managers on a flushed 5-node fleet, bound ${bound} ms${warmUp ? ', after a warm-up round' : ''}:`,
  );
  for (const line of figures) console.log(`  ${line.trim()}`);
  if (code !== 0) {
    console.log('\n--- jest output ---');
    console.log(output);
  }
  console.log(code === 0 ? 'PASS' : 'FAIL');
  process.exit(code ?? 1);
});
