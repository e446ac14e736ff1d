import { type GraphRow } from './memory-graph.repository';
import { parseKey } from './claim-keys';

/** The reference server's shapes (@modelcontextprotocol/server-memory), unchanged. */
export interface Entity {
  name: string;
  entityType: string;
  observations: string[];
}
export interface Relation {
  from: string;
  to: string;
  relationType: string;
}
export interface KnowledgeGraph {
  entities: Entity[];
  relations: Relation[];
}

const str = (v: unknown, k: string): string | null => {
  const x = (v as Record<string, unknown> | null)?.[k];
  return typeof x === 'string' ? x : null;
};

/**
 * The graph as the reference server would hold it, rebuilt from the ACTIVE memory-graph beliefs in
 * the order they were written: an entity for each ACTIVE existence belief, its ACTIVE observations
 * in order, and the ACTIVE relations. Names come from the claim keys; an entity's type and an
 * observation's text from the belief's value. Retracted beliefs are simply not there: what fell in
 * a cascade is gone from the graph as a deleted entity is gone from the reference's file.
 */
export function buildGraph(rows: readonly GraphRow[]): KnowledgeGraph {
  const entities = new Map<string, Entity>();
  const relations: Relation[] = [];
  const observations: Array<{ entityName: string; content: string }> = [];
  for (const r of rows) {
    const k = parseKey(r.claim_key);
    if (k?.kind === 'entity')
      entities.set(k.name, { name: k.name, entityType: str(r.value, 'entityType') ?? '', observations: [] });
    else if (k?.kind === 'relation') relations.push({ from: k.from, to: k.to, relationType: k.relationType });
    else if (k?.kind === 'observation') {
      const content = str(r.value, 'content');
      if (content !== null) observations.push({ entityName: k.entityName, content });
    }
  }
  for (const o of observations) entities.get(o.entityName)?.observations.push(o.content);
  return { entities: [...entities.values()], relations };
}

/** The entities `keep` selects and every relation with at least one end among them (the reference's rule for search and open). */
function subgraph(g: KnowledgeGraph, keep: (e: Entity) => boolean): KnowledgeGraph {
  const entities = g.entities.filter(keep);
  const names = new Set(entities.map((e) => e.name));
  return { entities, relations: g.relations.filter((r) => names.has(r.from) || names.has(r.to)) };
}

/** search_nodes: case-insensitive substring of the name, the type or any observation, exactly as the reference matches. */
export function searchGraph(g: KnowledgeGraph, query: string): KnowledgeGraph {
  const q = query.toLowerCase();
  return subgraph(
    g,
    (e) =>
      e.name.toLowerCase().includes(q) ||
      e.entityType.toLowerCase().includes(q) ||
      e.observations.some((o) => o.toLowerCase().includes(q)),
  );
}

/** open_nodes: the named entities. */
export function openGraph(g: KnowledgeGraph, names: readonly string[]): KnowledgeGraph {
  const wanted = new Set(names);
  return subgraph(g, (e) => wanted.has(e.name));
}
