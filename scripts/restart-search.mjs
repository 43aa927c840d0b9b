#!/usr/bin/env node
/**
 * Issue 23 deliverable 5: the exhaustive search of restart admission (test/search) in its larger
 * scopes (test/search/scopes.ts LARGE_SCOPES), which take minutes to hours: every interleaving,
 * states kept as 64-bit hashes. Runs test/unit/restart-search.spec.ts with RESTART_SEARCH=large
 * and prints each scope's states, transitions, depth and time; exits with the test's status.
 * CI runs the same spec in its small scopes (npm test). docs/restart-search.md has the figures.
 *
 *   npm run search:restart
 *   RESTART_SEARCH_ONLY=M6b npm run search:restart   # the scopes whose name contains M6b
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const child = spawn(
  process.execPath,
  [
    '--max-old-space-size=4096',
    jest,
    '--selectProjects',
    'unit',
    '--testPathPattern',
    'test/unit/restart-search\\.spec\\.ts$',
    '--testTimeout',
    String(6 * 3_600_000),
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, RESTART_SEARCH: 'large' } },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
