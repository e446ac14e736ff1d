import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, type CallToolResult, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { AgentRow } from '../agent/agent.repository';
import { ReadGrants } from '../agent/access';
import type { Embedder } from '../embedding/embedder';
import { DomainError } from '../errors/domain-error';
import type { Store } from '../store/engine';
import { TOOL_NEEDS, mayUseTool, toolRefusal } from './access';
import { portableListing, sdkHandler } from './portable';
import { visibleTo } from './visible';

export interface McpDeps {
  store: Store;
  embedder: Embedder;
  /** Where unexpected errors are reported (they reach the client masked, with a request id). */
  onUnexpected?: (err: unknown, requestId: string, tool: string) => void;
}

type Shape = Record<string, z.ZodType>;
type Out<S extends Shape> = { [K in keyof S]: z.infer<S[K]> };

/** What a tool declares: its schemas, annotations (set truthfully: see docs/mcp.md) and words. */
export interface ToolSpec<I extends Shape, O extends Shape> {
  title: string;
  description: string;
  inputSchema: I;
  outputSchema: O;
  annotations: ToolAnnotations;
}

/**
 * One agent's view of the MCP server: registers a tool only when the agent may use it
 * (src/mcp/access.ts), and runs it so that every answer is filtered by the read rule GraphQL
 * applies per type (src/mcp/visible.ts), with the grants of what the tool itself wrote. Expected
 * failures come back as tool errors (`isError`) whose text starts with the code GraphQL gives the
 * same failure in extensions.code (`FORBIDDEN: …`, `NOT_FOUND: …`, `BAD_USER_INPUT: …`), the code
 * and field also in `_meta`; anything else is masked with a request id.
 */
export class Toolkit {
  readonly fleet: string;
  constructor(
    readonly server: McpServer,
    readonly deps: McpDeps,
    readonly agent: AgentRow,
  ) {
    this.fleet = agent.fleet_id;
  }

  /** The acting agent as services take it. */
  get actor() {
    return { fleet: this.fleet, agentId: this.agent.id };
  }

  tool<I extends Shape, O extends Shape>(
    name: string,
    spec: ToolSpec<I, O>,
    run: (args: z.infer<z.ZodObject<I>>, grants: ReadGrants) => Promise<Out<O>>,
    /** The text content: one item, or several (the memory-graph tools answer the reference's text first, then RETRACT's). */
    text: (r: Out<O>) => string | string[],
  ): void {
    if (!mayUseTool(this.agent, name)) return;
    const { deps, agent } = this;
    this.server.registerTool(name, spec, (async (args: z.infer<z.ZodObject<I>>): Promise<CallToolResult> => {
      const refused = toolRefusal(agent, name);
      if (refused) return toolError('FORBIDDEN', refused.replace(/^FORBIDDEN: /, ''));
      try {
        const grants = new ReadGrants();
        const result = await run(args, grants);
        const shown = await visibleTo(deps.store, agent, grants, result);
        const texts = text(shown as Out<O>);
        return {
          structuredContent: shown,
          content: (Array.isArray(texts) ? texts : [texts]).map((t) => ({ type: 'text' as const, text: t })),
        };
      } catch (e) {
        if (e instanceof DomainError) return toolError(e.code, e.message, e.field, e.extensions);
        const requestId = randomUUID();
        deps.onUnexpected?.(e, requestId, name);
        return toolError('INTERNAL_SERVER_ERROR', `unexpected error (request id ${requestId})`);
      }
    }) as never);
  }
}

/**
 * Call once every tool is registered: tools/list answers portable schemas (src/mcp/portable.ts), and a
 * call of a tool this token's scopes do not open (so not listed) is refused FORBIDDEN naming the scope
 * that would open it, as GraphQL refuses a field, rather than "tool not found".
 */
export function sealTools(kit: Toolkit): void {
  portableListing(kit.server);
  const call = sdkHandler(kit.server, 'tools/call');
  kit.server.server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const name = req.params.name;
    if (name in TOOL_NEEDS && !mayUseTool(kit.agent, name)) {
      const refused = toolRefusal(kit.agent, name)!;
      return toolError('FORBIDDEN', refused.replace(/^FORBIDDEN: /, '')) as never;
    }
    const r = (await call(req, extra)) as CallToolResult;
    // The SDK's own refusal of arguments that fail the input schema: GraphQL calls that BAD_USER_INPUT.
    const text = r.isError && r.content[0]?.type === 'text' ? r.content[0].text : '';
    if (/^MCP error -32602: Input validation error/.test(text))
      return toolError('BAD_USER_INPUT', text.replace(/^MCP error -32602: /, '')) as never;
    return r as never;
  });
}

/** A tool error: `isError`, the text `CODE: message`, and the code (GraphQL's extensions.code) and field in `_meta`. */
function toolError(
  code: string,
  message: string,
  field?: string | null,
  extensions?: Readonly<Record<string, string>>,
): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}` }],
    _meta: { ...extensions, code, ...(field ? { field } : {}) },
  };
}
