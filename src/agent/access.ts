import type { Scope } from './scopes';

/**
 * The read rule: which scopes open which kind of data, whatever path reaches it. GraphQL enforces it
 * per type (src/api/builder.ts, the `readable` scope on each object type) and MCP per tool
 * (src/mcp/server.ts); both ask `mayRead`, so the two cannot drift apart.
 *
 * - Belief: `beliefs:read`. A RETRACTED belief is also part of the receipts that name it (root,
 *   beliefs taken down, events), so `receipts:read` opens it too; ACTIVE beliefs stay closed to it.
 *   A reinstatement brings a belief back to ACTIVE: from then on it is closed to `receipts:read` again.
 *   A belief read as of a past instant (asOf, Effect.supportAtExecution, Retraction.before) follows the rule
 *   of its status NOW, whatever its status then: the view shows the same belief's data.
 * - Effect: an effects scope, or `receipts:read` (receipts list the effects they cancelled or reached).
 * - Receipt: Retraction, Reinstatement, Reversal, their totals and money lines, and retraction events need `receipts:read`.
 * - Contradiction (and its ProposedBelief): `beliefs:read`, or `contradictions:adjudicate`: deciding a
 *   contradiction means reading both sides of it. The beliefs it links to (existing, accepted) and
 *   its resolution follow their own rules, so an adjudicator without `beliefs:read` sees the proposal
 *   and the claim key, not the ACTIVE belief it contradicts.
 * - AgentScopes: an agent's scopes, to `admin` (or the agent itself, see mayReadScopesOf).
 *
 * `admin` implies every scope.
 */
export const READ_SCOPES = {
  Belief: ['beliefs:read'],
  RetractedBelief: ['beliefs:read', 'receipts:read'],
  Effect: ['effects:propose', 'effects:execute', 'receipts:read'],
  Receipt: ['receipts:read'],
  Contradiction: ['beliefs:read', 'contradictions:adjudicate'],
  AgentScopes: ['admin'],
} as const satisfies Record<string, readonly Scope[]>;
export type Readable = keyof typeof READ_SCOPES;

/** What the rule looks at: the caller's id and scopes. */
export interface Viewer {
  id: string;
  scopes: readonly string[];
}

export function hasScope(viewer: Viewer | null, scope: Scope): boolean {
  return !!viewer && (viewer.scopes.includes(scope) || viewer.scopes.includes('admin'));
}

export function mayRead(viewer: Viewer | null, what: Readable): boolean {
  return READ_SCOPES[what].some((s) => hasScope(viewer, s));
}

/** Which rule a belief falls under, by its status. */
export function beliefReadable(status: string): Readable {
  return status === 'RETRACTED' ? 'RetractedBelief' : 'Belief';
}

/** An agent's scopes are visible to admin and to the agent itself. */
export function mayReadScopesOf(viewer: Viewer | null, agentId: string): boolean {
  return mayRead(viewer, 'AgentScopes') || (!!viewer && String(viewer.id) === String(agentId));
}

const NOUN: Record<Readable, string> = {
  Belief: 'an ACTIVE belief',
  RetractedBelief: 'a RETRACTED belief',
  Effect: 'an effect',
  Receipt: 'a receipt (retraction, reinstatement, reversal, totals or retraction event)',
  Contradiction: 'a contradiction (or the belief it proposes)',
  AgentScopes: "another agent's scopes",
};

/** The refusal's text: what was withheld and which scopes would open it. */
export function forbiddenReason(what: Readable): string {
  return `reading ${NOUN[what]} needs the scope ${READ_SCOPES[what].join(' or ')} (admin implies every scope), which your token does not hold`;
}

/**
 * Objects one request may read whatever its scopes: those its own mutation wrote or answered with,
 * so a caller can see the result of what it just did (the receipt of its retraction, the reversal
 * it confirmed). Lives for one request (one GraphQL operation); objects reached from a granted one
 * follow the rule above.
 */
export class ReadGrants {
  private readonly keys = new Set<string>();
  grant(type: string, id: string | number | bigint): void {
    this.keys.add(`${type}:${String(id)}`);
  }
  has(type: string, id: string | number | bigint): boolean {
    return this.keys.has(`${type}:${String(id)}`);
  }
}
