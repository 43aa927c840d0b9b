// The S2 critical section, shared by the workers and the calibration.
import { setTimeout as delay } from 'node:timers/promises';

/** A read-modify-write of a counter on the data node that only mutual exclusion keeps exact. */
export async function criticalSection(client, name) {
  const value = Number(await client.get(name));
  await delay(1);
  await client.set(name, value + 1);
}
