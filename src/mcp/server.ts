import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AgentRow } from '../agent/agent.repository';
import { mayRead } from '../agent/access';
import { toolScopes, toolsFor } from './access';
import { readerTx } from './reader';
import { explainBelief } from './explain';
import { getReceipt, listOwedReversals } from './receipts';
import { searchNearest } from './search';
import { getReinstatement, getReinstatementInput, getReinstatementOutput, reinstatementText } from './reinstatement';
import {
  explainBeliefInput,
  explainBeliefOutput,
  getReceiptInput,
  getReceiptOutput,
  listOwedReversalsInput,
  listOwedReversalsOutput,
  searchBeliefsInput,
  searchBeliefsOutput,
} from './schemas';
import { explainText, owedText, receiptText, searchText } from './text';
import { type McpDeps, Toolkit, sealTools } from './toolkit';
import { registerMemoryGraph } from './write/memory-graph';
import { registerMemoryTools } from './write/memory-tools';

export type { McpDeps } from './toolkit';

const MCP_SERVER_NAME = 'retract';
const MCP_SERVER_VERSION = '0.2.0';

/** Thrown when a token opens no tool at all: transports answer it before any tool runs. */
class NoToolsForbiddenError extends Error {
  constructor(agent: AgentRow) {
    super(noToolsReason(agent));
    this.name = 'NoToolsForbiddenError';
  }
}

/** Why a token is refused the endpoint: it holds none of the scopes that open a tool. */
export function noToolsReason(agent: AgentRow): string {
  return `agent ${agent.name} (fleet ${agent.fleet_id}) holds none of the scopes that open an MCP tool (${toolScopes().join(', ')})`;
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/**
 * The MCP tools for one authenticated agent: the ones its scopes open (src/mcp/access.ts), and
 * nothing else in tools/list. The receipt tools read through the reader path (read-only
 * transaction, role retract_reader, the agent's fleet); the memory tools (src/mcp/write/) call the
 * services GraphQL calls, writing as retract_mcp. Every answer is filtered by the read rule
 * (src/mcp/visible.ts) and carries structuredContent plus a text rendering. Refuses to build for an
 * agent that may use no tool.
 */
export function createMcpServer(deps: McpDeps, agent: AgentRow): McpServer {
  if (toolsFor(agent).length === 0) throw new NoToolsForbiddenError(agent);
  const fleet = agent.fleet_id;
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    {
      instructions:
        `Shared memory of RETRACT for fleet ${fleet}: remember beliefs with their evidence and what they were derived from, ` +
        'recall them, ask why one stands, retract one with everything built on it (and reinstate it), propose effects resting ' +
        "on beliefs, and read the receipts of what a retraction took down, cancelled and owes. Only the tools your token's " +
        'scopes open are listed. Ids: the global ids the tools and the GraphQL API issue, or plain numeric ids (as numbers or strings).',
    },
  );
  const kit = new Toolkit(server, deps, agent);
  const mayReadActive = mayRead(agent, 'Belief');

  kit.tool(
    'get_receipt',
    {
      title: 'Get a retraction receipt',
      description:
        'The receipt of one retraction: its root, reason and actor; the beliefs it took down in cascade order (paged); ' +
        'the PENDING effects it cancelled; the reversals it recorded for EXECUTED effects (OWED…CONFIRMED, or UNREACHABLE); ' +
        'and its totals (exposure, owed, unreachable, settled per currency). Name it by retractionId, or by any beliefId it took ' +
        'down; with neither, the newest receipt of your fleet. A belief reinstated since is ACTIVE again: shown only to a token with beliefs:read.',
      inputSchema: getReceiptInput,
      outputSchema: getReceiptOutput,
      annotations: READ_ONLY,
    },
    (a) => readerTx(deps.store, fleet, (tx) => getReceipt(tx, fleet, a, { mayReadActive })),
    receiptText,
  );

  kit.tool(
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
    (a) => readerTx(deps.store, fleet, (tx) => getReinstatement(tx, fleet, a)),
    reinstatementText,
  );

  kit.tool(
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
    (a) => readerTx(deps.store, fleet, (tx) => explainBelief(tx, fleet, a)),
    explainText,
  );

  kit.tool(
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
    (a) => readerTx(deps.store, fleet, (tx) => listOwedReversals(tx, fleet, a)),
    owedText,
  );

  kit.tool(
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
    (a) => searchNearest(deps, fleet, a),
    searchText,
  );

  registerMemoryTools(kit);
  registerMemoryGraph(kit); // the nine tools of @modelcontextprotocol/server-memory (docs/mcp-memory-graph.md)
  sealTools(kit);
  return server;
}
