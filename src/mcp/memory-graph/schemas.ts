import { z } from 'zod';
import { LIMITS } from '../../validation';

/**
 * The nine tools' schemas: the reference server's (@modelcontextprotocol/server-memory 2026.8.31,
 * dist/index.js) field for field, with RETRACT's additions marked optional on input and added
 * beside the reference's fields on output, so a client written for the reference sends and reads
 * exactly what it did.
 */
const EntitySchema = z.object({
  name: z.string().describe('The name of the entity'),
  entityType: z.string().describe('The type of the entity'),
  observations: z.array(z.string()).describe('An array of observation contents associated with the entity'),
});
const RelationSchema = z.object({
  from: z.string().describe('The name of the entity where the relation starts'),
  to: z.string().describe('The name of the entity where the relation ends'),
  relationType: z.string().describe('The type of the relation'),
});
const evidence = z
  .string()
  .max(LIMITS.evidenceMax)
  .optional()
  .describe('RETRACT: where this came from (a document, a check), kept with the belief');
const DerivedFrom = z.object({
  entityName: z.string().describe('The entity'),
  content: z.string().optional().describe('One of its observations; without it, the entity itself'),
});
const reason = z
  .string()
  .max(LIMITS.reasonMax)
  .optional()
  .describe("RETRACT: why it is taken back, kept on the receipt (default: the tool's name)");

export const createEntitiesInput = { entities: z.array(EntitySchema.extend({ evidence })) };
export const createRelationsInput = { relations: z.array(RelationSchema) };
export const addObservationsInput = {
  observations: z.array(
    z.object({
      entityName: z.string().describe('The name of the entity to add the observations to'),
      contents: z.array(z.string()).describe('An array of observation contents to add'),
      derivedFrom: z
        .array(DerivedFrom)
        .max(LIMITS.premisesMax - 1)
        .optional()
        .describe(
          'RETRACT: the observations (or entities) these were concluded from. They then rest on them as well as on their entity: ' +
            'deleting any of them takes these down too, with whatever rests on them.',
        ),
      evidence,
    }),
  ),
};
export const deleteEntitiesInput = {
  entityNames: z.array(z.string()).describe('An array of entity names to delete'),
  reason,
};
export const deleteObservationsInput = {
  deletions: z.array(
    z.object({
      entityName: z.string().describe('The name of the entity containing the observations'),
      observations: z.array(z.string()).describe('An array of observations to delete'),
    }),
  ),
  reason,
};
export const deleteRelationsInput = {
  relations: z.array(RelationSchema).describe('An array of relations to delete'),
  reason,
};
export const searchNodesInput = {
  query: z.string().describe('The search query to match against entity names, types, and observation content'),
};
export const openNodesInput = { names: z.array(z.string()).describe('An array of entity names to retrieve') };

const Written = z.object({
  claimKey: z.string(),
  beliefId: z
    .string()
    .describe('The belief written (its plain id): name it to the memory tools (support an effect, explain it)'),
  id: z.string().describe("The same belief's global id, as the GraphQL API takes it"),
  entityName: z.string(),
  content: z.string().optional(),
  relation: RelationSchema.optional(),
});
const beliefs = z.array(Written).describe('RETRACT: the beliefs this call wrote, with their ids');
const MoneyLine = z.object({
  effectId: z.string(),
  kind: z.string(),
  amount: z.string().nullable(),
  status: z.string(),
});
const Retraction = z.object({
  retractionId: z.string(),
  fell: z.array(
    z.object({
      beliefId: z.string(),
      claimKey: z.string(),
      depth: z.number().int(),
      statement: z.string(),
      memory: z
        .union([
          z.object({ entity: z.string() }),
          z.object({ entityName: z.string(), observation: z.string() }),
          z.object({ from: z.string(), relationType: z.string(), to: z.string() }),
        ])
        .nullable(),
    }),
  ),
  fellCount: z.number().int(),
  cancelledEffects: z.array(MoneyLine),
  reachedInFlight: z.array(MoneyLine),
  reversals: z.array(MoneyLine),
  owed: z.array(z.string()),
  unreachable: z.array(z.string()),
});

const graph = { entities: z.array(EntitySchema), relations: z.array(RelationSchema) };
export const graphOutput = graph;
export const createEntitiesOutput = { entities: z.array(EntitySchema), beliefs };
export const createRelationsOutput = { relations: z.array(RelationSchema), beliefs };
export const addObservationsOutput = {
  results: z.array(z.object({ entityName: z.string(), addedObservations: z.array(z.string()) })),
  beliefs,
};
export const deleteOutput = {
  success: z.boolean(),
  message: z.string(),
  retractions: z
    .array(Retraction)
    .describe(
      'RETRACT: each retraction this call made: what fell with it (depth 0 is what was deleted), the actions it cancelled, and the money owed back or unreachable',
    ),
};
