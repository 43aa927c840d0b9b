import {
  coveredUntil as coverEnd,
  fleetId,
  horizonWindow,
  nodeFacts,
  votes,
} from '../../lib/core/membership/standing';
import type { RestartRule } from '../../lib/core/quorum/quarantine';
import type { Model, Step, Violation } from './explore';
import { REAL_RULES, type ModelFacts, type Rules } from './rules';

/**
 * The restart-admission protocol (architecture.md §5.7, issue 23 deliverable 5) as an explicit-state
 * model whose every decision is the library's own code (rules.ts): lock managers survey nodes,
 * admit them, record lease horizons, acquire, extend and release one resource `r`, while nodes
 * restart (keeping or losing their data), evict, and time passes in whole seconds (ticks).
 * explore.ts visits every state reachable within a scope's budgets.
 *
 * The fleet (fixed for every scope):
 * - nodes `a` (appendonly + appendfsync always, noeviction), `b` (plain, volatile-lru: evicts),
 *   `c` (plain, noeviction) and `d` (plain, noeviction); all empty and up for long, or (scope
 *   `fresh`) just started;
 * - fleet F = [a, b, c], quorum 2: managers `m1` (ttl 3 s = maxTtl, fenced; with `longTtl` it
 *   also asks a per-call ttl of 5 s, above maxTtl, which the library refuses) and `m2` (ttl 1 s);
 * - fleet G = [c, d], quorum 2: manager `g` (ttl 3 s). It shares node `c` with F, with the same
 *   key prefix (so its keys, horizons and marker land in F's), and its own node list.
 * maxTtl 3 s and driftFactor 0.01 for every manager. Every manager starts at any step. A scope
 * (scopes.ts) says which managers exist, which nodes may restart, and the budgets.
 *
 * State is kept relative to "now": every expiry is stored as ms left, so a state recurs once
 * time has passed it by, and the budgets (restarts, attempts, extensions, evictions) bound the
 * rest. What the model takes as given (and so does not check):
 * - a lock manager sees a node's new `run_id` before sending it anything (its connection drops
 *   on a restart and INFO is read again on reconnect);
 * - a survey and the floor restores it leads to are one step, and so is an attempt (horizon
 *   records, acquire, fencing phase 2, release of a failed attempt): the nodes an attempt does not
 *   reach are chosen per attempt (`reach`), which stands for every node failure during it;
 * - node clocks agree (drift is exercised by the rule's own margins only); the fencing phase 1
 *   ignores the server's TIME (monotonicity must not rest on it, architecture.md §5.6);
 * - the assumption (docs/guarantees.md): no two nodes of a fleet start without their data within
 *   maxTtl of each other, and no node of F loses its fence floor while another's is still lost.
 *
 * Properties, checked on every transition (a `Violation` each):
 * - `one-holder`: at most one manager of a fleet holds a valid lease on `r` (a lease is valid
 *   while its holder's own validity lasts). A second holder after an eviction is excused only
 *   when every eviction so far was on a node `evictionWarning` warned about (outside the
 *   assumption, and the operator was told); after an unwarned one it is a violation.
 * - `tokens`: every fenced grant's token is above every earlier one (fleet F's m1 fences).
 * - `bounded-wait`: no admission keeps a node out past maxTtl (with drift and 2 ms) plus 1 s
 *   (the granularity of uptime_in_seconds) after its restart.
 * - `protects-nothing`: an admission that keeps node X out (voteInMs > 0) while knowing every
 *   answer it needs (every node answered, or its decision is not `uninformed`) waits no longer
 *   than the latest lease horizon X's own fleet filed under an earlier run_id of X (plus the
 *   rule's drift margin). Such a horizon is what a lease granted or extended with X's vote before
 *   its restart leaves behind (a lock manager records it before X's vote counts); no such horizon
 *   left means no lease X could have lost, so any wait protects nothing. The model keeps this as
 *   ghost state (`owed`), which no restart erases. Two causes of such a wait are costs the rule
 *   cannot avoid as it stands, told apart by `blame` and reported under their own names:
 *   `other-fleet-wait` (horizons another fleet filed in the hash both share) and
 *   `other-restart-wait` (horizons filed under another restarted node's earlier run_id).
 */

