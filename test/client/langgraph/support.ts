// A RETRACT server for the LangGraph store's tests, and stores on it: each in a fleet of its own, so tests share
// one server and never see each other's items. The scopes are exactly those the store documents it needs.
import { Embeddings } from '@langchain/core/embeddings';
import { InMemoryStore } from '@langchain/langgraph-checkpoint';
import { RetractStore } from '../../../src/client/langgraph/index.js';
import type { EngineName } from '../../../src/store/engine';
import { agentWith, startApiServer, type ApiServer } from '../../support/api-server';
import { embedder } from '../../support/engines';

/** What RetractStore's token needs (docs/langgraph.md). */
const STORE_SCOPES = ['beliefs:read', 'beliefs:write', 'beliefs:retract', 'contradictions:adjudicate'] as const;

export interface StoreServer {
  server: ApiServer;
  /** A RetractStore acting as a new agent in a new fleet (or in `fleet`). */
  retractStore(opts?: { fleet?: string; fields?: string[]; root?: string }): Promise<RetractStore>;
  close(): Promise<void>;
}

let fleets = 0;

export async function startStoreServer(engine: EngineName): Promise<StoreServer> {
  const server = await startApiServer(engine, { config: { logLevel: 'error' } });
  const opened: RetractStore[] = [];
  return {
    server,
    async retractStore(opts = {}) {
      const agent = await agentWith(
        server.store,
        opts.fleet ?? `langgraph-${process.pid}-${++fleets}`,
        STORE_SCOPES,
        'lg',
      );
      const store = new RetractStore({ url: server.http, token: agent.token, fields: opts.fields, root: opts.root });
      opened.push(store);
      return store;
    },
    async close() {
      for (const s of opened) await s.stop();
      await server.close();
    },
  };
}

/** The server's own embedder as LangChain Embeddings, so InMemoryStore ranks a query as RETRACT's search does. */
class ServerEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  embedDocuments(texts: string[]): Promise<number[][]> {
    return embedder.embed(texts);
  }
  async embedQuery(text: string): Promise<number[]> {
    return (await embedder.embed([text]))[0]!;
  }
}

/** An InMemoryStore that embeds `fields` with the server's embedder (for query search) or, without, embeds nothing. */
export function inMemoryStore(fields?: string[]): InMemoryStore {
  return fields
    ? new InMemoryStore({ index: { dims: embedder.dimensions, embeddings: new ServerEmbeddings(), fields } })
    : new InMemoryStore();
}
