import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AgentRow } from '../agent/agent.repository';
import { type Readable, forbiddenReason, mayRead } from '../agent/access';
import type { Embedder } from '../embedding/embedder';
import { DomainError } from '../errors/domain-error';
import type { Store } from '../store/engine';
import { storedEmbedder } from '../store/meta';
import * as v from '../validation';
import { canReadReceipts, readerTx } from './reader';
import { explainBelief } from './explain';
import { getReceipt, listOwedReversals, searchBeliefs } from './receipts';
import { getReinstatement, getReinstatementInput, getReinstatementOutput, reinstatementText } from './reinstatement';
import {
  explainBeliefInput, explainBeliefOutput, getReceiptInput, getReceiptOutput, listOwedReversalsInput, listOwedReversalsOutput,
  searchBeliefsInput, searchBeliefsOutput,
} from './schemas';
import { explainText, owedText, receiptText, searchText } from './text';

const MCP_SERVER_NAME = 'retract-receipts';
const MCP_SERVER_VERSION = '0.1.0';

export interface McpDeps {
  store: Store;
  embedder: Embedder;
  /** Where unexpected errors are reported (they reach the client masked, with a request id). */
  onUnexpected?: (err: unknown, requestId: string, tool: string) => void;
}

/** Thrown when a token lacks `receipts:read`: transports answer it before any tool runs. */
class ReceiptsForbiddenError extends Error {
  constructor(agent: AgentRow | null) {
    super(
      agent
        ? `agent ${agent.name} (fleet ${agent.fleet_id}) lacks the receipts:read scope; the receipt tools need a token with receipts:read`
        : 'a valid bearer token with the receipts:read scope is required',
    );
    this.name = 'ReceiptsForbiddenError';
  }
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/**
 * What each tool's answer can contain, under the read rule GraphQL applies per type
 * (src/agent/access.ts). A receipt names only RETRACTED beliefs, its effects and reversals; a
 * search or an explanation can show ACTIVE beliefs, so those tools also need beliefs:read.
 */
const TOOL_READS: Record<string, readonly Readable[]> = {
  get_receipt: ['Receipt', 'RetractedBelief', 'Effect'],
  get_reinstatement: ['Receipt'],
  list_owed_reversals: ['Receipt', 'Effect'],
  explain_belief: ['Belief', 'Effect', 'Receipt'],
  search_beliefs: ['Belief'],
};

/** The tool's refusal when the token cannot read everything its answer may contain, else null. */
function refusal(agent: AgentRow, tool: string): string | null {
  const missing = (TOOL_READS[tool] ?? []).find((r) => !mayRead(agent, r));
  return missing ? `FORBIDDEN: ${tool}: ${forbiddenReason(missing)}` : null;
}

/**
 * The receipt tools for one authenticated agent. Every tool reads through the reader path
 * (read-only transaction, role retract_reader, the agent's fleet) and returns structuredContent
 * plus a text rendering. Expected failures (bad input, not found) come back as tool errors with
 * their code and message; anything else is masked with a request id. Refuses to build for an
 * agent without `receipts:read`.
 */
export function createMcpServer(deps: McpDeps, agent: AgentRow): McpServer {
  if (!canReadReceipts(agent)) throw new ReceiptsForbiddenError(agent);
  const fleet = agent.fleet_id;
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    {
      instructions:
        `Read-only receipts of RETRACT for fleet ${fleet}: what a retraction took down, cancelled and reached, ` +
        'what is still owed, and why a belief stands or fell. Ids: pass the global ids the GraphQL API issues, or plain numeric ids.',
    },
  );

