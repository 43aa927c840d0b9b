import { createHash } from 'node:crypto';
import type { KeyState } from './nodes/node';

/** What one node says about a resource's key. */
export interface NodeLockState {
  /** `host:port`, never credentials. */
  readonly node: string;
  /** `locked`: a key is there; `free`: none; `unknown`: the node did not answer in time. */
  readonly state: 'locked' | 'free' | 'unknown';
  /**
   * An opaque tag of the holder's owner value (a short hash): equal tags on several nodes mean
   * one holder; it cannot be used to release or extend the lock.
   */
  readonly holder?: string;
  /** The key's remaining lease in ms (-1: no expiry, a foreign key). */
  readonly remainingMs?: number;
  /** Why the state is unknown. */
  readonly error?: string;
}

/** A resource as the nodes see it now, from `inspect()`. */
export interface LockInspection {
  readonly resource: string;
  readonly nodes: readonly NodeLockState[];
  /** Whether this process holds a lock on it now. */
  readonly heldHere: boolean;
}

/** A lock this process holds, from `heldLocks()`. */
export interface HeldLockInfo {
  readonly resources: readonly string[];
  /** Since the grant, in ms. */
  readonly heldMs: number;
  /** Validity left, in ms. */
  readonly remainingMs: number;
  /** Successful extensions so far. */
  readonly extensions: number;
  readonly fencingToken?: number;
}

/** An opaque, short tag of an owner value: enough to tell holders apart, useless to act as one. */
export function holderTag(value: string): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, 10);
}

/** One node's {@link KeyState} as a {@link NodeLockState}. */
export function nodeLockState(node: string, key: KeyState): NodeLockState {
  if (key.value === null) return { node, state: 'free' };
  return { node, state: 'locked', holder: holderTag(key.value), remainingMs: key.pttl };
}

/** One node in a health check. */
export interface NodeHealthState {
  readonly node: string;
  /** It answered a PING within `nodeTimeout`. */
  readonly up: boolean;
  /** The PING's round trip in ms, when it answered. */
  readonly latencyMs?: number;
  /** Why it is down, in the library's words first. */
  readonly error?: string;
  /**
   * It counts toward the quorum now: `up` alone does not make it (a node restarted without its
   * data, one whose Redis user lacks a permission, one listed twice). `up` of the whole check
   * is: a quorum of nodes both up and voting.
   */
  readonly voting: boolean;
  /** Why an `up` node is not `voting`. */
  readonly reason?: string;
}

/** A health check of the lock service, from `health()`. */
export interface RedlockHealth {
  /** A quorum of nodes answered in time and may vote: locks can be taken and released. */
  readonly up: boolean;
  readonly quorum: number;
  readonly nodes: readonly NodeHealthState[];
}