const SECOND = 1_000;
const MAX_TTL = 3 * SECOND;
const DRIFT = 0.01;
/** Uptime is not tracked above this (s): every decision is the same from here on. */
const AGE_CAP = 5;
/** Ticks since a node's last data loss are not tracked above this. */
const LOST_CAP = MAX_TTL / SECOND + 1;
/** A horizon record covering less than the shortest lease is as good as none. */
const MIN_TTL = SECOND;

export interface Scope {
  readonly name: string;
  /** Node restarts (keeping or losing data). */
  readonly restarts: number;
  /** Acquisition attempts, all managers together. */
  readonly attempts: number;
  readonly extensions: number;
  readonly evictions: number;
  /** m1 asks a per-call ttl of 5 s, above maxTtl (refused by the library): besides, or instead of, its own. */
  readonly longTtl: 'no' | 'also' | 'only';
  /** The lock managers that exist (each starts at any step): some of m1, m2, g. */
  readonly managers: readonly string[];
  /** Nodes start fresh (empty, just started) rather than up for long. */
  readonly fresh: boolean;
  /** An attempt reaches exactly a quorum (`quorum`), or any quorum or more (`any`). */
  readonly reach: 'quorum' | 'any';
  /**
   * Where lease horizons live: one hash per fleet (`fleet`, keyed like the fence record: the
   * library, membership.ts standingKeys), or one per key prefix shared by every fleet that uses
   * the prefix (`prefix`: the layout before the search found `other-fleet-wait`, kept to show
   * that its revert is found).
   */
  readonly horizonKey: 'prefix' | 'fleet';
  /** A survey may go unanswered by one node (a partition during admission). */
  readonly partitions: boolean;
  /** Restarts may keep the data (else every restart loses it). */
  readonly keepData: boolean;
  /** The nodes that may restart (by name); all those some manager lists when absent. */
  readonly restartable?: readonly string[];
}

interface NodeSpec {
  readonly name: string;
  readonly durableConfig: boolean;
  readonly policy: string;
}

const NODES: readonly NodeSpec[] = [
  { name: 'a', durableConfig: true, policy: 'noeviction' },
  { name: 'b', durableConfig: false, policy: 'volatile-lru' },
  { name: 'c', durableConfig: false, policy: 'noeviction' },
  { name: 'd', durableConfig: false, policy: 'noeviction' },
];

interface FleetSpec {
  /** fleetId(): names the fleet's fence record. */
  readonly id: string;
  readonly nodes: readonly number[];
  readonly quorum: number;
}

const FLEETS: readonly FleetSpec[] = [
  { id: fleetId('', ['a', 'b', 'c']), nodes: [0, 1, 2], quorum: 2 },
  { id: fleetId('', ['c', 'd']), nodes: [2, 3], quorum: 2 },
];

interface ManagerSpec {
  readonly name: string;
  readonly fleet: number;
  readonly ttl: number;
  readonly fenced: boolean;
  /** A per-call ttl it may also ask (with Scope.longTtl). */
  readonly longTtl?: number;
}

const MANAGERS: readonly ManagerSpec[] = [
  { name: 'm1', fleet: 0, ttl: 3 * SECOND, fenced: true, longTtl: 5 * SECOND },
  { name: 'm2', fleet: 0, ttl: 1 * SECOND, fenced: false },
  { name: 'g', fleet: 1, ttl: 3 * SECOND, fenced: false },
];

