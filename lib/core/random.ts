/**
 * The core's source of random draws (architecture.md §6): uniform numbers in [0, 1), as `Math.random`.
 * Every draw of the core goes through one (the retry jitter, the fair queue's jitter and, when a
 * source is given, owner values and the prefixes of release and group ids), so that a
 * simulation that injects a seeded one replays a run exactly from its seed.
 */
export type RandomSource = () => number;

/**
 * `bytes` bytes drawn from `random`, 32 bits per draw (a draw carries at least 32 random bits:
 * `Math.random` 52, a seeded simulation source 32). Not for production secrets: the core takes
 * owner values from the CSPRNG unless a source was injected (owner-value.ts).
 */
export function drawBytes(random: RandomSource, bytes: number): Buffer {
  const buffer = Buffer.alloc(Math.ceil(bytes / 4) * 4);
  for (let i = 0; i < buffer.length; i += 4) {
    buffer.writeUInt32BE(Math.floor(random() * 0x1_0000_0000) >>> 0, i);
  }
  return buffer.subarray(0, bytes);
}

/**
 * Ids that are unique but not secret (release announcements, fair-queue groups): a prefix drawn
 * once per lock manager and a counter. From `random` when one is injected, so that two runs of
 * one seed in one process name everything alike (a queue orders groups of equal score by name).
 */
export function idSource(random: RandomSource): () => string {
  const prefix = drawBytes(random, 6).toString('base64url');
  let seq = 0;
  return () => prefix + (seq = (seq + 1) % Number.MAX_SAFE_INTEGER).toString(36);
}
