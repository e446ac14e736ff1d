import { type AgentRow, agentsByIds } from '../../agent/agent.repository';
import { createAgent } from '../../agent/agent.service';
import { type Context, actorOf, builder } from '../builder';
import { type FleetNodeRef, fleetNode } from '../loaders';

export const AgentRef: FleetNodeRef<AgentRow> = fleetNode('Agent', agentsByIds, {
  description: "An agent belongs to exactly one fleet; it never sees or changes another fleet's data.",
  fields: (t) => ({
    name: t.exposeString('name', { description: 'Unique within its fleet.' }),
    fleet: t.exposeString('fleet_id', { description: 'The fleet this agent belongs to.' }),
    scopes: t.exposeStringList('scopes', {
      description:
        'What the token may do. A scope proves a grant, not who the caller is. Visible to admin and to the agent itself.',
      authScopes: (a) => ({ ownScopes: a.id }),
    }),
  }),
});

const AgentCreatedRef = builder.simpleObject('AgentCreated', {
  description: 'A new agent and its token.',
  fields: (t) => ({
    agent: t.field({ type: AgentRef, description: 'The agent created.' }),
    token: t.string({ description: 'The bearer token, shown once; the server keeps only its hash.' }),
  }),
});

const CreateAgentInput = builder.inputType('CreateAgentInput', {
  description: 'A new agent.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Unique within its fleet.' }),
    scopes: t.stringList({ required: true, description: 'Scopes to grant.' }),
    fleet: t.string({
      description: "Defaults to the caller's fleet. Only the operator (the bootstrap agent) may name another fleet.",
    }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: AgentRef,
    authScopes: { authenticated: true },
    description: 'The agent your token belongs to.',
    resolve: (_r, _a, ctx) => ctx.agent!.id,
  }),
);

builder.mutationField('createAgent', (t) =>
  t.field({
    type: AgentCreatedRef,
    authScopes: { scope: 'admin' },
    description: 'Admin only: creates an agent and its bearer token.',
    args: { input: t.arg({ type: CreateAgentInput, required: true, description: 'The agent.' }) },
    resolve: resolveCreateAgent,
  }),
);

/** createAgent: the agent and its token, once (only its hash is kept). */
async function resolveCreateAgent(_root: unknown, a: { input: typeof CreateAgentInput.$inferInput }, ctx: Context) {
  const { agent, token } = await createAgent(ctx.core, actorOf(ctx), a.input);
  return { agent, token };
}
