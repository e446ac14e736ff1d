import type { Actor, Core } from '../core';
import { DomainError, badInput } from '../errors/domain-error';
import { ConfigError } from '../kernel/config-error';
import { appendEvent } from '../event/event.repository';
import type { Store } from '../store/engine';
import { inTx, writeTx } from '../store/tx';
import * as v from '../validation';
import {
  type AgentRow,
  agentByTokenHash,
  agentNamed,
  ensureFleet,
  insertAgent,
  upsertOperator,
} from './agent.repository';
import { SCOPES } from './scopes';
import { hashToken, newToken } from './token';

const DEFAULT_FLEET = 'default';

function validFleet(field: string, f: unknown): string {
  const s = v.text(field, f, 64);
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(s)) throw badInput(field, 'must be lower-case letters, digits, _ and -');
  return s;
}

/**
 * Creates an agent with a fresh random token, returned once; only its hash is kept. The agent
 * joins the caller's fleet; only the operator may name another (which is created on first use).
 */
export async function createAgent(
  core: Core,
  actor: Actor & { operator: boolean },
  input: { name: string; scopes: readonly string[]; fleet?: string | null },
) {
  const name = v.agentName('name', input.name);
  if (!Array.isArray(input.scopes) || input.scopes.length === 0)
    throw badInput('scopes', 'must name at least one scope');
  for (const [i, s] of input.scopes.entries()) {
    if (!(SCOPES as readonly string[]).includes(s))
      throw badInput(`scopes[${i}]`, `unknown scope "${String(s).slice(0, 40)}"; known: ${SCOPES.join(', ')}`);
  }
  const fleet = input.fleet == null ? actor.fleet : validFleet('fleet', input.fleet);
  if (fleet !== actor.fleet && !actor.operator) {
    throw new DomainError('FORBIDDEN', 'fleet: only the operator may create agents in another fleet', 'fleet');
  }
  const token = newToken();
  const creator = fleet === actor.fleet && actor.agentId !== '0' ? actor.agentId : null;
  const agent = await writeTx(core.store, fleet, async (tx) => {
    await ensureFleet(tx, fleet);
    if (await agentNamed(tx, fleet, name))
      throw new DomainError('CONFLICT', `name: an agent named "${name}" already exists in fleet ${fleet}`, 'name');
    const row = await insertAgent(tx, fleet, {
      name,
      tokenHash: hashToken(token),
      scopes: [...new Set(input.scopes)],
      createdBy: creator,
    });
    await appendEvent(tx, { fleet, type: 'AgentCreated', actorId: creator, ids: [row.id] });
    return row;
  });
  return { agent, token };
}

/** The agent holding this token, or null. Crosses fleets only through the narrow retract_authenticate function. */
export async function authenticate(store: Store, token: string): Promise<AgentRow | null> {
  if (typeof token !== 'string' || token.length < 8 || token.length > 512) return null;
  return inTx(store, { fleet: null, readOnly: true }, (tx) => agentByTokenHash(tx, hashToken(token)));
}

/**
 * Makes the operator agent `bootstrap` (fleet `default`, every scope) hold exactly `token`. Runs
 * as the store's owner connection, outside any fleet, once at start.
 */
export async function ensureBootstrap(store: Store, token: string): Promise<AgentRow> {
  if (token.length < 16) throw new ConfigError('RETRACT_BOOTSTRAP_TOKEN must be at least 16 characters');
  return writeTx(store, DEFAULT_FLEET, async (tx) => {
    await ensureFleet(tx, DEFAULT_FLEET);
    return upsertOperator(tx, DEFAULT_FLEET, { name: 'bootstrap', tokenHash: hashToken(token), scopes: [...SCOPES] });
  });
}

/** Creates an agent directly, outside the API (CLI `agent create`, tests, demos). */
export async function createAgentDirect(
  store: Store,
  input: { fleet?: string; name: string; scopes: readonly string[] },
) {
  const fleet = input.fleet ?? DEFAULT_FLEET;
  const core = { store } as Core;
  return createAgent(core, { fleet, agentId: '0', operator: true }, { ...input, fleet });
}
