import { type Context, builder } from '../builder';
import { inOrder, loadRows } from '../loaders';
import type { AgentRow } from '../../agent/agent.service';

export const AgentRef = builder.loadableNodeRef('Agent', {
  id: { resolve: (a) => a.id },
  loaderOptions: { cache: false },
  load: async (ids: string[], ctx: Context): Promise<Array<AgentRow | Error>> => inOrder('agent', ids, (await loadRows(ctx, 'agents', ids)) as unknown as AgentRow[]),
});

AgentRef.implement({
  description: 'An agent belongs to exactly one fleet; it never sees or changes another fleet\'s data.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'Unique within its fleet.' }),
    fleet: t.string({ description: 'The fleet this agent belongs to.', resolve: (a) => a.fleet_id }),
    scopes: t.exposeStringList('scopes', {
      description: 'What the token may do. A scope proves a grant, not who the caller is. Visible to admin and to the agent itself.',
      authScopes: (a) => ({ ownScopes: a.id }),
    }),
  }),
});

export const AgentCreatedRef = builder.simpleObject('AgentCreated', {
  description: 'A new agent and its token.',
  fields: (t) => ({
    agent: t.field({ type: AgentRef, description: 'The agent created.' }),
    token: t.string({ description: 'The bearer token, shown once; the server keeps only its hash.' }),
  }),
});
