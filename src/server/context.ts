import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AgentRow } from '../agent/agent.repository';
import { authenticate } from '../agent/agent.service';
import { ReadGrants } from '../agent/access';
import type { Context } from '../api/builder';
import { bearer } from './ws-auth';

/** How long a token's agent is remembered: a revoked token is refused within this. */
const TOKEN_CACHE_MS = 5_000;

/** What Yoga hands the context factory: an HTTP request, or graphql-ws's connection params and id. */
interface ContextInit {
  request?: Request;
  connectionParams?: Record<string, unknown>;
  requestId?: string;
}

/**
 * Each operation's Context: the bearer token's agent (cached briefly by token, so a burst of requests
 * authenticates once), the request id (the client's `x-request-id`, or a fresh one), a logger that names
 * it, and fresh read grants.
 */
export function contextFactory(
  deps: Pick<Context, 'core' | 'adjudicator' | 'waker'> & { log: Logger },
): (init: unknown) => Promise<Context> {
  const cache = new Map<string, { agent: AgentRow | null; at: number }>();
  async function agentFor(token: string | null): Promise<{ agent: AgentRow | null; badToken: boolean }> {
    if (!token) return { agent: null, badToken: false };
    const hit = cache.get(token);
    if (hit && Date.now() - hit.at < TOKEN_CACHE_MS) return { agent: hit.agent, badToken: !hit.agent };
    const agent = await authenticate(deps.core.store, token);
    if (cache.size > 10_000) cache.clear();
    cache.set(token, { agent, at: Date.now() });
    return { agent, badToken: !agent };
  }
  return async (init) => {
    // Yoga types the initial context as its server context (here an empty record); these are what it carries.
    const i = init as ContextInit;
    const header = i.request?.headers.get('authorization') ?? null;
    // Over WebSocket, src/server/ws-auth.ts found the header where the client put it and passes it here.
    const wsAuth = i.connectionParams?.authorization;
    const { agent, badToken } = await agentFor(bearer(header ?? wsAuth ?? null));
    const requestId = i.requestId ?? i.request?.headers.get('x-request-id')?.slice(0, 64) ?? randomUUID();
    return {
      core: deps.core,
      adjudicator: deps.adjudicator,
      waker: deps.waker,
      agent,
      badToken,
      requestId,
      log: deps.log.child({ requestId }),
      grants: new ReadGrants(),
    };
  };
}
