import { type Kysely, sql } from 'kysely';

/**
 * Refusing a provider reference that is one of our own keys (src/reversal/provider-ref.ts).
 *
 * Why: `confirmReversal` and the signed callback must refuse a `providerRef` that is an effect's
 * idempotency key or a reversal key of the fleet, also when it differs from the key only by how it
 * was typed or copied (a trailing space, upper case, a decomposed accent). The comparison is made
 * in SQL so it costs one index probe per table, whatever the fleet holds.
 *
 * What:
 *  - `retract_ref_fold(text)`: the one normalisation both sides of that comparison go through —
 *    Unicode NFC, then the characters below stripped from both ends, then A–Z folded to a–z. It
 *    must equal `foldRef` in src/kernel/provider-ref.ts (test/hostile/provider-ref.test.ts checks
 *    both engines against it). Stripped: U+0009–000D, U+0020, U+0085, U+00A0, U+1680, U+180E,
 *    U+2000–200D, U+2028, U+2029, U+202F, U+205F, U+2060, U+3000, U+FEFF. The case fold is ASCII
 *    only because lower() follows the database's locale, which differs between PostgreSQL
 *    installations and PGlite; an index built on it would mean different things on each.
 *  - `effects_key_folded`, `reversals_key_folded`: (fleet_id, retract_ref_fold(idempotency_key)).
 *
 * Cost: one more btree entry per effect and per reversal written.
 */
const EDGE = String.raw`E'\t\n\u000b\f\r \u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff'`;

export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`CREATE FUNCTION retract_ref_fold(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN translate(btrim(normalize(t, NFC), ${EDGE}), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`);
  await ddl(`CREATE INDEX effects_key_folded ON effects (fleet_id, retract_ref_fold(idempotency_key))`);
  await ddl(`CREATE INDEX reversals_key_folded ON reversals (fleet_id, retract_ref_fold(idempotency_key))`);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS reversals_key_folded`.execute(db);
  await sql`DROP INDEX IF EXISTS effects_key_folded`.execute(db);
  await sql`DROP FUNCTION IF EXISTS retract_ref_fold(text)`.execute(db);
}
