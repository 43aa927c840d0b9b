import { Redlock, type Lock, type RedlockOptions } from '../../lib';
import { SeededRandom } from './random';
import { simNodes, type SimNode } from './sim-node';
import type { SimFocus } from './simulation';
import { VirtualClock } from './virtual-clock';

/**
 * The restart scenarios of issue 16, drawn at random per seed: the shape every restart hole
 * needs, with the configuration around it varied. A holds a lock on exactly a quorum that
 * includes node X; X restarts without its data (in a fleet that may mix durable nodes, with an
 * INFO read that may fail after the reconnect, after a lease lengthened by extend(), with node
 * clocks apart); a lock manager B — the same one, one started before, or one started after the
 * restart — tries the same resource at seeded moments while A still holds it. Checked: B never
 * holds while A's lock is valid; with fencing, a later holder's token is above every earlier one.
 * The random simulation (simulation.ts) varies faults; this varies what a restart meets.
 */
export interface ScenarioResult {
  readonly seed: number;
  readonly params: string;
  readonly violations: string[];
}

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

export async function restartScenario(seed: number, focus?: SimFocus): Promise<ScenarioResult> {
  // The core's draws (jitter, owner values, ids) from the seed's own stream, apart from the run's.
  const core = new SeededRandom(seed ^ 0x2545f491);
  return run(seed, focus, new SeededRandom(seed), () => core.next());
}

async function run(
  seed: number,
  focus: SimFocus | undefined,
  rng: SeededRandom,
  random: () => number,
) {
  const clock = new VirtualClock();
  const is = (f: SimFocus) => focus === f || (focus === undefined && rng.chance(0.4));
  const count = rng.pick([3, 5]);
  const quorum = Math.floor(count / 2) + 1;
  const nodes: SimNode[] = simNodes(count, clock);
  const x = rng.int(0, count - 1);
  const mixed = is('durable-mix');
  const young = is('late-client');
  const durable = nodes.map((_, i) => i !== x && mixed && rng.chance(0.6));
  nodes.forEach((node, i) => {
    node.serverInfo = {
      runId: `${node.name}#0`,
      uptimeSeconds: young ? 1 : 86_400,
      durable: durable[i],
    };
  });
  const skewed = is('clock-skew');
  if (skewed) for (const node of nodes) node.clockOffsetMs = rng.between(0, 14_400_000);
  const ttl = rng.pick([100, 300, 1_000]);
  const settings: RedlockOptions = {
    clock,
    random,
    logger: quiet,
    ttl,
    nodeTimeout: Math.max(2, Math.floor(ttl / 10)),
    retryJitter: 0,
    notifications: false,
    fencing: skewed,
  };
  const extending = is('extension');
  const infoFails = is('info-failure');
  const late = young || mixed || rng.chance(0.5);
  const params =
    `focus=${focus ?? 'any'} nodes=${count} x=s${x} durable=[${durable.map(Number).join('')}] young=${young} ` +
    `late=${late} extending=${extending} infoFails=${infoFails} skewed=${skewed} ttl=${ttl}`;
  const violations: string[] = [];
  const managers: Redlock[] = [];
  const manager = () => {
    const redlock = new Redlock(nodes, settings);
    managers.push(redlock);
    return redlock;
  };
  const unreachable = (node: SimNode) => {
    node.fault = (op) =>
      op === 'acquire' || op === 'fence' ? { error: new Error('unreachable') } : undefined;
  };
  try {
    const a = manager();
    const early = manager();
    await clock.run(Promise.all([a.ready(), early.ready()]));
    let earlierToken: number | undefined;
    if (skewed) {
      // A token issued by a quorum with the fastest clock first, then released.
      const fastest = nodes.reduce(
        (f, n, i) => (n.clockOffsetMs > nodes[f].clockOffsetMs ? i : f),
        0,
      );
      const others = nodes.map((_, i) => i).filter((i) => i !== fastest && i !== x);
      for (const i of others.slice(0, count - quorum)) unreachable(nodes[i]);
      const first = await clock.run(a.acquire('r', { wait: 0 })).catch(() => undefined);
      for (const node of nodes) node.fault = undefined;
      if (first !== undefined) {
        earlierToken = first.fencingToken;
        await clock.run(first.release());
      }
    }
    // A's lock on exactly a quorum that includes X.
    const outside = rng
      .shuffle(nodes.map((_, i) => i).filter((i) => i !== x))
      .slice(0, count - quorum);
    for (const i of outside) unreachable(nodes[i]);
    let held: Lock | undefined;
    try {
      held = await clock.run(a.acquire('r', { wait: 0 }));
    } catch {
      return { seed, params, violations };
    }
    for (const node of nodes) node.fault = undefined;
    if (extending) await clock.run(held.extend(ttl * rng.int(3, 10))).catch(() => undefined);
    await clock.advance(rng.between(0, extending ? 2 * ttl : ttl / 4));
    // X restarts without its data.
    const info = { runId: `s${x}#1`, uptimeSeconds: 0, durable: false };
    nodes[x].crash(true);
    if (infoFails) {
      nodes[x].serverInfo = undefined;
      nodes[x].identityError = 'failed';
      nodes[x].identifyAs = info;
      nodes[x].identifyFailures = rng.int(0, 3);
    } else nodes[x].serverInfo = info;
    const b = late ? manager() : rng.pick([a, early]);
    if (late) await clock.run(b.ready());
    // B tries at seeded moments while A may still hold (with skewed clocks the point is the
    // token after X's return, so nobody else writes counters meanwhile).
    for (let t = 0; t < (skewed ? 0 : 6); t++) {
      const lock = await clock.run(b.tryAcquire('r')).catch(() => null);
      if (lock !== null && held.isValid()) {
        violations.push(
          `B holds 'r' while A's lock is valid for ${held.remainingMs().toFixed(1)} ms more`,
        );
      }
      if (lock !== null) {
        if (
          earlierToken !== undefined &&
          lock.fencingToken !== undefined &&
          lock.fencingToken <= earlierToken
        ) {
          violations.push(`token ${lock.fencingToken} after token ${earlierToken}`);
        }
        await clock.run(lock.release());
        break;
      }
      await clock.advance(rng.between(0, ttl));
    }
    if (skewed && earlierToken !== undefined) {
      // Once A is done and the horizons have passed: the token must still be above the first.
      await clock.run(held.release());
      await clock.advance(4 * ttl * 10);
      for (const i of nodes.map((_, i) => i).filter((i) => i !== x)) {
        if (nodes[i].clockOffsetMs === Math.max(...nodes.map((n) => n.clockOffsetMs)))
          unreachable(nodes[i]);
      }
      const later = await clock.run(b.acquire('r', { wait: 10 * ttl })).catch(() => undefined);
      if (later?.fencingToken !== undefined && later.fencingToken <= earlierToken) {
        violations.push(`token ${later.fencingToken} after token ${earlierToken}`);
      }
    }
  } finally {
    for (const node of nodes) node.fault = undefined;
    await clock.run(Promise.all(managers.map((m) => m.close()))).catch(() => undefined);
    for (const m of managers) (m as unknown as { scope: { disable(): void } }).scope.disable();
  }
  return { seed, params, violations };
}
