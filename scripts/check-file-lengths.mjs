// Issue 26's bound on a file of lib/: at most 450 lines, so that no file grows into a part of
// its own unnoticed (split it by concept instead). Run by `npm run lint`.
import fs from 'node:fs';
import path from 'node:path';

const LIMIT = 450;
const tooLong = [];
function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(file);
    else if (file.endsWith('.ts')) {
      const lines = fs.readFileSync(file, 'utf8').split('\n').length - 1;
      if (lines > LIMIT) tooLong.push(`${file}: ${lines} lines`);
    }
  }
}
walk('lib');
if (tooLong.length > 0) {
  console.error(`files of lib/ over ${LIMIT} lines:\n  ${tooLong.join('\n  ')}`);
  process.exit(1);
}
console.log(`every file of lib/ has at most ${LIMIT} lines`);
