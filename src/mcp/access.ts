import type { AgentRow } from '../agent/agent.repository';
import { READ_SCOPES, forbiddenReason, hasScope, mayRead } from '../agent/access';
import type { Scope } from '../agent/scopes';
import { MEMORY_GRAPH_NEEDS } from './memory-graph/needs';

/**
 * Which token may use which MCP tool: the scope its GraphQL twin needs. Each entry is a list of
 * alternatives that must ALL hold; each alternative holds with ANY of its scopes (admin implies
 * every scope). A token is shown (tools/list) and may call exactly the tools whose needs it meets;
 * the transports refuse a token that meets none. What a tool then answers is filtered by the read
 * rule of src/agent/access.ts (src/mcp/visible.ts), as GraphQL filters its types.
 *
 * Kept free of the SDK and the tools themselves: the HTTP handler decides 401/403 with it before it
 * loads them.
 */
export const TOOL_NEEDS: Record<string, ReadonlyArray<readonly Scope[]>> = {
  // The receipt tools (read-only, as retract_reader).
  get_receipt: [READ_SCOPES.Receipt],
  get_reinstatement: [READ_SCOPES.Receipt],
  list_owed_reversals: [READ_SCOPES.Receipt],
  explain_belief: [READ_SCOPES.Receipt, READ_SCOPES.Belief],
  search_beliefs: [READ_SCOPES.Receipt, READ_SCOPES.Belief],
  // The memory tools: each behind its GraphQL twin's scope.
  remember: [['beliefs:write']], // assertBelief
  recall: [['beliefs:read']], // search
  why: [['beliefs:read']], // belief { justifications … }
  as_of: [['beliefs:read']], // beliefs(asOf:)
  preview_retraction: [['beliefs:read']], // previewRetraction
  retract: [['beliefs:retract']], // retractBelief
  reinstate: [['beliefs:retract']], // reinstateRetraction
  propose_effect: [['effects:propose']], // proposeEffect
  // The drop-in for @modelcontextprotocol/server-memory (src/mcp/memory-graph/).
  ...MEMORY_GRAPH_NEEDS,
};

/** True when the agent meets every need of `tool`. */
export function mayUseTool(agent: AgentRow | null, tool: string): boolean {
  const needs = TOOL_NEEDS[tool];
  return !!agent && !!needs && needs.every((any) => any.some((s) => hasScope(agent, s)));
}

/** The tools this agent may use, in TOOL_NEEDS order. */
export function toolsFor(agent: AgentRow | null): string[] {
  return Object.keys(TOOL_NEEDS).filter((t) => mayUseTool(agent, t));
}

/** Every scope that opens at least one tool: what a refusal names. */
export function toolScopes(): Scope[] {
  return [...new Set(Object.values(TOOL_NEEDS).flatMap((n) => n.flat()))];
}

/** Why `agent` may not call `tool` (FORBIDDEN, naming the scopes that would allow it), or null when it may. */
export function toolRefusal(agent: AgentRow, tool: string): string | null {
  if (mayUseTool(agent, tool)) return null;
  const missing = (TOOL_NEEDS[tool] ?? []).find((any) => !any.some((s) => hasScope(agent, s)));
  const readable =
    missing && (Object.keys(READ_SCOPES) as Array<keyof typeof READ_SCOPES>).find((r) => READ_SCOPES[r] === missing);
  if (readable && !mayRead(agent, readable)) return `FORBIDDEN: ${tool}: ${forbiddenReason(readable)}`;
  return `FORBIDDEN: ${tool} needs the scope ${(missing ?? []).join(' or ')} (admin implies every scope), which your token does not hold`;
}