  function run<A, R extends Record<string, unknown>>(tool: string, fn: (args: A) => Promise<R>, text: (r: R) => string) {
    return async (args: A): Promise<CallToolResult> => {
      const refused = refusal(agent, tool);
      if (refused) return { isError: true, content: [{ type: 'text', text: refused }] };
      try {
        const result = await fn(args);
        return { structuredContent: result, content: [{ type: 'text', text: text(result) }] };
      } catch (e) {
        if (e instanceof DomainError) {
          return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }] };
        }
        const requestId = randomUUID();
        deps.onUnexpected?.(e, requestId, tool);
        return { isError: true, content: [{ type: 'text', text: `INTERNAL: unexpected error (request id ${requestId})` }] };
      }
    };
  }

  server.registerTool(
    'get_receipt',
    {
      title: 'Get a retraction receipt',
      description:
        'The receipt of one retraction: its root, reason and actor; the beliefs it took down in cascade order (paged); ' +
        'the PENDING effects it cancelled; the reversals it recorded for EXECUTED effects (OWED…CONFIRMED, or UNREACHABLE); ' +
        'and its totals (exposure, owed, unreachable, settled per currency). Name it by retractionId, or by any beliefId it took ' +
        'down; with neither, the newest receipt of your fleet.',
      inputSchema: getReceiptInput,
      outputSchema: getReceiptOutput,
      annotations: READ_ONLY,
    },
    run('get_receipt', (a) => readerTx(deps.store, fleet, (tx) => getReceipt(tx, fleet, a, { mayReadActive: mayRead(agent, 'Belief') })), receiptText),
  );

  server.registerTool(
    'get_reinstatement',
    {
      title: 'Get a reinstatement receipt',
      description:
        'The receipt of a reinstatement (a retraction taken back): its status (REINSTATED, or BLOCKED by a contradiction), the beliefs ' +
        'it brought back, its money lines (reversals VOIDED, in flight, or re-execution owed under reexecution: + the reversal key) ' +
        'and the effects restorable. Name it by reinstatementId or by the retractionId it took back; with neither, the newest.',
      inputSchema: getReinstatementInput,
      outputSchema: getReinstatementOutput,
      annotations: READ_ONLY,
    },
    run('get_reinstatement', (a) => readerTx(deps.store, fleet, (tx) => getReinstatement(tx, fleet, a, { mayReadActive: mayRead(agent, 'Belief') })), reinstatementText),
  );

  server.registerTool(
    'explain_belief',
    {
      title: 'Explain a belief',
      description:
        'Why a belief stands or fell: its lineage up through its justifications (which hold, which premises fell), ' +
        'its dependents down, the effects resting on it or on them, and, if RETRACTED, the retraction that took it down and why. ' +
        'Name it by beliefId or by claimKey. Needs beliefs:read as well as receipts:read: the graph around a belief can hold ACTIVE beliefs.',
      inputSchema: explainBeliefInput,
      outputSchema: explainBeliefOutput,
      annotations: READ_ONLY,
    },
    run('explain_belief', (a) => readerTx(deps.store, fleet, (tx) => explainBelief(tx, fleet, a)), explainText),
  );

  server.registerTool(
    'list_owed_reversals',
    {
      title: 'List owed reversals',
      description:
        'Reversals recorded as owed and not yet settled (OWED, DISPATCHED, FAILED), oldest first, with the total still owed ' +
        'per currency. A reversal is settled only when a provider confirms it with its own reference.',
      inputSchema: listOwedReversalsInput,
      outputSchema: listOwedReversalsOutput,
      annotations: READ_ONLY,
    },
    run('list_owed_reversals', (a) => readerTx(deps.store, fleet, (tx) => listOwedReversals(tx, fleet, a)), owedText),
  );

  server.registerTool(
    'search_beliefs',
    {
      title: 'Search beliefs',
      description:
        'Nearest beliefs to a text (approximate nearest neighbours over belief embeddings, cosine), ACTIVE only unless ' +
        'includeRetracted. Similarity is lexical/semantic closeness, never identity: claim keys decide what a belief is about. ' +
        'Needs beliefs:read as well as receipts:read: hits can be ACTIVE beliefs.',
      inputSchema: searchBeliefsInput,
      outputSchema: searchBeliefsOutput,
      annotations: READ_ONLY,
    },
    run('search_beliefs', async (a) => {
      const text = v.text('text', a.text, v.LIMITS.statementMax, { multiline: true });
      v.claimKeyPrefix('claimKeyPrefix', a.claimKeyPrefix);
      await checkEmbedder(deps);
      const [vector] = await deps.embedder.embed([text]);
      return readerTx(deps.store, fleet, (tx) => searchBeliefs(tx, fleet, { ...a, vector: vector! }));
    }, searchText),
  );

  return server;
}

/** Refuses a search when the store's vectors were written by another embedder than the configured one. */
async function checkEmbedder(deps: McpDeps): Promise<void> {
  const want = `${deps.embedder.id}@${deps.embedder.dimensions}`;
  const have = await readerTx(deps.store, null, storedEmbedder);
  if (have && have !== want) {
    throw new DomainError('CONFLICT', `this store's embeddings were written by ${have}, but this server embeds with ${want}; set RETRACT_EMBEDDER to match`);
  }
}