/** One Redis node, as its data and process are. */
interface NodeState {
  /** Incarnation: its run_id is name + inc. */
  inc: number;
  /** uptime_in_seconds (capped at AGE_CAP). */
  age: number;
  born?: string;
  /** The lock key of `r`: owner value and ms left. */
  key?: { owner: string; left: number };
  /** Lease horizons each fleet filed, by run_id filed under: ms left. */
  horizons: Record<string, number>[];
  /** Fence counter of `r` and the fence floor (shared by both fleets: one key prefix). */
  counter: number;
  floor: number;
  /** Each fleet's fence record: the run_id it restored the floor under. */
  fenced: (string | undefined)[];
  /** M1 only. */
  stamp?: string;
  /** Ticks since it last started without its data (LOST_CAP: long ago or never). */
  lostAgo: number;
  /** Lost its fence floor and no manager of F restored it since (the fencing assumption). */
  floorLost: boolean;
}

/** A lock manager's view of one of its nodes (membership.ts `Member`). */
interface MemberState {
  state: 'pending' | 'waiting' | 'voting';
  /** ms from now until it may vote (while waiting). */
  voteAt: number;
  fence: 'unknown' | 'complete' | 'blocked';
  /** ms from now until which its recorded horizon covers a lease's end. */
  coveredUntil: number;
}

interface ManagerState {
  started: boolean;
  /** Indexed like the fleet's node list. */
  members: MemberState[];
  lease?: { owner: string; left: number; ttl: number; token?: number };
  /** Attempts made: the next owner value is name + seq. */
  seq: number;
}

export interface State {
  nodes: NodeState[];
  managers: ManagerState[];
  restarts: number;
  attempts: number;
  extensions: number;
  evictions: number;
  /** The highest fencing token granted in F. */
  lastToken: number;
  /** 0: no eviction yet; 1: only on nodes warned about; 2: on a node nobody warned about. */
  evicted: 0 | 1 | 2;
  /**
   * Ghost state for `protects-nothing`, by fleet and node: ms left of the latest horizon the
   * fleet filed under the node's current run_id (`filed`), and under any earlier one (`owed`).
   */
  filed: number[][];
  owed: number[][];
}

const runId = (s: State, n: number) => `${NODES[n].name}${s.nodes[n].inc}`;

function initial(scope: Scope): State {
  return {
    nodes: NODES.map(() => ({
      inc: 0,
      age: scope.fresh ? 0 : AGE_CAP,
      horizons: FLEETS.map(() => ({})),
      counter: 0,
      floor: 0,
      fenced: FLEETS.map(() => undefined),
      lostAgo: LOST_CAP,
      floorLost: false,
    })),
    managers: MANAGERS.map((m) => ({
      started: false,
      members: FLEETS[m.fleet].nodes.map(() => freshMember()),
      seq: 0,
    })),
    restarts: 0,
    attempts: 0,
    extensions: 0,
    evictions: 0,
    lastToken: 0,
    evicted: 0,
    filed: FLEETS.map(() => NODES.map(() => 0)),
    owed: FLEETS.map(() => NODES.map(() => 0)),
  };
}

const freshMember = (): MemberState => ({
  state: 'pending',
  voteAt: Infinity,
  fence: 'unknown',
  coveredUntil: -Infinity,
});

function clone(s: State): State {
  return {
    ...s,
    nodes: s.nodes.map((n) => ({
      ...n,
      key: n.key && { ...n.key },
      horizons: n.horizons.map((h) => ({ ...h })),
      fenced: [...n.fenced],
    })),
    managers: s.managers.map((m) => ({
      ...m,
      members: m.members.map((x) => ({ ...x })),
      lease: m.lease && { ...m.lease },
    })),
    filed: s.filed.map((f) => [...f]),
    owed: s.owed.map((f) => [...f]),
  };
}

