import type { FairScope } from './fair-search';

/**
 * The bounded scopes of the fair queue's search (fair-search.ts): three nodes, two lock managers,
 * one or two resources, three or four acquisitions. Every waiter but those that may give up has
 * a wait long enough for everyone ahead of it. `npm test` runs each with its budget;
 * `FAIR_SEARCH_BUDGET=3 npx jest test/unit/fair-search.spec.ts` raises every budget.
 */
const LONG = 2_000;
/** The longest a resource may idle while someone waits, with no information lost (ms). */
const IDLE = 60;
/** A waiter of `manager` arriving `at` ms, holding 10 ms, with a wait long enough for all. */
const waiter = (manager: number, at: number) => ({ manager, at, hold: 10, wait: LONG });
/** Manager 0's holder, manager 1's waiter, then manager 0's next: a hand-off across processes. */
const ACROSS = [waiter(0, 0), waiter(1, 2), waiter(0, 4)];

export const FAIR_SCOPES: readonly FairScope[] = [
  {
    // Two fair processes: a local hand-off competing with a queued group (issue 24 items 2b, 3).
    name: 'two fair managers',
    managers: ['queue', 'queue'],
    waiters: ACROSS,
    budget: 2,
    idleMs: IDLE,
  },
  {
    // Two nodes of three slow while the other process's group queues: the next local waiter,
    // which came after that group, comes first on them. The hand-off's swap wins there and
    // names the group on the third node, in the default schedule; the budget's deviations are
    // taken around it. (At B = 2 it found stop 49's withdrawal of that naming idling the group
    // a whole lease, `1:1 30:3`; the withdrawal was removed.)
    name: 'hand-off split between nodes',
    managers: ['queue', 'queue'],
    waiters: [waiter(0, 0), waiter(1, 2), waiter(0, 3)],
    slow: { nodes: [1, 2], fromMs: 2.1, untilMs: 8, delayMs: 3 },
    budget: 2,
    idleMs: IDLE,
  },
  {
    // A manager with fairness off on a key whose queue keeps moving (issue 24 item 1).
    name: 'mixed fairness',
    managers: ['queue', 'off'],
    waiters: [...ACROSS, waiter(0, 6)],
    budget: 2,
    idleMs: IDLE,
  },
  {
    // Fenced and multi-resource acquisitions of a fair manager beside queued ones (item 1).
    name: 'fenced and multi-resource',
    managers: ['queue', 'queue'],
    waiters: [
      waiter(0, 0),
      { ...waiter(1, 2), fencing: true },
      waiter(0, 4),
      { ...waiter(1, 6), resources: ['a', 'b'] },
    ],
    budget: 1,
    idleMs: IDLE,
  },
  {
    // Waiters whose wait ends as the holder releases, in another process and in its own
    // (item 2: the turn passes on at once; no grant after the wait).
    name: 'gives up during a hand-off',
    managers: ['queue', 'queue'],
    waiters: [
      waiter(0, 0),
      { ...waiter(1, 2), wait: 8.3, mayGiveUp: true },
      { ...waiter(0, 3), wait: 7.5, mayGiveUp: true },
      waiter(0, 4),
    ],
    budget: 1,
    idleMs: IDLE,
  },
  {
    // A group that died queued first on two nodes of three (item 2: within one handOffLease).
    name: 'dead group at the head',
    managers: ['queue', 'queue'],
    waiters: ACROSS,
    deadHeadOn: [0, 1],
    budget: 1,
    // handOffLease (2 node timeouts + the retry delay: 340 ms) and the usual.
    idleMs: 340 + IDLE,
  },
];
