// `npm ci --prefix bench` unless bench/node_modules already holds every locked version.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const lock = JSON.parse(fs.readFileSync(path.join(here, 'package-lock.json'), 'utf8'));
const installed = (dir) => {
  try {
    // redlock 5.0.0-beta.2 spells its own version 'v5.0.0-beta.2'.
    const { version } = JSON.parse(fs.readFileSync(path.join(here, dir, 'package.json'), 'utf8'));
    return String(version).replace(/^v/, '');
  } catch {
    return undefined;
  }
};
const stale = Object.entries(lock.packages).filter(
  ([dir, meta]) => dir.startsWith('node_modules/') && installed(dir) !== meta.version,
);
if (stale.length > 0) {
  console.error(`bench: installing its dependencies (${stale.length} missing or stale)`);
  execFileSync('npm', ['ci', '--prefix', here, '--no-audit', '--no-fund'], { stdio: 'inherit' });
}
