import { evenNodesWarning, startupLine } from '../../lib/core/observability/startup-report';

/** The words a lock manager says at start (issue 25, frictions 7 and 9). */
describe('startup words', () => {
  it('one line: nodes, quorum and each node, with the verdict when no quorum is reachable', () => {
    expect(
      startupLine({
        up: true,
        quorum: 2,
        nodes: [
          { node: 'a:1', up: true, voting: true },
          { node: 'b:1', up: true, voting: false, reason: 'quarantine' },
          { node: 'c:1', up: false, voting: false, error: 'not connected' },
        ],
      }),
    ).toBe('3 nodes, quorum 2: a:1 up, b:1 up (not voting), c:1 down');
    expect(
      startupLine({ up: false, quorum: 1, nodes: [{ node: 'a:1', up: false, voting: false }] }),
    ).toBe('1 node, quorum 1: a:1 down — no quorum reachable');
  });

  it('the even-number warning reads as a sentence', () => {
    expect(evenNodesWarning(2)).toBe(
      '2 Redis nodes tolerate no failed node, as 1 node does: the 2nd adds load, not fault tolerance; use an odd number of nodes',
    );
    expect(evenNodesWarning(4)).toBe(
      '4 Redis nodes tolerate 1 failed node, as 3 nodes do: the 4th adds load, not fault tolerance; use an odd number of nodes',
    );
    expect(evenNodesWarning(6)).toMatch(/^6 Redis nodes tolerate 2 failed nodes, as 5 nodes do/);
  });
});
