import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The code's references stay true (issue 26 item 5): every file path a comment in lib/ cites
 * exists, and every design note it cites (`architecture.md §5.7`) is a heading of
 * docs/architecture.md. A moved file or a renumbered note fails here, not in a reader's hands.
 */
const root = path.join(__dirname, '..', '..');
const libFiles = execFileSync('git', ['ls-files', 'lib'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file.endsWith('.ts'));
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

describe('references in lib/', () => {
  it('every cited path (test/…, lib/…, docs/…, scripts/…, bench/…) exists', () => {
    const missing: string[] = [];
    for (const file of libFiles) {
      for (const [cited] of read(file).matchAll(
        /\b(?:test|lib|docs|scripts|bench)\/[\w./-]+\.(?:ts|mjs|js|md)\b/g,
      )) {
        if (!fs.existsSync(path.join(root, cited))) missing.push(`${file}: ${cited}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every cited design note is a heading of docs/architecture.md', () => {
    const headings = new Set(
      [...read('docs/architecture.md').matchAll(/^### §([\d.]+)/gm)].map(([, n]) => n),
    );
    const missing: string[] = [];
    let cited = 0;
    for (const file of libFiles) {
      for (const [, note] of read(file).matchAll(/architecture\.md §(\d+(?:\.\d+)?)/g)) {
        cited++;
        if (!headings.has(note)) missing.push(`${file}: §${note}`);
      }
    }
    expect(cited).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });
});
