import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOOPBACK } from './probe';

/**
 * Free loopback ports for test nodes, safe against the other jest worker doing the same.
 *
 * Three layers, each covering what the one before cannot:
 * 1. Ports are drawn at random *below* the kernel's ephemeral range. Ports from `listen(0)` would
 *    be ephemeral ones, which the kernel also hands to outgoing connections: while a node is
 *    killed, a client socket could take its port and make `restart()` fail.
 * 2. A reservation file per port (created with O_EXCL, holding the owner's pid) shared by all
 *    processes on the machine: two workers never pick the same port, and a port stays reserved
 *    for the whole life of its fleet, so nobody takes it while its node is down between `kill()`
 *    and `restart()`. Reservations of dead owners are reclaimed.
 * 3. A quick listen test skips ports that something outside the suite holds. That something can
 *    still bind between the test and redis-server's bind, so callers retry on "Address already in
 *    use" with a fresh port.
 */

/** Where reservation files live: one file per reserved port, named after it, holding the owner's pid. */
export const RESERVATIONS = join(tmpdir(), 'nestjs-redlock-test-ports');
const LOWEST = 20_000;
const MAX_ATTEMPTS = 200;

/** [low, high) to draw from: from LOWEST up to where the ephemeral range starts (Linux), if sane. */
function candidateRange(): [number, number] {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low > LOWEST + 1_000) return [LOWEST, low];
  } catch {
    // Not Linux: fall through to a range below the IANA dynamic ports (macOS, BSD use 49152+).
  }
  return [LOWEST, 49_152];
}

const [LOW, HIGH] = candidateRange();

/** True when `pid` names a live process (EPERM: alive, just not ours). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the reservation file for `port`, reclaiming it once if its owner is dead. */
function tryReserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(file, 'utf8'));
    } catch {
      // Released meanwhile: try again.
      continue;
    }
    // An empty file is a reservation being written right now by a live owner.
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) return false;
    try {
      unlinkSync(file);
    } catch {
      // Someone else reclaimed it first; the retry decides who gets it.
    }
  }
  return false;
}

/** Resolves true when nothing on this machine listens on `port` at the loopback address. */
function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: LOOPBACK, port, exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

/**
 * Reserves a port that nothing seems to listen on, for this process, until {@link releasePort}.
 * The reservation keeps other fleets away; it does not bind the port, so a process outside the
 * suite may still win the race: treat a bind failure by asking for another port.
 */
export async function reservePort(): Promise<number> {
  mkdirSync(RESERVATIONS, { recursive: true });
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (!tryReserve(port)) continue;
    if (await listenable(port)) return port;
    releasePort(port);
  }
  throw new Error(`no free loopback port found in [${LOW}, ${HIGH}) after ${MAX_ATTEMPTS} tries`);
}

/** Gives a port this process reserved back. Synchronous, so the `exit` handler can call it. */
export function releasePort(port: number): void {
  const file = join(RESERVATIONS, String(port));
  try {
    // Only our own reservation: after a release, another process may already hold the port.
    if (readFileSync(file, 'utf8') === String(process.pid)) unlinkSync(file);
  } catch {
    // Already released.
  }
}
