import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { openGraph, searchGraph } from './graph';
import { fellText } from './fell';
import {
  type GraphPort, addObservations, createEntities, createRelations, deleteEntities, deleteObservations, deleteRelations, readGraph,
} from './operations';
import * as s from './schemas';

/** Which of the nine tools the caller's token opens: reading the graph, writing to it, retracting from it. */
export interface GraphAccess { read: boolean; write: boolean; retract: boolean }

/** Runs a tool body and answers with its result, or with the tool error `toError` makes of what it threw. */
type Guard = (tool: string, fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;

const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const DELETE = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** The reference's answer: its structured content as JSON text first (what a client of the reference parses), then RETRACT's additions. */
function answer<R extends Record<string, unknown>>(reference: R, extra: Record<string, unknown> = {}, note?: string): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(Object.values(reference).length === 1 ? Object.values(reference)[0] : reference, null, 2) }];
  if (note) content.push({ type: 'text', text: note });
  return { content, structuredContent: { ...reference, ...extra } };
}

function deleted(message: string, retractions: Awaited<ReturnType<typeof deleteEntities>>): CallToolResult {
  return {
    content: [{ type: 'text', text: message }, { type: 'text', text: fellText(retractions) }],
    structuredContent: { success: true, message, retractions },
  };
}

/**
 * The nine tools of @modelcontextprotocol/server-memory, served by RETRACT (the mapping and what
 * differs: docs/mcp-memory-graph.md). Each is registered only when the token opens it: a read-only
 * token is never offered a write.
 */
export function registerMemoryGraphTools(server: McpServer, port: GraphPort, access: GraphAccess, guard: Guard): void {
  const why = (tool: string, r?: string) => r ?? `${tool} (memory-graph tools)`;
  if (access.write) {
    server.registerTool('create_entities', {
      title: 'Create Entities',
      description: 'Create multiple new entities in the knowledge graph. RETRACT: each entity and each observation becomes a belief; an observation rests on its entity.',
      inputSchema: s.createEntitiesInput, outputSchema: s.createEntitiesOutput, annotations: WRITE,
    }, ({ entities }) => guard('create_entities', async () => {
      const r = await createEntities(port, entities);
      return answer({ entities: r.entities }, { beliefs: r.beliefs });
    }));
    server.registerTool('create_relations', {
      title: 'Create Relations',
      description: 'Create multiple new relations between entities in the knowledge graph. Relations should be in active voice. RETRACT: both entities must exist; the relation rests on them.',
      inputSchema: s.createRelationsInput, outputSchema: s.createRelationsOutput, annotations: WRITE,
    }, ({ relations }) => guard('create_relations', async () => {
      const r = await createRelations(port, relations);
      return answer({ relations: r.relations }, { beliefs: r.beliefs });
    }));
    server.registerTool('add_observations', {
      title: 'Add Observations',
      description: 'Add new observations to existing entities in the knowledge graph. RETRACT: name in derivedFrom the observations they were concluded from, and they fall when those are deleted.',
      inputSchema: s.addObservationsInput, outputSchema: s.addObservationsOutput, annotations: WRITE,
    }, ({ observations }) => guard('add_observations', async () => {
      const r = await addObservations(port, observations);
      return answer({ results: r.results }, { beliefs: r.beliefs });
    }));
  }
  if (access.retract) {
    server.registerTool('delete_entities', {
      title: 'Delete Entities',
      description: 'Delete multiple entities and their associated relations from the knowledge graph. RETRACT: retracts each, with everything that rested on it (observations, relations, observations derived from them, and the actions they supported); the answer says what else fell.',
      inputSchema: s.deleteEntitiesInput, outputSchema: s.deleteOutput, annotations: DELETE,
    }, ({ entityNames, reason }) => guard('delete_entities', async () =>
      deleted('Entities deleted successfully', await deleteEntities(port, entityNames, why('delete_entities', reason)))));
    server.registerTool('delete_observations', {
      title: 'Delete Observations',
      description: 'Delete specific observations from entities in the knowledge graph. RETRACT: retracts each, with what was derived from it; the answer says what else fell.',
      inputSchema: s.deleteObservationsInput, outputSchema: s.deleteOutput, annotations: DELETE,
    }, ({ deletions, reason }) => guard('delete_observations', async () =>
      deleted('Observations deleted successfully', await deleteObservations(port, deletions, why('delete_observations', reason)))));
    server.registerTool('delete_relations', {
      title: 'Delete Relations',
      description: 'Delete multiple relations from the knowledge graph. RETRACT: retracts each, with what rested on it.',
      inputSchema: s.deleteRelationsInput, outputSchema: s.deleteOutput, annotations: DELETE,
    }, ({ relations, reason }) => guard('delete_relations', async () =>
      deleted('Relations deleted successfully', await deleteRelations(port, relations, why('delete_relations', reason)))));
  }
  if (access.read) {
    server.registerTool('read_graph', {
      title: 'Read Graph', description: 'Read the entire knowledge graph (what is believed now)', inputSchema: {}, outputSchema: s.graphOutput, annotations: READ,
    }, () => guard('read_graph', async () => graphAnswer(await readGraph(port))));
    server.registerTool('search_nodes', {
      title: 'Search Nodes', description: 'Search for nodes in the knowledge graph based on a query', inputSchema: s.searchNodesInput, outputSchema: s.graphOutput, annotations: READ,
    }, ({ query }) => guard('search_nodes', async () => graphAnswer(searchGraph(await readGraph(port), query))));
    server.registerTool('open_nodes', {
      title: 'Open Nodes', description: 'Open specific nodes in the knowledge graph by their names', inputSchema: s.openNodesInput, outputSchema: s.graphOutput, annotations: READ,
    }, ({ names }) => guard('open_nodes', async () => graphAnswer(openGraph(await readGraph(port), names))));
  }
}

const graphAnswer = (g: { entities: unknown[]; relations: unknown[] }): CallToolResult =>
  ({ content: [{ type: 'text', text: JSON.stringify(g, null, 2) }], structuredContent: { ...g } });
