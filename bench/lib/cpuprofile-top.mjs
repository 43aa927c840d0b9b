// Summarises a .cpuprofile (node --cpu-prof): self time by function and by package/area.
// Usage: node bench/lib/cpuprofile-top.mjs <file.cpuprofile> [top=25]
import fs from 'node:fs';

const [file, topArg = '25'] = process.argv.slice(2);
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const deltas = profile.timeDeltas;
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function area(url) {
  if (!url) return '(native / GC / idle)';
  if (url.includes('/bench/node_modules/'))
    return url.replace(/.*\/bench\/node_modules\/((@[^/]+\/)?[^/]+).*/, 'bench dep: $1');
  if (url.includes('/node_modules/'))
    return url.replace(/.*\/node_modules\/((@[^/]+\/)?[^/]+).*/, '$1');
  if (url.includes('/dist/')) return 'nestjs-redlock dist';
  if (url.includes('/bench/')) return 'bench harness';
  if (url.startsWith('node:')) return 'node core';
  return url;
}

const fnTotals = new Map();
const areaTotals = new Map();
for (const [id, us] of self) {
  const { callFrame } = byId.get(id);
  const name = `${callFrame.functionName || '(anonymous)'} ${callFrame.url.split('/').slice(-2).join('/')}:${callFrame.lineNumber + 1}`;
  fnTotals.set(name, (fnTotals.get(name) ?? 0) + us);
  const a = callFrame.url ? area(callFrame.url) : callFrame.functionName || '(native)';
  areaTotals.set(a, (areaTotals.get(a) ?? 0) + us);
}
const pct = (us) => `${((us / total) * 100).toFixed(1)}%`;
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
console.log('\nby area:');
for (const [a, us] of [...areaTotals].sort((x, y) => y[1] - x[1]).slice(0, 15))
  console.log(`  ${pct(us).padStart(6)}  ${a}`);
console.log('\nby function (self):');
for (const [n, us] of [...fnTotals].sort((x, y) => y[1] - x[1]).slice(0, Number(topArg)))
  console.log(`  ${pct(us).padStart(6)}  ${n}`);
