// Micro-measurements for issue 8 item 3: the client CPU of making one owner value.
import { Buffer } from 'node:buffer';
import { randomBytes, randomFillSync } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);

function timeIt(fn, n) {
  for (let i = 0; i < 20_000; i++) fn(); // warm up (JIT)
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  const cpu = process.cpuUsage(cpu0);
  return { wallUs: ((performance.now() - t0) * 1000) / n, cpuUs: (cpu.user + cpu.system) / n };
}

/** µs per owner value: randomBytes(16) per call, a pooled slice, and the built package's own. */
export async function microOwnerValue(dist) {
  const n = 200_000;
  const pool = Buffer.alloc(16 * 256);
  let offset = pool.length;
  const pooled = () => {
    if (offset === pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    const v = pool.toString('base64url', offset, offset + 16);
    offset += 16;
    return v;
  };
  const results = {
    'randomBytes(16).toString(hex)': timeIt(() => randomBytes(16).toString('hex'), n),
    'randomBytes(16).toString(base64url)': timeIt(() => randomBytes(16).toString('base64url'), n),
    'pooled slice (16 × 256 B refill)': timeIt(pooled, n),
  };
  try {
    const { newOwnerValue } = require(path.join(dist, 'core', 'owner-value.js'));
    results['nestjs-redlock newOwnerValue()'] = timeIt(newOwnerValue, n);
  } catch {
    // Not in this build.
  }
  return results;
}
