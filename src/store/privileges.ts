import { sql } from 'kysely';
import type { Db } from './tx';

/**
 * Catalog questions about roles and the schema, for the proof that the MCP reader path cannot
 * write (src/mcp/reader.ts proveReadOnly) and for its check that the store was migrated.
 */

/** Tries to write one store_meta row: through a read-only reader transaction this must fail (25006 or 42501). */
export async function probeWrite(db: Db): Promise<void> {
  await sql`INSERT INTO store_meta (key, value) VALUES ('mcp.write-probe', 'must never be written')`.execute(db);
}

/** Tables (and views) of the current schema on which `role` holds INSERT, UPDATE, DELETE or TRUNCATE. */
export async function writableTables(db: Db, role: string): Promise<string[]> {
  const r = await sql<{ t: string }>`
    SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm')
       AND (has_table_privilege(${role}, c.oid, 'INSERT') OR has_table_privilege(${role}, c.oid, 'UPDATE')
         OR has_table_privilege(${role}, c.oid, 'DELETE') OR has_table_privilege(${role}, c.oid, 'TRUNCATE'))
     ORDER BY 1`.execute(db);
  return r.rows.map((x) => x.t);
}

/** Whether `table` has the column `column` (not dropped). */
export async function hasColumn(db: Db, table: string, column: string): Promise<boolean> {
  const r = await sql<{ ok: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${table}) AND attname = ${column} AND NOT attisdropped) AS ok`.execute(
    db,
  );
  return r.rows[0]!.ok;
}
