import { type AgentRow, agentByTokenHash } from '../agent/agent.repository';
import { hashToken } from '../agent/token';
import type { Store } from '../store/engine';
import { hasColumn, probeWrite, writableTables as writableBy } from '../store/privileges';
import { type Tx, inTx } from '../store/tx';

/**
 * The receipt endpoint's one way into the database: every transaction it opens is READ ONLY and
 * runs as the role `retract_reader`, which holds SELECT grants only (db/migrations/0001_core.ts),
 * with `retract.fleet` set so row-level security confines it to the caller's fleet. A write
 * through this path is refused by the database twice over: SQLSTATE 25006 (read-only
 * transaction) and, were the transaction writable, 42501 (permission denied).
 */
const READER_ROLE = 'retract_reader' as const;

/** Runs `fn` in a read-only REPEATABLE READ transaction of `fleet` as retract_reader: one consistent snapshot, no writes possible. */
export function readerTx<T>(store: Store, fleet: string | null, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return inTx(store, { fleet, readOnly: true, role: READER_ROLE }, fn);
}

/** The agent holding `token`, looked up through the reader path (retract_authenticate), or null. */
export async function authenticateReader(store: Store, token: string | null | undefined): Promise<AgentRow | null> {
  if (typeof token !== 'string' || token.length < 8 || token.length > 512) return null;
  return readerTx(store, null, (tx) => agentByTokenHash(tx, hashToken(token)));
}

export interface ReadOnlyProof {
  /** SQLSTATE the database raised when the probe tried to write through the reader path. */
  refusedWith: string;
  /** Tables on which retract_reader holds any write privilege (must be empty). */
  writableTables: string[];
}

/**
 * Proves, against the database itself, that the reader path cannot write: a probe INSERT inside
 * a reader transaction must fail with SQLSTATE 25006, and retract_reader must hold no INSERT,
 * UPDATE, DELETE or TRUNCATE privilege on any table. Throws when either does not hold.
 */
export async function proveReadOnly(store: Store): Promise<ReadOnlyProof> {
  let refusedWith: string | null = null;
  try {
    await readerTx(store, null, probeWrite);
  } catch (e) {
    refusedWith = (e as { code?: string }).code ?? null;
    if (refusedWith !== '25006' && refusedWith !== '42501') throw e;
  }
  if (!refusedWith) throw new Error('the reader path wrote to the database; refusing to serve receipts through it');
  const writableTables = await readerTx(store, null, (tx) => writableBy(tx, READER_ROLE));
  if (writableTables.length > 0) {
    throw new Error(
      `role ${READER_ROLE} holds write privileges on ${writableTables.join(', ')}; revoke them before serving receipts`,
    );
  }
  return { refusedWith, writableTables };
}

/** What the MCP write role (retract_mcp, 0012_mcp_writer) must never write: who may act, with which token, in which fleet, and the store's own records. */
const NEVER_WRITTEN_BY_MCP = ['agents', 'agent_tokens', 'fleets', 'store_meta', 'effect_kinds', 'adjudication_leases'];

/**
 * Checks, against the database, the bounds of the role the write tools run as: it exists, and it holds
 * no write privilege on NEVER_WRITTEN_BY_MCP. Returns the tables it may write.
 */
export async function proveWriterBounds(store: Store): Promise<string[]> {
  let writable: string[];
  try {
    writable = await readerTx(store, null, (tx) => writableBy(tx, 'retract_mcp'));
  } catch (e) {
    if ((e as { code?: string }).code === '42704')
      throw new Error('the role retract_mcp does not exist; run `retract migrate` first (0012_mcp_writer)');
    throw e;
  }
  const bad = writable.filter((t) => NEVER_WRITTEN_BY_MCP.includes(t));
  if (bad.length > 0)
    throw new Error(
      `role retract_mcp holds write privileges on ${bad.join(', ')}; revoke them before serving the write tools`,
    );
  return writable;
}

/** True when the schema the tools read exists (the store was migrated). */
export async function isMigrated(store: Store): Promise<boolean> {
  // reversals.last_error arrives with 0002_dispatch, the newest schema the tools read.
  return readerTx(store, null, (tx) => hasColumn(tx, 'reversals', 'last_error'));
}
