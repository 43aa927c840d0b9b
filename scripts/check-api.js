#!/usr/bin/env node
/**
 * The public API report (issue 26): API Extractor reads the built declarations of each entry
 * point (dist/) and compares them with the report checked in under api/. A change to the public
 * surface fails CI until the report is regenerated and committed, so every change to what users
 * import is seen in review.
 *
 *   node scripts/check-api.js            compare (CI); fails when a report differs
 *   node scripts/check-api.js --update   rewrite the reports in api/ (then commit them)
 *
 * Needs `npm run build` first.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const root = join(__dirname, '..');
const update = process.argv.includes('--update');
const entries = ['index', 'testing', 'terminus', 'adapters'];
let failed = false;
for (const entry of entries) {
  const args = ['run', '-c', join('api', `${entry}.api-extractor.json`)];
  if (update) args.push('--local');
  const run = spawnSync(join(root, 'node_modules', '.bin', 'api-extractor'), args, {
    cwd: root,
    encoding: 'utf8',
  });
  const output = `${run.stdout}${run.stderr}`;
  if (run.status !== 0) {
    failed = true;
    console.error(`API report of entry "${entry}" ${update ? 'could not be written' : 'differs'}:`);
    console.error(output);
  } else {
    console.log(`API report of entry "${entry}": ${update ? 'written' : 'unchanged'}`);
  }
}
if (failed && !update) {
  console.error(
    'The public API changed. If intended, run `npm run build && npm run api:update` and commit api/.',
  );
}
process.exit(failed ? 1 : 0);
