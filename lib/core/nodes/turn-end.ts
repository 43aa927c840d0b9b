/**
 * Work deferred to the end of this turn of the event loop: what `setImmediate` runs, after the
 * turn's I/O callbacks (the poll phase) and every tick and microtask they led to.
 *
 * The ioredis transport uncorks its sockets here, once a turn has issued a command on one behind
 * several awaiting their replies (or the turn before corked several: the load goes on). Every
 * command issued from then on while the turn handles its I/O leaves in one write per node: an
 * HTTP app whose requests arrive together sends their acquisitions together, not one write per
 * request as an uncork at the end of each tick did. Measured in `bench/nest-http.mjs` (Nest 11,
 * 3 nodes, 32 connections): 25-35 % more requests per second on a locked handler, CPU per
 * request 143-149 µs against 178-203. A lone lock cycle schedules nothing here
 * (IoredisTransport.batch): waiting for the end of every turn, it ran at 0.82-0.87x the rate of
 * one written at once (bench S1, c = 1, 5 nodes).
 *
 * One `setImmediate` per turn for every socket, not one per socket.
 */
const due: Array<() => void> = [];

function runDue(): void {
  const now = due.splice(0);
  for (const work of now) {
    try {
      work();
    } catch {
      // An uncork of a socket that closed meanwhile: nothing is left to send on it, and the
      // other sockets must still be flushed.
    }
  }
}

/** Runs `work` at the end of this turn of the event loop (see the file's comment). */
export function atTurnEnd(work: () => void): void {
  due.push(work);
  if (due.length === 1) setImmediate(runDue);
}