function key(s: State): string {
  const nodes = s.nodes.map((n) => {
    const h = n.horizons
      .map((hs) =>
        Object.keys(hs)
          .sort()
          .map((id) => `${id}=${hs[id]}`)
          .join(','),
      )
      .join('/');
    const k = n.key ? `${n.key.owner}:${n.key.left}` : '';
    return `${n.inc}.${n.age}.${n.born ?? ''}.${k}.${h}.${n.counter}.${n.floor}.${n.fenced.join('/')}.${n.stamp ?? ''}.${n.lostAgo}.${+n.floorLost}`;
  });
  const managers = s.managers.map((m) => {
    if (!m.started) return '-';
    const members = m.members
      .map((x) => `${x.state[0]}${x.voteAt}${x.fence[0]}${x.coveredUntil}`)
      .join(',');
    const l = m.lease
      ? `${m.lease.owner}:${m.lease.left}:${m.lease.ttl}:${m.lease.token ?? ''}`
      : '';
    return `${members}|${l}|${m.seq}`;
  });
  return [
    nodes.join(';'),
    managers.join(';'),
    s.restarts,
    s.attempts,
    s.extensions,
    s.evictions,
    s.lastToken,
    s.evicted,
    s.filed.map((f) => f.join(',')).join('/'),
    s.owed.map((f) => f.join(',')).join('/'),
  ].join('#');
}

/** Non-empty subsets of `items` with at least `min` elements. */
function subsets(items: readonly number[], min: number): number[][] {
  const out: number[][] = [];
  for (let mask = 1; mask < 1 << items.length; mask++) {
    const set = items.filter((_, i) => mask & (1 << i));
    if (set.length >= min) out.push(set);
  }
  return out;
}

