import { runInThisContext } from 'node:vm';

/**
 * Last-resort cleanup when the test process exits without `fleet.stop()` (a test that throws in
 * `beforeAll`, a forgotten `afterAll`, a jest worker shut down after its last file). Tasks run
 * synchronously in the `exit` event, the only thing Node allows there, so they must use sync APIs
 * (process.kill, rmSync).
 *
 * The listener is attached only while some task is registered: jest runs many test files in one
 * worker, each with a fresh module registry, and a listener per file would pile up.
 */

/**
 * The real `process`. Inside a jest test file the global `process` is a per-file copy whose event
 * emitter is its own: an `exit` listener on it is silently never called. `vm.runInThisContext`
 * evaluates in Node's main context, whose `process` is the real one; outside jest it is simply
 * the same object as the global.
 */
function hostProcess(): NodeJS.Process {
  try {
    const real = runInThisContext('process') as NodeJS.Process | undefined;
    if (real && typeof real.on === 'function') return real;
  } catch {
    // No main-context access: fall back to the global (correct outside jest).
  }
  return process;
}

const host = hostProcess();
const tasks = new Set<() => void>();

function runAll(): void {
  for (const task of tasks) {
    try {
      task();
    } catch {
      // Best effort: one failing task must not stop the others from running.
    }
  }
  tasks.clear();
}

/**
 * Runs `task` when the process exits, unless the returned function is called first
 * (which is what a normal `stop()` does once it has cleaned up by itself).
 */
export function onProcessExit(task: () => void): () => void {
  if (tasks.size === 0) host.on('exit', runAll);
  tasks.add(task);
  return () => {
    if (tasks.delete(task) && tasks.size === 0) host.off('exit', runAll);
  };
}
