import { DomainError } from '../../errors/domain-error';
import { gid } from '../../kernel/ids';
import type { Tx } from '../../store/tx';
import { type Relation, type Entity, type KnowledgeGraph, buildGraph } from './graph';
import { PREFIX, entityKey, observationKey, relationKey } from './claim-keys';
import { activeIdsByKeys, activeUnderPrefix } from './memory-graph.repository';
import { type RetractionSummary, summarizeRetraction } from './fell';

/** What an assertion came to, as the write path reports it (see src/belief/belief.service.ts). */
type AssertOutcome =
  | { kind: 'asserted' | 'corroborated'; beliefId: string }
  | { kind: 'contradiction'; contradictionId: string }
  | { kind: 'premiseRetracted'; premiseId: string }
  | { kind: 'claimChanged' };

/**
 * The memory graph's way into RETRACT for one agent of one fleet: reads through the MCP reader path,
 * writes through the MCP write path (assert a belief, retract one with its cascade). The tools are
 * mapped onto these and nothing else, so they hold every rule a GraphQL turn or retraction holds.
 */
export interface GraphPort {
  fleet: string;
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  assert(input: {
    claimKey: string;
    statement: string;
    value: unknown;
    evidence?: string | null;
    derivedFrom: readonly string[];
  }): Promise<AssertOutcome>;
  retract(beliefId: string, reason: string): Promise<{ retractionId: string; created: boolean }>;
}

/** One belief a tool call wrote, for the agent that wants to build on it elsewhere (GraphQL, the memory tools). */
interface Written {
  claimKey: string;
  beliefId: string;
  id: string;
  entityName: string;
  content?: string;
  relation?: Relation;
}

export const readGraph = (port: GraphPort): Promise<KnowledgeGraph> =>
  port.read(async (tx) => buildGraph(await activeUnderPrefix(tx, port.fleet, PREFIX)));

/** The outcome of an assertion the tool expected to write or find: the belief id, or the refusal as a tool error naming the field. */
function written(field: string, o: AssertOutcome, what: string): { beliefId: string; isNew: boolean } {
  if (o.kind === 'asserted' || o.kind === 'corroborated') return { beliefId: o.beliefId, isNew: o.kind === 'asserted' };
  if (o.kind === 'premiseRetracted') {
    throw new DomainError(
      'CONFLICT',
      `${field}: ${what} rests on belief ${o.premiseId}, which was retracted while this call ran; read the graph and try again`,
      field,
    );
  }
  if (o.kind === 'contradiction') {
    throw new DomainError(
      'CONFLICT',
      `${field}: ${what} was written differently by another call meanwhile (contradiction ${o.contradictionId} raised); read the graph and try again`,
      field,
    );
  }
  throw new DomainError('CONFLICT', `${field}: ${what} changed while this call ran; try again`, field);
}

interface DerivedFromRef {
  entityName: string;
  content?: string;
}
export interface ObservationInput {
  entityName: string;
  contents: string[];
  derivedFrom?: DerivedFromRef[];
  evidence?: string;
}

/**
 * Premises for observations: the entity's own existence, then each `derivedFrom` entry (an
 * observation when it names content, else that entity's existence), all ACTIVE now, or NOT_FOUND.
 */
async function premises(
  port: GraphPort,
  field: string,
  entityName: string,
  derivedFrom: readonly DerivedFromRef[],
): Promise<string[]> {
  const keys = [
    entityKey(`${field}.entityName`, entityName),
    ...derivedFrom.map((d, i) =>
      d.content === undefined
        ? entityKey(`${field}.derivedFrom[${i}].entityName`, d.entityName)
        : observationKey(`${field}.derivedFrom[${i}]`, d.entityName, d.content),
    ),
  ];
  const ids = await port.read((tx) => activeIdsByKeys(tx, port.fleet, keys));
  return keys.map((k, i) => {
    const id = ids.get(k);
    if (id) return id;
    if (i === 0)
      throw new DomainError(
        'NOT_FOUND',
        `${field}.entityName: Entity with name ${entityName} not found`,
        `${field}.entityName`,
      );
    const d = derivedFrom[i - 1]!;
    const at = `${field}.derivedFrom[${i - 1}]`;
    throw new DomainError(
      'NOT_FOUND',
      d.content === undefined
        ? `${at}: Entity with name ${d.entityName} not found`
        : `${at}: entity ${d.entityName} has no observation ${JSON.stringify(d.content.slice(0, 80))}`,
      at,
    );
  });
}

async function observe(port: GraphPort, field: string, o: ObservationInput, out: Written[]): Promise<string[]> {
  const from = await premises(port, field, o.entityName, o.derivedFrom ?? []);
  const added: string[] = [];
  const existing = await port.read((tx) =>
    activeIdsByKeys(
      tx,
      port.fleet,
      o.contents.map((c, i) => observationKey(`${field}.contents[${i}]`, o.entityName, c)),
    ),
  );
  for (const [i, content] of o.contents.entries()) {
    const claimKey = observationKey(`${field}.contents[${i}]`, o.entityName, content);
    if (existing.has(claimKey) || added.includes(content)) continue;
    const r = written(
      `${field}.contents[${i}]`,
      await port.assert({
        claimKey,
        statement: `${o.entityName}: ${content}`,
        value: { entityName: o.entityName, content },
        evidence: o.evidence ?? null,
        derivedFrom: from,
      }),
      `the observation of ${o.entityName}`,
    );
    if (!r.isNew) continue;
    added.push(content);
    out.push({ claimKey, beliefId: r.beliefId, id: gid('Belief', r.beliefId), entityName: o.entityName, content });
  }
  return added;
}