/** The model of one scope with `rules` (the library's own, or a mutant's). */
export function restartModel(scope: Scope, rules: Rules = REAL_RULES): Model<State> {
  const sharedRule = (fleet: number): RestartRule => ({
    maxTtl: MAX_TTL,
    driftFactor: DRIFT,
    quorum: FLEETS[fleet].quorum,
  });
  /** The longest a restarted node may be kept out after its restart (bounded-wait). */
  const waitBound = Math.ceil(MAX_TTL * (1 + DRIFT)) + 2 + SECOND;

  /** The node sets an attempt may reach (the others fail during it). */
  const reaches = (fleet: FleetSpec) =>
    subsets(fleet.nodes, fleet.quorum).filter(
      (set) => scope.reach === 'any' || set.length === fleet.quorum,
    );

  /** A manager admits its member `j` (node `n`): under M1 it also stamps the node. */
  function admit(s: State, member: MemberState, n: number) {
    member.state = 'voting';
    member.voteAt = 0;
    if (rules.stamps) s.nodes[n].stamp = runId(s, n);
  }

  /**
   * What node `n` answers to a survey of fleet `f` (STANDING_SCRIPT, then nodeFacts): the
   * horizons in the hash it reads, which holds every fleet's with `horizonKey: 'prefix'`; with
   * `own`, only those fleet `f` filed (what a per-fleet hash would hold).
   */
  function facts(s: State, n: number, f: number, own = scope.horizonKey === 'fleet'): ModelFacts {
    const node = s.nodes[n];
    const id = runId(s, n);
    const horizons: Record<string, number> = { ...node.horizons[f] };
    if (!own) {
      for (const other of node.horizons) {
        for (const [run, left] of Object.entries(other)) {
          horizons[run] = Math.max(horizons[run] ?? 0, left);
        }
      }
    }
    const reply = {
      runId: id,
      uptimeSeconds: node.age,
      born: node.born,
      horizons,
      floor: node.floor,
      fenced: node.fenced[f],
    };
    const info = {
      runId: id,
      uptimeSeconds: node.age,
      durable: NODES[n].durableConfig,
      evictionPolicy: NODES[n].policy,
    };
    return { ...nodeFacts(reply, info), stamp: node.stamp };
  }

  function* survey(s0: State, mi: number): Generator<Step<State>> {
    const spec = MANAGERS[mi];
    const fleet = FLEETS[spec.fleet];
    const m0 = s0.managers[mi];
    const open = (j: number) =>
      m0.members[j].state !== 'voting' || (spec.fenced && m0.members[j].fence !== 'complete');
    // Every node answers, or all but one (a partition during admission).
    const min = scope.partitions ? fleet.nodes.length - 1 : fleet.nodes.length;
    for (const answered of subsets(fleet.nodes, min)) {
      const js = answered.map((n) => fleet.nodes.indexOf(n));
      if (!js.some(open)) continue;
      const s = clone(s0);
      const m = s.managers[mi];
      const all = answered.length === fleet.nodes.length;
      const read = fleet.nodes.map((n) =>
        answered.includes(n) ? facts(s, n, spec.fleet) : undefined,
      );
      const violations: Violation[] = [];
      const rule = rules.restartRule(sharedRule(spec.fleet), spec);
      for (const j of js) {
        const member = m.members[j];
        const n = fleet.nodes[j];
        if (member.state !== 'voting') {
          const d = rules.admission(read, j, rule);
          const age = s.nodes[n].age * SECOND;
          if (d.voteInMs > Math.max(0, waitBound - age)) {
            violations.push({
              property: 'bounded-wait',
              message: `${spec.name} keeps ${NODES[n].name} (up ${age} ms) out for ${d.voteInMs} ms (${d.why})`,
            });
          }
          const owed = s.owed[spec.fleet][n];
          const margin = owed > 0 ? Math.ceil(owed * (1 + DRIFT)) + 2 : 0;
          if (d.voteInMs > margin && (all || d.why !== 'uninformed')) {
            violations.push({
              property: blame(s, mi, j, answered, rule, margin),
              message: `${spec.name} keeps ${NODES[n].name} out for ${d.voteInMs} ms (${d.why}) when its fleet's leases before its restart end in ${owed} ms`,
            });
          }
          if (d.voteInMs < member.voteAt) {
            if (d.voteInMs <= 0) admit(s, member, n);
            else {
              member.state = 'waiting';
              member.voteAt = d.voteInMs;
            }
          }
        }
        if (spec.fenced && member.fence !== 'complete') {
          const plan = rules.floorRestore(read, j, fleet.quorum);
          if (plan.kind === 'restore') {
            const node = s.nodes[n];
            node.floor = Math.max(node.floor, plan.floor);
            node.fenced[spec.fleet] = runId(s, n);
            node.floorLost = false;
            member.fence = 'complete';
          } else member.fence = plan.kind;
        }
      }
      const label = () =>
        `${spec.name} surveys${all ? '' : ` (${fleet.nodes.filter((n) => !answered.includes(n)).map((n) => NODES[n].name)} silent)`}: ${m.members.map((x, j) => `${NODES[fleet.nodes[j]].name}=${x.state === 'waiting' ? `wait ${x.voteAt}` : x.state}${spec.fenced ? `/${x.fence}` : ''}`).join(' ')}`;
      yield { label, state: s, violations };
    }
  }

  /**
   * Whose horizons made a wait protect nothing (the decision is asked again, each time with
   * fewer horizons): `other-fleet-wait` when, with only the horizons its own fleet filed, the
   * node would not have waited; `other-restart-wait` when, with only those filed under its own
   * earlier run_ids (and the current ones, which the rule ignores), it would not have; else
   * `protects-nothing`. The first two are costs of what the rule can tell (README of the search).
   */
  function blame(
    s: State,
    mi: number,
    j: number,
    answered: readonly number[],
    rule: RestartRule,
    margin: number,
  ): string {
    const spec = MANAGERS[mi];
    const fleet = FLEETS[spec.fleet];
    const n = fleet.nodes[j];
    const own = fleet.nodes.map((x) =>
      answered.includes(x) ? facts(s, x, spec.fleet, true) : undefined,
    );
    if (rules.admission(own, j, rule).voteInMs <= margin) return 'other-fleet-wait';
    // Run_ids of other nodes' earlier incarnations: what a restart of another node left behind.
    const current = new Set(NODES.map((_, x) => runId(s, x)));
    const othersOld = (id: string) => !current.has(id) && !id.startsWith(NODES[n].name);
    const mine = own.map(
      (f) =>
        f && {
          ...f,
          horizons: Object.fromEntries(Object.entries(f.horizons).filter(([id]) => !othersOld(id))),
        },
    );
    if (rules.admission(mine, j, rule).voteInMs <= margin) return 'other-restart-wait';
    return 'protects-nothing';
  }

  /** cover() on the nodes reached: a horizon before any vote counts (membership.ts). */
  function cover(s: State, mi: number, ttl: number, reach: readonly number[]) {
    const spec = MANAGERS[mi];
    const fleet = FLEETS[spec.fleet];
    const m = s.managers[mi];
    const window = horizonWindow(ttl, spec.ttl);
    const ids = fleet.nodes.map((n) => runId(s, n));
    for (const n of reach) {
      const member = m.members[fleet.nodes.indexOf(n)];
      if (member.coveredUntil >= ttl + ttl / 4) continue;
      const node = s.nodes[n];
      const filed = node.horizons[spec.fleet];
      for (const id of ids) filed[id] = Math.max(filed[id] ?? 0, window);
      node.born ??= runId(s, n);
      member.coveredUntil = Math.max(member.coveredUntil, coverEnd(0, window, DRIFT));
      for (const x of fleet.nodes) {
        s.filed[spec.fleet][x] = Math.max(s.filed[spec.fleet][x], window);
      }
    }
  }

  function* acquire(s0: State, mi: number): Generator<Step<State>> {
    const spec = MANAGERS[mi];
    const fleet = FLEETS[spec.fleet];
    const long = spec.longTtl === undefined ? 'no' : scope.longTtl;
    const ttls = { no: [spec.ttl], also: [spec.ttl, spec.longTtl!], only: [spec.longTtl!] }[long];
    for (const ttl of ttls) {
      try {
        rules.assertLeaseTtl(ttl, MAX_TTL);
      } catch {
        continue; // refused: no attempt
      }
      for (const reach of reaches(fleet)) {
        const s = clone(s0);
        const m = s.managers[mi];
        s.attempts++;
        const owner = `${spec.name}.${++m.seq}`;
        cover(s, mi, ttl, reach);
        const set: number[] = [];
        let highest = 0;
        for (const n of reach) {
          const node = s.nodes[n];
          if (!votes(m.members[fleet.nodes.indexOf(n)], 0, ttl, spec.fenced)) continue;
          if (node.key !== undefined) continue;
          node.key = { owner, left: ttl };
          highest = Math.max(highest, node.counter, node.floor);
          set.push(n);
        }
        const names = `${spec.name} acquires r for ${ttl} ms on ${reach.map((n) => NODES[n].name)}`;
        const violations: Violation[] = [];
        if (set.length < fleet.quorum) {
          for (const n of set) s.nodes[n].key = undefined;
          yield { label: `${names}: refused`, state: s, violations };
          continue;
        }
        let token: number | undefined;
        if (spec.fenced) {
          token = highest + 1;
          for (const n of set) {
            s.nodes[n].counter = Math.max(s.nodes[n].counter, token);
            s.nodes[n].floor = Math.max(s.nodes[n].floor, token);
          }
          if (token <= s.lastToken) {
            violations.push({
              property: 'tokens',
              message: `${spec.name} was granted token ${token} after token ${s.lastToken}`,
            });
          }
          s.lastToken = Math.max(s.lastToken, token);
        }
        m.lease = { owner, left: ttl, ttl, token };
        const others = MANAGERS.filter(
          (o, oi) => oi !== mi && o.fleet === spec.fleet && s.managers[oi].lease !== undefined,
        );
        if (others.length > 0 && s.evicted !== 1) {
          violations.push({
            property: 'one-holder',
            message: `${spec.name} holds r while ${others.map((o) => o.name)} holds it${s.evicted === 2 ? ' (after an eviction nobody was warned about)' : ''}`,
          });
        }
        const label = () =>
          `${names}: granted on ${set.map((n) => NODES[n].name)}${token === undefined ? '' : `, token ${token}`}`;
        yield { label, state: s, violations };
      }
    }
  }

  function* extend(s0: State, mi: number): Generator<Step<State>> {
    const spec = MANAGERS[mi];
    const fleet = FLEETS[spec.fleet];
    for (const reach of reaches(fleet)) {
      const s = clone(s0);
      const m = s.managers[mi];
      const lease = m.lease!;
      s.extensions++;
      cover(s, mi, lease.ttl, reach);
      let count = 0;
      for (const n of reach) {
        const node = s.nodes[n];
        if (!votes(m.members[fleet.nodes.indexOf(n)], 0, lease.ttl, false)) continue;
        if (node.key?.owner !== lease.owner) continue;
        node.key.left = Math.max(node.key.left, lease.ttl);
        count++;
      }
      const ok = count >= fleet.quorum;
      if (ok) lease.left = lease.ttl;
      const label = `${spec.name} extends r on ${reach.map((n) => NODES[n].name)}: ${ok ? 'extended' : 'not extended'}`;
      yield { label, state: s, violations: [] };
    }
  }

  function release(s0: State, mi: number): Step<State> {
    const s = clone(s0);
    const m = s.managers[mi];
    for (const node of s.nodes) if (node.key?.owner === m.lease!.owner) node.key = undefined;
    m.lease = undefined;
    return { label: `${MANAGERS[mi].name} releases r`, state: s, violations: [] };
  }

  /** Whether a restart of `n` without its data stays within the assumption. */
  function mayLose(s: State, n: number): boolean {
    for (const fleet of FLEETS) {
      if (!fleet.nodes.includes(n)) continue;
      for (const x of fleet.nodes) {
        if (x === n) continue;
        if (s.nodes[x].lostAgo <= MAX_TTL / SECOND) return false;
        if (fleet === FLEETS[0] && s.nodes[x].floorLost) return false;
      }
    }
    return true;
  }

  function restart(s0: State, n: number, keep: boolean): Step<State> {
    const s = clone(s0);
    s.restarts++;
    const node = s.nodes[n];
    node.inc++;
    node.age = 0;
    if (!keep) {
      Object.assign(node, {
        born: undefined,
        key: undefined,
        horizons: FLEETS.map(() => ({})),
        counter: 0,
        floor: 0,
        fenced: FLEETS.map(() => undefined),
        stamp: undefined,
        lostAgo: 0,
        floorLost: true,
      });
    }
    FLEETS.forEach((fleet, f) => {
      if (!fleet.nodes.includes(n)) return;
      s.owed[f][n] = Math.max(s.owed[f][n], s.filed[f][n]);
      s.filed[f][n] = 0;
    });
    // Every manager that lists it sees the new run_id: it starts over on the node, and horizons
    // recorded before no longer cover anything (they are not filed under the new run_id).
    MANAGERS.forEach((spec, mi) => {
      const m = s.managers[mi];
      const j = FLEETS[spec.fleet].nodes.indexOf(n);
      if (!m.started || j < 0) return;
      m.members[j] = freshMember();
      for (const member of m.members) member.coveredUntil = -Infinity;
    });
    const how = keep ? 'keeping its data' : NODES[n].durableConfig ? 'without its files' : 'empty';
    return { label: `${NODES[n].name} restarts ${how}`, state: s, violations: [] };
  }

  function evict(s0: State, n: number): Step<State> {
    const s = clone(s0);
    s.evictions++;
    s.nodes[n].key = undefined;
    const warned = rules.evictionWarning(NODES[n].name, NODES[n].policy) !== undefined;
    s.evicted = Math.max(s.evicted, warned ? 1 : 2) as 0 | 1 | 2;
    const label = `${NODES[n].name} (${NODES[n].policy}, ${warned ? 'warned' : 'not warned'}) evicts r`;
    return { label, state: s, violations: [] };
  }

  function tick(s0: State): Step<State> {
    const s = clone(s0);
    for (const node of s.nodes) {
      node.age = Math.min(AGE_CAP, node.age + 1);
      node.lostAgo = Math.min(LOST_CAP, node.lostAgo + 1);
      if (node.key && (node.key.left -= SECOND) <= 0) node.key = undefined;
      for (const filed of node.horizons) {
        for (const id of Object.keys(filed)) if ((filed[id] -= SECOND) <= 0) delete filed[id];
      }
    }
    MANAGERS.forEach((spec, mi) => {
      const m = s.managers[mi];
      if (m.lease && (m.lease.left -= SECOND) <= 0) m.lease = undefined;
      m.members.forEach((member, j) => {
        if (member.state === 'waiting' && (member.voteAt -= SECOND) <= 0) {
          admit(s, member, FLEETS[spec.fleet].nodes[j]);
        }
        member.coveredUntil -= SECOND;
        if (member.coveredUntil < MIN_TTL) member.coveredUntil = -Infinity;
      });
    });
    for (const table of [s.filed, s.owed]) {
      for (const row of table) row.forEach((v, n) => (row[n] = Math.max(0, v - SECOND)));
    }
    return { label: 'a second passes', state: s, violations: [] };
  }

  /** The managers in the scope, and the nodes some of them list. */
  const inScope = MANAGERS.map((m) => scope.managers.includes(m.name));
  const listed = NODES.map((_, n) =>
    MANAGERS.some((m, mi) => inScope[mi] && FLEETS[m.fleet].nodes.includes(n)),
  );

  function* successors(s: State): Generator<Step<State>> {
    yield tick(s);
    for (let mi = 0; mi < MANAGERS.length; mi++) {
      if (!inScope[mi]) continue;
      const m = s.managers[mi];
      if (!m.started) {
        const started = clone(s);
        started.managers[mi].started = true;
        yield { label: `${MANAGERS[mi].name} starts`, state: started, violations: [] };
        continue;
      }
      yield* survey(s, mi);
      if (m.lease === undefined) {
        if (s.attempts < scope.attempts) yield* acquire(s, mi);
      } else {
        if (s.extensions < scope.extensions) yield* extend(s, mi);
        yield release(s, mi);
      }
    }
    if (s.restarts < scope.restarts) {
      for (let n = 0; n < NODES.length; n++) {
        if (!listed[n] || !(scope.restartable ?? [NODES[n].name]).includes(NODES[n].name)) {
          continue;
        }
        if (scope.keepData) yield restart(s, n, true);
        if (mayLose(s, n)) yield restart(s, n, false);
      }
    }
    if (s.evictions < scope.evictions) {
      for (let n = 0; n < NODES.length; n++) {
        if (NODES[n].policy !== 'noeviction' && s.nodes[n].key) yield evict(s, n);
      }
    }
  }

  return { initial: initial(scope), key, successors };
}

/** What a scope covers, in one line (for the reports); the fleet is the module header's. */
export function describeScope(scope: Scope): string {
  const restartable = scope.restartable ?? NODES.map((n) => n.name);
  const parts = [
    `managers ${scope.managers.join(', ')}`,
    scope.restarts > 0
      ? `≤ ${scope.restarts} restart of ${restartable.join('/')} (${scope.keepData ? 'keeping or losing' : 'losing'} its data)`
      : 'no restart',
    `≤ ${scope.attempts} attempts (reaching ${scope.reach === 'quorum' ? 'a quorum' : 'a quorum or more'})`,
    scope.extensions > 0 && `≤ ${scope.extensions} extension`,
    scope.evictions > 0 && `≤ ${scope.evictions} eviction`,
    scope.partitions && 'partitions',
    scope.fresh && 'fresh fleet',
    scope.longTtl !== 'no' && `m1 asks 5 s (${scope.longTtl})`,
    scope.horizonKey === 'fleet' && 'horizons per fleet',
  ];
  return `${scope.name} [${parts.filter(Boolean).join('; ')}]`;
}
