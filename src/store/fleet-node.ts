import { sql } from 'kysely';

/**
 * A one-row relation that is read on the node holding the fleet's rows, for a statement that reads no table of its
 * own but must be evaluated there: a snapshot or a transaction id, compared later with ids that node stamped. On
 * PostgreSQL and PGlite that is the one server; on Citus a statement that names no distributed table runs on the
 * coordinator, in another transaction-id space, while this one is routed to the fleet's worker (it reads at most one
 * index entry of the fleet's claims).
 */
export function fleetNode(fleet: string) {
  return sql`(SELECT count(*) FROM (SELECT 1 FROM claims WHERE fleet_id = ${fleet} LIMIT 1) one) fleet_node`;
}
