import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * Tool schemas every client can take. zod writes a nullable field as `"type": ["string", "null"]` and an
 * unknown one as `{}`; clients that map tool schemas onto a single-type dialect (the OpenAPI subset of
 * Gemini function declarations, for one) reject or loosen those, and the MCP Inspector warns on each.
 * So the listing is rewritten into the same contract, spelled portably: a type array becomes `anyOf`
 * branches of one type each; a schema that constrains nothing (a belief's `value`) becomes "any JSON
 * value" spelled out as six typed branches; an object or array of anything says so with a type.
 */

const JSON_VALUE = ['string', 'number', 'boolean', 'object', 'array', 'null'] as const;
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SUBSCHEMA_ONE = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

type Schema = Record<string, unknown>;
const ANNOTATIONS = new Set([
  'description',
  'title',
  'default',
  'examples',
  '$schema',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
]);

/** One schema (and everything below it), rewritten portably. */
function portable(node: unknown): unknown {
  if (
    node === true ||
    (node && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).every((k) => ANNOTATIONS.has(k)))
  ) {
    const notes = node === true ? {} : (node as Schema);
    return { ...notes, anyOf: JSON_VALUE.map((type) => ({ type })) };
  }
  if (!node || typeof node !== 'object' || Array.isArray(node)) return node;
  const s: Schema = { ...(node as Schema) };
  for (const k of SUBSCHEMA_MAPS) {
    if (s[k] && typeof s[k] === 'object')
      s[k] = Object.fromEntries(Object.entries(s[k] as Schema).map(([n, x]) => [n, portable(x)]));
  }
  for (const k of SUBSCHEMA_ONE) if (k in s && typeof s[k] !== 'boolean') s[k] = portable(s[k]);
  // `additionalProperties: {}` or `items: {}` on a free-form container: any JSON value, spelled out.
  for (const k of SUBSCHEMA_LISTS) if (Array.isArray(s[k])) s[k] = (s[k] as unknown[]).map(portable);
  if (Array.isArray(s.type)) {
    const { type, ...rest } = s;
    const notes = Object.fromEntries(Object.entries(rest).filter(([k]) => ANNOTATIONS.has(k)));
    const constraints = Object.fromEntries(Object.entries(rest).filter(([k]) => !ANNOTATIONS.has(k)));
    return {
      ...notes,
      anyOf: (type as string[]).map((t) =>
        t === 'null' ? { type: 'null' } : { type: t, ...withoutNull(constraints) },
      ),
    };
  }
  return s;
}

/** An `enum` of a non-null branch without its null member. */
function withoutNull(c: Schema): Schema {
  return Array.isArray(c.enum) ? { ...c, enum: (c.enum as unknown[]).filter((x) => x !== null) } : c;
}

/** Rewrites the server's tools/list answer with `portable`; call after every tool is registered. */
export function portableListing(server: McpServer): void {
  const list = sdkHandler(server, 'tools/list');
  server.server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
    const r = (await list(req, extra)) as { tools: Array<Schema> };
    return {
      ...r,
      tools: r.tools.map((t) => ({
        ...t,
        inputSchema: portable(t.inputSchema),
        ...(t.outputSchema ? { outputSchema: portable(t.outputSchema) } : {}),
      })),
    } as never;
  });
}

type Handler = (req: unknown, extra: unknown) => Promise<unknown> | unknown;

/** The handler McpServer installed for `method` (it keeps them in the protocol's handler map), to wrap it. */
export function sdkHandler(server: McpServer, method: string): Handler {
  const handlers = (server.server as unknown as { _requestHandlers?: Map<string, Handler> })._requestHandlers;
  const h = handlers?.get(method);
  if (!h) throw new Error(`MCP SDK: no ${method} handler to wrap (was no tool registered, or did the SDK change?)`);
  return h;
}
