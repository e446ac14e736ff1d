import type { IncomingHttpHeaders } from 'node:http';
import { getOperationAST } from 'graphql';
import { isAsyncIterable, processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../api/builder';

/** The answer to a plain POST, as the HTTP edge writes it. */
export interface PostAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const PARAMS = new Set(['query', 'variables', 'operationName', 'extensions']);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The media type Yoga's result processors would answer an Accept header with, for the ones this path takes. */
function acceptedType(accept: string | undefined): string | null {
  const a = (accept ?? '').split(';')[0]!.trim().toLowerCase();
  if (a === '' || a === '*/*' || a === 'application/json') return 'application/json';
  if (a === 'application/graphql-response+json') return a;
  return null;
}

/**
 * One GraphQL POST (a single operation, `application/json`) answered through the same envelop as Yoga's own
 * request pipeline, without it: Yoga turns each request into a fetch Request with a body stream, parses
 * that stream, runs its request hooks and builds a Response stream the edge reads back, which cost about
 * five times the operation's own parse-validate-execute for a small mutation (a turn's `assertBelief`:
 * docs/findings-log.md, issue 35). The operation still runs every envelop plugin Yoga's does (limits,
 * cost, the introspection gate, metrics, tracing, masking, scope-auth in the schema), in Yoga's order, and
 * the answer is built by Yoga's own result processor, so status, headers and body are what Yoga sends.
 *
 * Returns null, having run nothing, for anything else: a batch, a subscription, another Accept or content
 * type, parameters Yoga's check would refuse or that this path does not read (extensions), a syntax or
 * validation error or a limit refused before execution, a context that could not be built. The caller
 * then hands the request to Yoga, which answers it as it always has (parse and validation are cached).
 */
export async function answerPost(
  yoga: YogaServerInstance<Record<string, unknown>, Context>,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<PostAnswer | null> {
  const type = acceptedType(headers.accept);
  if (!type) return null;
  let params: unknown;
  try {
    params = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(params) || Object.keys(params).some((k) => !PARAMS.has(k))) return null;
  const { query, variables, operationName, extensions } = params;
  if (typeof query !== 'string' || query === '' || extensions != null) return null;
  if (variables != null && !isObject(variables)) return null;
  if (operationName != null && typeof operationName !== 'string') return null;
  // The context factory reads the request's headers (the token, x-request-id); nothing else reads the request.
  const request = { headers: { get: (name: string) => header(headers, name) } };
  const env = yoga.getEnveloped({ request, params });
  let document: ReturnType<typeof env.parse>;
  try {
    document = env.parse(query);
    if (env.validate(env.schema, document).length > 0) return null;
  } catch {
    return null;
  }
  if (getOperationAST(document, operationName ?? undefined)?.operation === 'subscription') return null;
  let contextValue: unknown;
  try {
    contextValue = await env.contextFactory();
  } catch {
    return null;
  }
  const result = await env.execute({
    schema: env.schema,
    document,
    contextValue,
    variableValues: variables ?? undefined,
    operationName: operationName ?? undefined,
  });
  // No @defer/@stream in this schema: a query or mutation answers one result.
  if (isAsyncIterable(result)) throw new Error('a query or mutation answered a stream');
  const response = processRegularResult(result, yoga.fetchAPI, type);
  const out: Record<string, string> = {};
  response.headers.forEach((v, k) => (out[k] = v));
  return { status: response.status, headers: out, body: await response.text() };
}

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const v = headers[name.toLowerCase()];
  return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
}
