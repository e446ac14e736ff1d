import type pg from 'pg';
import type { OpenOptions, Store } from '../store';
import { openPostgres } from './postgres';

/**
 * A Citus coordinator reached through `url` (chosen by RETRACT_ENGINE=citus, or found by its extension),
 * fleets distributed over the workers (db/migrations/0010_citus.ts). The `postgres` engine with two
 * differences: the fleet setting travels to the workers as SET LOCAL (src/store/tx.ts), and a
 * serialization failure that a worker reports at COMMIT (XX000 after a 40001 warning) is marked here
 * (markWorkerAborts) and retried there.
 */
export function openCitus(opts: OpenOptions, url: string): Promise<Store> {
  return openPostgres(opts, url, { engine: 'citus', onConnect: markWorkerAborts });
}

/** SQLSTATEs of the warning a Citus worker sends when it aborts a transaction at COMMIT for a conflict. */
const WORKER_CONFLICT = new Set(['40001', '40P01']);

/**
 * Citus reports a serialization failure that a worker hits at COMMIT as `XX000 could not commit transaction for
 * shard …`, after a WARNING carrying the worker's 40001. The warning says the worker aborted, so nothing of the
 * attempt remains and it may be retried; a bare XX000 (a connection lost mid-commit, say) may have committed and
 * must not be. Each statement's error is given the SQLSTATE of the conflict warning that came before it on the
 * same connection, as `workerConflict` (src/store/tx.ts reads it). Every pooled connection is watched from its
 * start.
 */
function markWorkerAborts(client: pg.PoolClient): void {
  let warned: string | null = null;
  client.on('notice', (n: { severity?: string; code?: string }) => {
    if (n.code && WORKER_CONFLICT.has(n.code)) warned = n.code;
  });
  const query = client.query.bind(client) as (...a: unknown[]) => unknown;
  // Wrapped in place: node-postgres has no per-statement error hook, and Kysely calls the client's own query.
  (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...args: unknown[]) => {
    warned = null;
    const r = query(...args);
    if (r instanceof Promise) {
      return r.catch((e: unknown) => {
        if (warned && typeof e === 'object' && e !== null) (e as { workerConflict?: string }).workerConflict = warned;
        throw e;
      });
    }
    return r;
  };
}
