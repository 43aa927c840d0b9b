/**
 * The wording of the module-option tables (issue 26): the one place a row's text is written.
 * `scripts/option-tables.mjs` renders it into README.md and docs/operations.md; the option names,
 * which ones are required, and every default come from the sources (`REDLOCK_DEFAULTS` and the
 * `@default` tags of `RedlockOptions` / `RedlockModuleOptions`), not from here.
 *
 * A meaning may name another option's default as `{default:name}`: it is rendered as that
 * option's default cell, so that a changed default is not left stale in a sentence.
 */

/**
 * Every documented module option, in the order of the full table (docs/operations.md, whose
 * links are relative to docs/). `readme`: the README's shorter wording, for the options the
 * README's table shows (its links are relative to the repository root).
 * @type {ReadonlyArray<{ name: string; meaning: string; readme?: string }>}
 */
export const ROWS = [
  {
    name: 'nodes',
    meaning:
      'the independent Redis masters: `redis://` / `rediss://` URLs, ioredis options (TLS, ACL `username`/`password` pass through), your own ioredis clients, or `RedisNode` adapters',
    readme: 'URLs, ioredis options, or your ioredis / node-redis clients',
  },
  {
    name: 'ttl',
    meaning: 'lease in ms: how long the nodes keep a lock whose holder disappeared',
    readme: "lease in ms: how long nodes keep a vanished holder's lock",
  },
  {
    name: 'driftFactor',
    meaning: 'clock-rate drift allowance; validity = ttl − elapsed − (ttl × driftFactor + 2 ms)',
  },
  {
    name: 'nodeTimeout',
    meaning:
      'bound on one command to one node, ms; at most a quarter of `ttl` (and of any per-call `ttl`)',
    readme: 'bound on one command to one node, ms; ≤ a quarter of `ttl`',
  },
  {
    name: 'wait',
    meaning:
      'how long `acquire()` keeps trying, ms; `0` = one attempt; `Infinity` = until free or aborted',
    readme: 'how long `acquire()` keeps trying, ms; `0`: one attempt',
  },
  {
    name: 'retryDelay',
    meaning: "base pause between attempts, ms (never past a blocking lease's known expiry)",
    readme: 'pause between attempts, ms (+ up to `retryJitter`, {default:retryJitter})',
  },
  {
    name: 'retryJitter',
    meaning: 'random extra pause, up to this many ms, so waiters spread out',
  },
  {
    name: 'keyPrefix',
    meaning: 'lock keys live at `${keyPrefix}${resource}`',
    readme: 'lock keys live at `${keyPrefix}${resource}`',
  },
  {
    name: 'maxHold',
    meaning:
      'longest total hold with auto-extension, ms; then the lock is left to expire and reported lost',
  },
  {
    name: 'maxResourceLength',
    meaning:
      'longest resource name, in UTF-8 bytes; a longer one is a `LockResourceError` (400 under `@Locked`): a key taken from a request body must not grow without bound',
  },
  {
    name: 'mapLockedError',
    meaning: 'app-wide override of how `@Locked` reports lock errors ([docs/locked.md](locked.md))',
  },
  {
    name: 'fencing',
    meaning:
      'issue a fencing token with every lock (`lock.fencingToken`); per call and per `@Locked` too. One more round trip per acquisition',
  },
  {
    name: 'quarantine',
    meaning:
      'delayed restarts ([guarantees.md](guarantees.md)): a node that restarted without proof that its data survived votes only once every lease any client could have held on it has ended — when the lease horizons its peers filed before the restart have passed, at most `maxTtl` after its restart. `false`: off',
  },
  {
    name: 'maxTtl',
    meaning:
      'the longest lease of the fleet, ms (at most 24 h), **the same on every lock manager of the fleet**: a `ttl`, per-call ttl, `@Locked` ttl or `extend(ttl)` above it is refused with `RedlockConfigError`. It bounds how long a restarted node is left out; hold longer work by extending (`using()`, `@Locked`)',
    readme: "the fleet's longest lease, ms, the same on every client",
  },
  {
    name: 'trustUnidentifiedNodes',
    meaning:
      'let a node whose server refuses `INFO` (ACLs) vote; its restarts cannot be detected, so only for servers that keep their data',
  },
  {
    name: 'reentrant',
    meaning:
      'a nested acquisition of resources the async context already holds reuses that lock; per call and per `@Locked` too',
  },
  {
    name: 'notifications',
    meaning:
      "release notifications: a waiting acquisition listens on the lock key's channel and retries when a release is announced (one shared subscriber connection per node, opened on the first wait); while every node confirms its subscription it does not poll before the blocking lease ends; `false`: waiters poll every `retryDelay`. Releases are announced either way",
  },
  {
    name: 'fairness',
    meaning:
      "fair hand-off ([fair-hand-off.md](fair-hand-off.md)): `'queue'` serves the waiters of one resource in the order they started waiting, across processes; a release wakes only the next waiter and hands the lock straight to a waiter of its own process when that one is next. Single-resource locks without fencing that wait (`wait` > 0) queue; the others take their turn beside the queue. Needs `notifications`: with `notifications: false` the default is `'off'`. `'off'`: each waiting process retries on each release, the first attempt to reach a quorum wins; keep it while node-redlock shares your keys ([migrating.md](migrating.md))",
  },
  {
    name: 'handOffLease',
    meaning:
      "with `fairness: 'queue'`: how long a released lock stays reserved for the next waiter, ms (at most `ttl`); a waiter that died or left costs the queue at most this",
  },
  {
    name: 'telemetry',
    meaning:
      'OpenTelemetry spans and metrics through `@opentelemetry/api` when it is installed, to the providers your app registered (no-ops without); `false`: never load the API; `{ recordResources: true }`: resource names on spans too ([OpenTelemetry](#opentelemetry))',
  },
  {
    name: 'awaitQuorum',
    meaning:
      'readiness at bootstrap, in ms: wait up to this long for a quorum of the nodes to answer a `PING` (as `health()` does) before the application finishes starting, and fail the bootstrap with a `RedlockError` if none did — so that an instance whose lock nodes are all unreachable is not reported ready only to fail its first locked call. `0` starts without waiting (calls fail with 503 until a quorum is back); `Infinity` waits as long as it takes',
    readme: 'at bootstrap, wait this many ms for a quorum, else fail',
  },
];

/**
 * The README's short table: these rows, in this order (the ones an app sets first); every other
 * documented option is named in the sentence under it, unless a shown row already names it.
 */
export const README_ROWS = [
  'nodes',
  'ttl',
  'maxTtl',
  'nodeTimeout',
  'wait',
  'retryDelay',
  'keyPrefix',
  'awaitQuorum',
];

/** How the README's sentence names an option, where more than its name: a link to its page. */
export const README_MENTIONS = {
  fairness: '`fairness` ([fair hand-off](docs/fair-hand-off.md))',
};

/**
 * Options `RedlockModuleOptions` accepts that the tables leave out on purpose, and why. (Options
 * marked `@internal` in their JSDoc are left out without being listed.)
 */
export const UNDOCUMENTED = {
  clock: 'a virtual clock, for tests that drive time; not for apps',
};
