import type { Scope } from '../../agent/scopes';

/**
 * The scopes each memory-graph tool needs (merged into TOOL_NEEDS, src/mcp/access.ts): writing needs
 * beliefs:write, deleting (a retraction) beliefs:retract, and every one of them beliefs:read as well,
 * because each answers from what is believed now (a name that exists is skipped, one that does not is
 * NOT_FOUND). A read-only token (beliefs:read) is offered the three read tools and nothing else.
 */
export const MEMORY_GRAPH_NEEDS: Record<string, ReadonlyArray<readonly Scope[]>> = {
  create_entities: [['beliefs:write'], ['beliefs:read']],
  create_relations: [['beliefs:write'], ['beliefs:read']],
  add_observations: [['beliefs:write'], ['beliefs:read']],
  delete_entities: [['beliefs:retract'], ['beliefs:read']],
  delete_observations: [['beliefs:retract'], ['beliefs:read']],
  delete_relations: [['beliefs:retract'], ['beliefs:read']],
  read_graph: [['beliefs:read']],
  search_nodes: [['beliefs:read']],
  open_nodes: [['beliefs:read']],
};
