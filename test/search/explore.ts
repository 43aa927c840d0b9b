/**
 * Explicit-state breadth-first search: every state reachable from `initial` through
 * `successors`, each visited once (by its canonical `key`), no sampling. Breadth-first, so the
 * first counterexample found for a property is a shortest one.
 */
export interface Step<S> {
  /** What happened, for the trace (a function: only built for states kept, and traces). */
  readonly label: string | (() => string);
  readonly state: S;
  /** Properties this step broke (empty: none). */
  readonly violations: readonly Violation[];
}

export interface Violation {
  /** Which property: 'one-holder', 'tokens', 'bounded-wait', 'protects-nothing'. */
  readonly property: string;
  readonly message: string;
}

export interface Model<S> {
  readonly initial: S;
  key(state: S): string;
  successors(state: S): Iterable<Step<S>>;
}

export interface Found extends Violation {
  /** The actions from the initial state to the step that broke the property. */
  readonly trace: readonly string[];
}

export interface Exploration {
  /** Distinct states visited. */
  readonly states: number;
  /** Transitions taken (successors generated). */
  readonly transitions: number;
  /** Longest shortest path from the initial state (BFS depth) reached. */
  readonly depth: number;
  readonly ms: number;
  /** The first violation of each distinct (property, message) pair, with a shortest trace. */
  readonly violations: readonly Found[];
  /** False when `maxStates` stopped the search before the scope was exhausted. */
  readonly complete: boolean;
}

export interface ExploreOptions {
  /** Stop at the first violation of a property not in `known` (a mutant is found). */
  readonly stopAtFirst?: boolean;
  /** Properties whose violations are recorded but do not stop the search (known costs). */
  readonly known?: readonly string[];
  /** Give up after this many states (the result then says `complete: false`). */
  readonly maxStates?: number;
  /**
   * Keep a 64-bit hash of each state's key instead of the key (hash compaction, as SPIN does):
   * far less memory for large scopes, at the risk of two states sharing a hash (for 10^7 states,
   * about 3 in a million) and one of them going unexplored.
   */
  readonly compact?: boolean;
  /**
   * Depth-first instead (with `compact`): memory for the visited hashes and one path only, so the
   * largest scopes fit; every reachable state is still visited, but a trace found is not the
   * shortest.
   */
  readonly depthFirst?: boolean;
}

/** Two 32-bit FNV-1a hashes of `text` (different offsets), as one string. */
export function hash64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return ((a >>> 0) * 4294967296 + (b >>> 0)).toString(36);
}

const text = (label: Step<unknown>['label']) => (typeof label === 'string' ? label : label());

export function explore<S>(model: Model<S>, options: ExploreOptions = {}): Exploration {
  if (options.depthFirst) return exploreDepthFirst(model, options);
  const started = Date.now();
  const maxStates = options.maxStates ?? Infinity;
  // Parent links by state number, to rebuild a trace without keeping every state.
  const parent: number[] = [-1];
  const labels: string[] = [''];
  const depthOf: number[] = [0];
  const idOf = options.compact ? (state: S) => hash64(model.key(state)) : model.key;
  const visited = new Map<string, number>([[idOf(model.initial), 0]]);
  let frontier: { id: number; state: S }[] = [{ id: 0, state: model.initial }];
  let transitions = 0;
  let depth = 0;
  const violations: Found[] = [];
  const seen = new Set<string>();
  const trace = (id: number, last: string) => {
    const steps = [last];
    for (let at = id; at > 0; at = parent[at]) steps.push(labels[at]);
    return steps.reverse();
  };
  const result = (complete: boolean): Exploration => ({
    states: visited.size,
    transitions,
    depth,
    ms: Date.now() - started,
    violations,
    complete,
  });
  while (frontier.length > 0) {
    const next: { id: number; state: S }[] = [];
    for (const { id, state } of frontier) {
      for (const step of model.successors(state)) {
        transitions++;
        for (const v of step.violations) {
          const name = `${v.property}: ${v.message}`;
          if (seen.has(name)) continue;
          seen.add(name);
          violations.push({ ...v, trace: trace(id, text(step.label)) });
          if (options.stopAtFirst && !options.known?.includes(v.property)) return result(false);
        }
        const key = idOf(step.state);
        if (visited.has(key)) continue;
        const child = parent.length;
        visited.set(key, child);
        parent.push(id);
        labels.push(text(step.label));
        depthOf.push(depthOf[id] + 1);
        depth = Math.max(depth, depthOf[id] + 1);
        next.push({ id: child, state: step.state });
        if (visited.size >= maxStates) return result(false);
      }
    }
    frontier = next;
  }
  return result(true);
}

function exploreDepthFirst<S>(model: Model<S>, options: ExploreOptions): Exploration {
  const started = Date.now();
  const maxStates = options.maxStates ?? Infinity;
  const idOf = options.compact ? (state: S) => hash64(model.key(state)) : model.key;
  const visited = new Set<string>([idOf(model.initial)]);
  const path: { label: string; next: Iterator<Step<S>> }[] = [
    { label: '', next: model.successors(model.initial)[Symbol.iterator]() },
  ];
  let transitions = 0;
  let depth = 0;
  const violations: Found[] = [];
  const seen = new Set<string>();
  const result = (complete: boolean): Exploration => ({
    states: visited.size,
    transitions,
    depth,
    ms: Date.now() - started,
    violations,
    complete,
  });
  while (path.length > 0) {
    const top = path[path.length - 1];
    const next = top.next.next();
    if (next.done) {
      path.pop();
      continue;
    }
    const step = next.value;
    transitions++;
    for (const v of step.violations) {
      const name = `${v.property}: ${v.message}`;
      if (seen.has(name)) continue;
      seen.add(name);
      violations.push({ ...v, trace: [...path.slice(1).map((p) => p.label), text(step.label)] });
      if (options.stopAtFirst && !options.known?.includes(v.property)) return result(false);
    }
    const key = idOf(step.state);
    if (visited.has(key)) continue;
    visited.add(key);
    if (visited.size >= maxStates) return result(false);
    path.push({ label: text(step.label), next: model.successors(step.state)[Symbol.iterator]() });
    depth = Math.max(depth, path.length - 1);
  }
  return result(true);
}
