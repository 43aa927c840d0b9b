import { fenceKeysOf, tokenFrom } from '../../lib/core/fencing';
import { votingNodes, type NodeAge } from '../../lib/core/quarantine';

describe('fencing arithmetic', () => {
  it.each([
    [[5], 6],
    [[5, 9, 7], 10],
    [[1_700_000_000_000_000, 1_700_000_000_000_123], 1_700_000_000_000_124],
  ])('the token for fences %p is %p: one above the highest', (fences, token) => {
    expect(tokenFrom(fences)).toBe(token);
  });

  it('refuses a token that is not an exact integer', () => {
    expect(() => tokenFrom([2 ** 53])).toThrow(RangeError);
  });

  it("counter keys cannot be any resource's lock key (NUL is refused in resources)", () => {
    expect(fenceKeysOf(['redlock:a', 'redlock:b'])).toEqual([
      'redlock:a\u0000fence',
      'redlock:b\u0000fence',
    ]);
  });
});

describe('quarantine decision', () => {
  const old = (ageMs = 60_000): NodeAge => ({ ageMs, durable: false });
  const young = (ageMs = 1_000): NodeAge => ({ ageMs, durable: false });
  const unknown: NodeAge = { ageMs: undefined, durable: false };
  const durable: NodeAge = { ageMs: 10, durable: true };

  it.each<[string, NodeAge[], boolean[]]>([
    ['all old: all vote', [old(), old(), old()], [true, true, true]],
    ['a restarted node does not vote', [old(), young(), old()], [true, false, true]],
    [
      'two restarted nodes of five do not vote',
      [old(), young(), young(), old(), old()],
      [true, false, false, true, true],
    ],
    [
      'exactly as old as the quarantine votes',
      [old(10_000), young(9_999), old()],
      [true, false, true],
    ],
    ['a durable node votes however young', [old(), durable, young()], [true, true, false]],
    ['a node of unknown age votes (INFO refused)', [old(), unknown, young()], [true, true, false]],
    ['an all-new fleet votes (just started)', [young(), young(3_000), young()], [true, true, true]],
    ['all new but one old: the new ones wait', [young(), young(), old()], [false, false, true]],
  ])('%s', (_name, nodes, expected) => {
    expect(votingNodes(nodes, 10_000)).toEqual(expected);
  });
});
