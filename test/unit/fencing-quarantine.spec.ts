import { fenceKeysOf, tokenFrom } from '../../lib/core/fencing';
import { admissionWait, type PeerStanding } from '../../lib/core/quarantine';

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

describe('quarantine decision: how long a node that may have lost keys waits (admissionWait)', () => {
  const peer = (horizonLeftMs: number, intact = true): PeerStanding => ({
    stamp: intact ? 'run' : undefined,
    horizonLeftMs,
    floor: 0,
    intact,
  });

  it.each<[string, PeerStanding[], number, number, number | undefined]>([
    // name, peers that answered, how many peers there are, quorum, expected wait
    ['every peer answered, no horizon left: at once', [peer(0), peer(-5)], 2, 2, 0],
    ['every peer answered: the longest horizon, plus drift', [peer(1_000), peer(200)], 2, 2, 1_012],
    [
      'horizons of peers that lost their data count too',
      [peer(0, false), peer(500, false)],
      2,
      2,
      507,
    ],
    ['3 nodes: one peer silent is too few to tell', [peer(0)], 2, 2, undefined],
    ['5 nodes: 3 intact peers of 4 are enough', [peer(0), peer(300), peer(0)], 4, 3, 305],
    [
      '5 nodes: 2 intact of 3 answering are not',
      [peer(0), peer(0), peer(0, false)],
      4,
      3,
      undefined,
    ],
    ['1 node: nothing to ask, nothing to wait for', [], 0, 1, 0],
  ])('%s', (_name, peers, peerCount, quorum, expected) => {
    const wait = admissionWait(peers, peerCount, quorum, 0.01, { ageMs: 1_000, fallbackMs: 5_000 });
    expect(wait.informed ? wait.waitMs : undefined).toBe(expected);
  });
});

describe('quarantine decision when too few peers answer', () => {
  it('waits until the node has been up for the longest lease known here, and every horizon read', () => {
    const peer = { stamp: undefined, horizonLeftMs: 0, floor: 0, intact: false };
    expect(admissionWait([peer], 2, 2, 0, { ageMs: 1_000, fallbackMs: 5_000 })).toEqual({
      waitMs: 4_000,
      informed: false,
    });
    expect(
      admissionWait([{ ...peer, horizonLeftMs: 9_000 }], 2, 2, 0, {
        ageMs: 1_000,
        fallbackMs: 5_000,
      }),
    ).toEqual({ waitMs: 9_002, informed: false });
  });
});
