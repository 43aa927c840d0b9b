// Checks that the built package (what `require('nestjs-redlock')` loads: package.json `main`)
// exposes the public names DESIGN.md §4 promises, with type declarations beside it.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const pkg = require(path.join(root, 'package.json'));
const api = require(root);

const required = [
  'Redlock',
  'RedlockModule',
  'RedlockService',
  'RedlockError',
  'LockNotAcquiredError',
  'LockLostError',
  'RedlockConfigError',
  'LockResourceError',
  'Locked',
  'CurrentLock',
  'LockedInterceptor',
];
const missing = required.filter((name) => typeof api[name] !== 'function');
const types = path.join(root, pkg.types);
if (!fs.existsSync(types)) missing.push(`type declarations (${pkg.types})`);
if (missing.length > 0) {
  console.error(`The built package is missing: ${missing.join(', ')}`);
  process.exit(1);
}
console.log(`${pkg.name}: ${required.length} public names and ${pkg.types} present`);
