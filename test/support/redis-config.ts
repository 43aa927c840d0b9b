/**
 * redis-server arguments both backends share, so a node behaves the same whether it runs as a
 * local process or in a container: only where it listens and where it keeps files differ.
 */

/**
 * Persistence settings. RDB snapshots are always off (`--save ''`): they fork in the background
 * and would make "what survives a kill" depend on timing. Without AOF a killed node comes back
 * empty, which is the failure Redlock's analysis is about; with AOF every write is fsynced before
 * it is acknowledged, so a killed node comes back with every acknowledged key.
 */
export function persistenceArgs(aof: boolean): string[] {
  return aof
    ? ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always']
    : ['--save', '', '--appendonly', 'no'];
}
