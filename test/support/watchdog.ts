import { spawn } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESERVATIONS } from './ports';

/**
 * Kills a fleet's redis-server processes when the process that owns the fleet dies without
 * cleaning up. `stop()` and the `exit` handler cover every orderly way out; a jest worker killed
 * by SIGKILL (OOM killer, jest's force exit, a developer's `kill -9`) runs neither, and its
 * redis-server children would otherwise live on, holding ports, until the machine reboots.
 *
 * The watchdog is a detached `sh` loop, not a Node script: it costs a few hundred kilobytes and
 * about a millisecond to start, against tens of megabytes and tens of milliseconds for Node, and
 * a suite starts many fleets. It checks once a second; when the owner is gone it SIGKILLs the pids
 * listed in `<dir>/pids` (only those still named redis-server, in case a pid was reused), removes
 * `dir`, and gives back the owner's port reservations (which would otherwise wait to be reclaimed).
 * It exits by itself when `dir` disappears, which is what a normal stop does, and `stop()` also
 * kills its process group at once.
 */
const SCRIPT = `
parent="$1"
dir="$2"
reservations="$3"
while kill -0 "$parent" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
[ -d "$dir" ] || exit 0
for pid in $(cat "$dir/pids" 2>/dev/null); do
  name=$(cat "/proc/$pid/comm" 2>/dev/null || ps -o comm= -p "$pid" 2>/dev/null)
  case "$name" in *redis-server*) kill -9 "$pid" 2>/dev/null ;; esac
done
rm -rf "$dir"
for file in "$reservations"/*; do
  [ "$(cat "$file" 2>/dev/null)" = "$parent" ] && rm -f "$file"
done
exit 0
`;

/** A running watchdog for one fleet directory. */
export interface Watchdog {
  /** Pid of the watchdog shell (the leader of its own process group). */
  readonly pid: number | undefined;
  /** Replaces the list of pids to kill if the owner dies; call it whenever a node (re)starts. */
  setPids(pids: Iterable<number>): void;
  /** Ends the watchdog at once. Synchronous, so the `exit` handler can call it too. */
  stop(): void;
}

/**
 * Starts a watchdog over `dir` (which must exist and which it deletes if the owner dies).
 * @param parentPid the owner to watch; the current process unless a test simulates another owner
 */
export function startWatchdog(dir: string, parentPid: number = process.pid): Watchdog {
  const pidFile = join(dir, 'pids');
  writeFileSync(pidFile, '');
  // detached: its own process group and session, so Ctrl-C in a terminal or the death of the
  // owner's group does not take the watchdog down with the owner. unref: it must never keep a
  // jest worker alive.
  const args = [String(parentPid), dir, RESERVATIONS];
  const child = spawn('sh', ['-c', SCRIPT, 'redlock-fleet-watchdog', ...args], {
    detached: true,
    stdio: 'ignore',
  });
  child.on('error', () => undefined); // no sh: the exit handler and stop() still clean up
  child.unref();
  let stopped = false;
  return {
    pid: child.pid,
    setPids(pids) {
      if (stopped) return;
      // Write then rename, so the shell never reads a half-written list.
      writeFileSync(`${pidFile}.tmp`, [...pids].join('\n'));
      renameSync(`${pidFile}.tmp`, pidFile);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL'); // the group: the shell and its current `sleep`
      } catch {
        // Already gone (it exits by itself once the fleet directory is removed).
      }
    },
  };
}