export interface EntityInput extends Entity {
  evidence?: string;
}

/**
 * create_entities: each entity whose name is not in the graph becomes a grounded belief
 * (`kg/e/<name>`), and each of its observations a belief resting on it. Names already there are
 * skipped, as the reference skips them. Returns the entities created, as given.
 */
export async function createEntities(port: GraphPort, entities: readonly EntityInput[]) {
  const keys = entities.map((e, i) => entityKey(`entities[${i}].name`, e.name));
  const existing = await port.read((tx) => activeIdsByKeys(tx, port.fleet, keys));
  const created: Entity[] = [];
  const beliefs: Written[] = [];
  for (const [i, e] of entities.entries()) {
    if (existing.has(keys[i]!) || created.some((c) => c.name === e.name)) continue;
    const r = written(
      `entities[${i}]`,
      await port.assert({
        claimKey: keys[i]!,
        statement: `${e.name} is an entity of type ${e.entityType}`,
        value: { name: e.name, entityType: e.entityType },
        evidence: e.evidence ?? null,
        derivedFrom: [],
      }),
      `entity ${e.name}`,
    );
    if (!r.isNew) continue;
    beliefs.push({ claimKey: keys[i]!, beliefId: r.beliefId, id: gid('Belief', r.beliefId), entityName: e.name });
    await observe(
      port,
      `entities[${i}].observations`,
      { entityName: e.name, contents: e.observations, evidence: e.evidence },
      beliefs,
    );
    created.push({ name: e.name, entityType: e.entityType, observations: e.observations });
  }
  return { entities: created, beliefs };
}

/** create_relations: each new relation is a belief resting on both entities' existence; an unknown end is NOT_FOUND, before anything is written. */
export async function createRelations(port: GraphPort, relations: readonly Relation[]) {
  const ends = relations.flatMap((r, i) => [
    { field: `relations[${i}].from`, name: r.from, key: entityKey(`relations[${i}].from`, r.from) },
    { field: `relations[${i}].to`, name: r.to, key: entityKey(`relations[${i}].to`, r.to) },
  ]);
  const keys = relations.map((r, i) => relationKey(`relations[${i}]`, r));
  const ids = await port.read((tx) => activeIdsByKeys(tx, port.fleet, [...ends.map((e) => e.key), ...keys]));
  const missing = ends.find((e) => !ids.has(e.key));
  if (missing) {
    throw new DomainError(
      'NOT_FOUND',
      `${missing.field}: Entity with name ${missing.name} not found; a relation rests on both entities, create_entities first`,
      missing.field,
    );
  }
  const created: Relation[] = [];
  const beliefs: Written[] = [];
  for (const [i, r] of relations.entries()) {
    if (ids.has(keys[i]!) || beliefs.some((b) => b.claimKey === keys[i])) continue;
    const rel = { from: r.from, to: r.to, relationType: r.relationType };
    const w = written(
      `relations[${i}]`,
      await port.assert({
        claimKey: keys[i]!,
        statement: `${r.from} ${r.relationType} ${r.to}`,
        value: rel,
        derivedFrom: [ids.get(ends[2 * i]!.key)!, ids.get(ends[2 * i + 1]!.key)!],
      }),
      `the relation ${r.from} ${r.relationType} ${r.to}`,
    );
    if (!w.isNew) continue;
    created.push(rel);
    beliefs.push({
      claimKey: keys[i]!,
      beliefId: w.beliefId,
      id: gid('Belief', w.beliefId),
      entityName: r.from,
      relation: rel,
    });
  }
  return { relations: created, beliefs };
}

/** add_observations: all entities must exist (else NOT_FOUND and nothing written, as the reference throws before saving). */
export async function addObservations(port: GraphPort, observations: readonly ObservationInput[]) {
  for (const [i, o] of observations.entries())
    await premises(port, `observations[${i}]`, o.entityName, o.derivedFrom ?? []);
  const beliefs: Written[] = [];
  const results = [];
  for (const [i, o] of observations.entries()) {
    results.push({
      entityName: o.entityName,
      addedObservations: await observe(port, `observations[${i}]`, o, beliefs),
    });
  }
  return { results, beliefs };
}

/** Retracts the ACTIVE belief on each key that has one (in the order given) and says what each retraction took down with it. */
async function retractKeys(port: GraphPort, keys: readonly string[], reason: string): Promise<RetractionSummary[]> {
  const out: RetractionSummary[] = [];
  for (const key of keys) {
    // Read each just before retracting it: an earlier retraction of this call may have taken it down already.
    const id = (await port.read((tx) => activeIdsByKeys(tx, port.fleet, [key]))).get(key);
    if (!id) continue;
    const { retractionId, created } = await port.retract(id, reason);
    if (created) out.push(await port.read((tx) => summarizeRetraction(tx, port.fleet, retractionId)));
  }
  return out;
}

export const deleteEntities = (port: GraphPort, names: readonly string[], reason: string) =>
  retractKeys(
    port,
    names.map((n, i) => entityKey(`entityNames[${i}]`, n)),
    reason,
  );

export const deleteObservations = (
  port: GraphPort,
  deletions: ReadonlyArray<{ entityName: string; observations: string[] }>,
  reason: string,
) =>
  retractKeys(
    port,
    deletions.flatMap((d, i) =>
      d.observations.map((c, j) => observationKey(`deletions[${i}].observations[${j}]`, d.entityName, c)),
    ),
    reason,
  );

export const deleteRelations = (port: GraphPort, relations: readonly Relation[], reason: string) =>
  retractKeys(
    port,
    relations.map((r, i) => relationKey(`relations[${i}]`, r)),
    reason,
  );
