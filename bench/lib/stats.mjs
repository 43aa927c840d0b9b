// Small statistics and Redis server counters for the benchmark.
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import Redis from 'ioredis';

/** The q-quantile (0..1) of numbers, nearest-rank. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The median of numbers (NaN-free). */
export function median(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Reads `INFO cpu stats` on every node through its own fail-fast connection: used CPU
 * (sys + user, µs) and total_commands_processed, summed over the nodes. Each snapshot's INFO is
 * itself one command per node, subtracted by `delta`.
 */
export function serverCounters(urls) {
  const clients = urls.map((url) => {
    const c = new Redis(url, { maxRetriesPerRequest: 0, commandTimeout: 1000 });
    c.on('error', () => {});
    return c;
  });
  async function snapshot() {
    const infos = await Promise.all(
      clients.map((c) => c.call('INFO', 'cpu', 'stats', 'commandstats')),
    );
    let cpuUs = 0;
    let commands = 0;
    const byCommand = {};
    const usecByCommand = {};
    for (const info of infos) {
      for (const [, name, calls, usec] of info.matchAll(
        /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm,
      )) {
        byCommand[name] = (byCommand[name] ?? 0) + Number(calls);
        usecByCommand[name] = (usecByCommand[name] ?? 0) + Number(usec);
      }
      const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1]);
      cpuUs += (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
      commands += field('total_commands_processed');
    }
    return { cpuUs, commands, byCommand, usecByCommand, at: performance.now() };
  }
  return {
    snapshot,
    /** Difference of two snapshots, the INFO commands and the idle CPU taken out. */
    delta(before, after, idleCpuUsPerMs = 0) {
      return {
        cpuUs: after.cpuUs - before.cpuUs - idleCpuUsPerMs * (after.at - before.at),
        commands: after.commands - before.commands - clients.length,
        byCommand: Object.fromEntries(
          Object.entries(after.byCommand)
            .map(([name, calls]) => [name, calls - (before.byCommand[name] ?? 0)])
            .map(([name, calls]) => [name, name === 'info' ? calls - clients.length : calls])
            .filter(([, calls]) => calls > 0),
        ),
        // Time the server spent executing each command (commandstats usec: a script's inner
        // commands are counted in the script's time and again on their own).
        usecByCommand: Object.fromEntries(
          Object.entries(after.usecByCommand)
            .map(([name, us]) => [name, us - (before.usecByCommand[name] ?? 0)])
            .filter(([name, us]) => us > 0 && name !== 'info'),
        ),
      };
    },
    /** Idle CPU of the whole fleet in µs per ms of wall time (server cron, nothing else). */
    async idleRate(ms) {
      const a = await snapshot();
      await new Promise((resolve) => setTimeout(resolve, ms));
      const b = await snapshot();
      return (b.cpuUs - a.cpuUs) / (b.at - a.at);
    },
    close: () => clients.forEach((c) => c.disconnect()),
  };
}
