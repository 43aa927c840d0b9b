// S6 (issue 19): K waiters in one process on distinct busy keys. Each contender and K runs in
// its own child process (s6-worker.mjs), so that the RSS it reports is its own.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The contenders of S6: this library and the peers the issue names. */
export const S6_CONTENDERS = ['nestjs-redlock', 'redlock-v4', 'redis-semaphore'];

/** Runs S6 for one contender and K on the lock nodes `urls`; resolves with its figures. */
export function runS6({ key, K, urls, holdMs = 3000 }) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        '--expose-gc',
        path.join(here, 's6-worker.mjs'),
        key,
        String(K),
        urls.join(','),
        String(holdMs),
      ],
      { maxBuffer: 1 << 20, timeout: 180_000 },
      (error, stdout, stderr) => {
        const line = stdout.trim().split('\n').pop();
        try {
          resolve({ contender: key, ...JSON.parse(line) });
        } catch {
          resolve({
            contender: key,
            K,
            failed: K,
            unavailable: 0,
            // The end of stderr says what went wrong (the start is the command line).
            error: String(stderr || error).slice(-600),
            waitingCommandsPerWaiterPerSecond: NaN,
            firstSecondCommandsPerWaiter: NaN,
            releaseToAllHeldMs: NaN,
            rssPerWaiterKB: NaN,
            rssPerHeldLockKB: NaN,
            rssWaitingMB: NaN,
          });
        }
      },
    );
  });
}
