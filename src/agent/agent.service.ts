import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Actor, Core } from '../core';
import { DomainError, badInput } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import type { Store } from '../store/engine';
import { type Tx, inTx, writeTx } from '../store/tx';
import * as v from '../validation';

/** Scopes exactly as DESIGN lists them. A scope proves a grant, not who the caller is. */
export const SCOPES = [
  'beliefs:read', 'beliefs:write', 'beliefs:retract', 'effects:propose', 'effects:execute',
  'contradictions:adjudicate', 'receipts:read', 'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

export interface AgentRow {
  id: string;
  fleet_id: string;
  name: string;
  scopes: string[];
  operator: boolean;
  created_at?: Date;
}

export const DEFAULT_FLEET = 'default';

/** SHA-256 of the token; the only form in which a token is stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return `rt_${randomBytes(32).toString('base64url')}`;
}

function validFleet(field: string, f: unknown): string {
  const s = v.text(field, f, 64);
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(s)) throw badInput(field, 'must be lower-case letters, digits, _ and -');
  return s;
}

/**
 * Creates an agent with a fresh random token, returned once; only its hash is kept. The agent
 * joins the caller's fleet; only the operator may name another (which is created on first use).
 */
export async function createAgent(core: Core, actor: Actor & { operator: boolean }, input: { name: string; scopes: readonly string[]; fleet?: string | null }) {
  const name = v.text('name', input.name, v.LIMITS.nameMax);
  if (!Array.isArray(input.scopes) || input.scopes.length === 0) throw badInput('scopes', 'must name at least one scope');
  for (const [i, s] of input.scopes.entries()) {
    if (!(SCOPES as readonly string[]).includes(s)) throw badInput(`scopes[${i}]`, `unknown scope "${String(s).slice(0, 40)}"; known: ${SCOPES.join(', ')}`);
  }
  const fleet = input.fleet == null ? actor.fleet : validFleet('fleet', input.fleet);
  if (fleet !== actor.fleet && !actor.operator) {
    throw new DomainError('FORBIDDEN', 'fleet: only the operator may create agents in another fleet', 'fleet');
  }
  const token = newToken();
  const creator = fleet === actor.fleet && actor.agentId !== '0' ? actor.agentId : null;
  const agent = await writeTx(core.store, fleet, async (tx) => {
    await tx.insertInto('fleets').values({ id: fleet }).onConflict((oc) => oc.doNothing()).execute();
    const taken = await tx.selectFrom('agents').select('id').where('fleet_id', '=', fleet).where('name', '=', name).executeTakeFirst();
    if (taken) throw new DomainError('CONFLICT', `name: an agent named "${name}" already exists in fleet ${fleet}`, 'name');
    const row = (await tx
      .insertInto('agents')
      .values({ fleet_id: fleet, name, scopes: [...new Set(input.scopes)], created_by: creator })
      .returning(['id', 'fleet_id', 'name', 'scopes', 'operator', 'created_at'])
      .executeTakeFirstOrThrow()) as AgentRow;
    await holdToken(tx, fleet, row.id, token);
    await appendEvent(tx, { fleet, type: 'AgentCreated', actorId: creator, ids: [row.id] });
    return row;
  });
  return { agent, token };
}

/** Makes `token` the agent's one token (agent_tokens: a token names one agent across all fleets). */
async function holdToken(tx: Tx, fleet: string, agentId: string, token: string): Promise<void> {
  await tx
    .insertInto('agent_tokens')
    .values({ token_hash: hashToken(token), fleet_id: fleet, agent_id: agentId })
    .onConflict((oc) => oc.columns(['fleet_id', 'agent_id']).doUpdateSet({ token_hash: hashToken(token) }))
    .execute();
}

/** The agent holding this token, or null. Crosses fleets only through the narrow retract_authenticate function. */
export async function authenticate(store: Store, token: string): Promise<AgentRow | null> {
  if (typeof token !== 'string' || token.length < 8 || token.length > 512) return null;
  return inTx(store, { fleet: null, readOnly: true }, async (tx) => {
    const r = await sql<AgentRow>`SELECT id::text AS id, fleet_id, name, scopes, operator FROM retract_authenticate(${hashToken(token)})`.execute(tx);
    return r.rows[0] ?? null;
  });
}

/**
 * Makes the operator agent `bootstrap` (fleet `default`, every scope) hold exactly `token`. Runs
 * as the store's owner connection, outside any fleet, once at start.
 */
export async function ensureBootstrap(store: Store, token: string): Promise<AgentRow> {
  if (token.length < 16) throw new Error('RETRACT_BOOTSTRAP_TOKEN must be at least 16 characters');
  return writeTx(store, DEFAULT_FLEET, async (tx) => {
    await tx.insertInto('fleets').values({ id: DEFAULT_FLEET }).onConflict((oc) => oc.doNothing()).execute();
    const row = (await tx
      .insertInto('agents')
      .values({ fleet_id: DEFAULT_FLEET, name: 'bootstrap', scopes: [...SCOPES], operator: true })
      .onConflict((oc) => oc.columns(['fleet_id', 'name']).doUpdateSet({ scopes: [...SCOPES], operator: true }))
      .returning(['id', 'fleet_id', 'name', 'scopes', 'operator'])
      .executeTakeFirstOrThrow()) as AgentRow;
    await holdToken(tx, DEFAULT_FLEET, row.id, token);
    return row;
  });
}

/** Creates an agent directly, outside the API (CLI `agent create`, tests, demos). */
export async function createAgentDirect(store: Store, input: { fleet?: string; name: string; scopes: readonly string[] }) {
  const fleet = input.fleet ?? DEFAULT_FLEET;
  const core = { store } as Core;
  return createAgent(core, { fleet, agentId: '0', operator: true }, { ...input, fleet });
}
