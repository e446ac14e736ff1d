import type { Toolkit } from '../toolkit';
import { openGraph, searchGraph } from './graph';
import { type RetractionSummary, fellText } from './fell';
import {
  type GraphPort,
  addObservations,
  createEntities,
  createRelations,
  deleteEntities,
  deleteObservations,
  deleteRelations,
  readGraph,
} from './operations';
import * as s from './schemas';

const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const DELETE = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** The reference's text: its result as JSON (what a client of the reference parses). */
const json = (x: unknown) => JSON.stringify(x, null, 2);
const deleted = (message: string) => (retractions: RetractionSummary[]) => ({ success: true, message, retractions });
/** A delete's text: the reference's message first, then what RETRACT took down with it. */
const deletedText = (r: { message: string; retractions: RetractionSummary[] }) => [r.message, fellText(r.retractions)];

/**
 * The nine tools of @modelcontextprotocol/server-memory, served by RETRACT (the mapping and what
 * differs: docs/mcp-memory-graph.md), each listed only for a token with its scopes
 * (./needs.ts): a read-only token is never offered a write. Answers carry the reference's fields and
 * text unchanged, RETRACT's additions beside them.
 */
export function registerMemoryGraphTools(kit: Toolkit, port: GraphPort): void {
  const why = (tool: string, r?: string) => r ?? `${tool} (memory-graph tools)`;
  kit.tool(
    'create_entities',
    {
      title: 'Create Entities',
      description:
        'Create multiple new entities in the knowledge graph. RETRACT: each entity and each observation becomes a belief; an observation rests on its entity.',
      inputSchema: s.createEntitiesInput,
      outputSchema: s.createEntitiesOutput,
      annotations: WRITE,
    },
    ({ entities }) => createEntities(port, entities),
    (r) => json(r.entities),
  );

  kit.tool(
    'create_relations',
    {
      title: 'Create Relations',
      description:
        'Create multiple new relations between entities in the knowledge graph. Relations should be in active voice. RETRACT: both entities must exist; the relation rests on them.',
      inputSchema: s.createRelationsInput,
      outputSchema: s.createRelationsOutput,
      annotations: WRITE,
    },
    ({ relations }) => createRelations(port, relations),
    (r) => json(r.relations),
  );

  kit.tool(
    'add_observations',
    {
      title: 'Add Observations',
      description:
        'Add new observations to existing entities in the knowledge graph. RETRACT: name in derivedFrom the observations they were concluded from, and they fall when those are deleted.',
      inputSchema: s.addObservationsInput,
      outputSchema: s.addObservationsOutput,
      annotations: WRITE,
    },
    ({ observations }) => addObservations(port, observations),
    (r) => json(r.results),
  );

  kit.tool(
    'delete_entities',
    {
      title: 'Delete Entities',
      description:
        'Delete multiple entities and their associated relations from the knowledge graph. RETRACT: retracts each, with everything that rested on it (its observations and relations, observations derived from them, and the actions they supported); the answer says what else fell.',
      inputSchema: s.deleteEntitiesInput,
      outputSchema: s.deleteOutput,
      annotations: DELETE,
    },
    ({ entityNames, reason }) =>
      deleteEntities(port, entityNames, why('delete_entities', reason)).then(deleted('Entities deleted successfully')),
    deletedText,
  );

  kit.tool(
    'delete_observations',
    {
      title: 'Delete Observations',
      description:
        'Delete specific observations from entities in the knowledge graph. RETRACT: retracts each, with what was derived from it; the answer says what else fell.',
      inputSchema: s.deleteObservationsInput,
      outputSchema: s.deleteOutput,
      annotations: DELETE,
    },
    ({ deletions, reason }) =>
      deleteObservations(port, deletions, why('delete_observations', reason)).then(
        deleted('Observations deleted successfully'),
      ),
    deletedText,
  );

  kit.tool(
    'delete_relations',
    {
      title: 'Delete Relations',
      description:
        'Delete multiple relations from the knowledge graph. RETRACT: retracts each, with what rested on it.',
      inputSchema: s.deleteRelationsInput,
      outputSchema: s.deleteOutput,
      annotations: DELETE,
    },
    ({ relations, reason }) =>
      deleteRelations(port, relations, why('delete_relations', reason)).then(deleted('Relations deleted successfully')),
    deletedText,
  );

  kit.tool(
    'read_graph',
    {
      title: 'Read Graph',
      description: 'Read the entire knowledge graph (what is believed now)',
      inputSchema: {},
      outputSchema: s.graphOutput,
      annotations: READ,
    },
    () => readGraph(port),
    json,
  );
  kit.tool(
    'search_nodes',
    {
      title: 'Search Nodes',
      description: 'Search for nodes in the knowledge graph based on a query',
      inputSchema: s.searchNodesInput,
      outputSchema: s.graphOutput,
      annotations: READ,
    },
    async ({ query }) => searchGraph(await readGraph(port), query),
    json,
  );
  kit.tool(
    'open_nodes',
    {
      title: 'Open Nodes',
      description: 'Open specific nodes in the knowledge graph by their names',
      inputSchema: s.openNodesInput,
      outputSchema: s.graphOutput,
      annotations: READ,
    },
    async ({ names }) => openGraph(await readGraph(port), names),
    json,
  );
}
