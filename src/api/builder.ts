import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin, { type AuthFailure, AuthScopeFailureType } from '@pothos/plugin-scope-auth';
import SimpleObjectsPlugin from '@pothos/plugin-simple-objects';
import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import type { Logger } from 'pino';
import type { Actor, Core } from '../core';
import type { AgentRow } from '../agent/agent.repository';
import type { Scope } from '../agent/scopes';
import { type Readable, type ReadGrants, forbiddenReason, hasScope, mayRead, mayReadScopesOf } from '../agent/access';
import type { Adjudicator } from '../adjudication/adjudicator';
import { DomainError } from '../errors/domain-error';
import { instant } from '../validation';
import { fieldForbidden, requiredScopes } from './required-scopes';
import type { Waker } from '../event/tailer';

/** What every resolver sees: the engine, the authenticated agent (or null), and request bookkeeping. */
export interface Context {
  core: Core;
  adjudicator: Adjudicator;
  waker: Waker;
  agent: AgentRow | null;
  /** True when a token was sent but matched no agent. */
  badToken: boolean;
  requestId: string;
  log: Logger;
  /** What this request's own mutations wrote or answered with: readable to it whatever its scopes. */
  grants: ReadGrants;
}

/** Lets the caller read `ids` of `type` for the rest of this request (a mutation's own answer). */
export function grantRead(
  ctx: Context,
  type: 'Belief' | 'Contradiction' | 'Effect' | 'Retraction' | 'Reversal' | 'Reinstatement',
  ...ids: Array<string | number | bigint | null | undefined>
): void {
  for (const id of ids) if (id != null) ctx.grants.grant(type, id);
}

/**
 * Type-level read rule: the object is readable with the scopes `what` names (src/agent/access.ts),
 * or when this request's own mutation granted it. Run once per object (runScopesOnType), so a
 * refused object is one FORBIDDEN error at the field that reached it, by whatever path.
 */
export function readRule(
  ctx: Context,
  what: Readable,
  grant?: { type: string; id: string | number | bigint } | null,
): true | { readable: Readable } {
  return grant && ctx.grants.has(grant.type, grant.id) ? true : { readable: what };
}

/** The first read rule a failure names, to say in the refusal which scopes would open it. */
function refusedReadable(f: AuthFailure | undefined): Readable | null {
  if (!f) return null;
  if (f.kind === AuthScopeFailureType.AuthScope)
    return f.scope === 'readable' ? (f.parameter as Readable) : f.scope === 'ownScopes' ? 'AgentScopes' : null;
  if (f.kind === AuthScopeFailureType.AnyAuthScopes || f.kind === AuthScopeFailureType.AllAuthScopes) {
    for (const x of f.failures) {
      const r = refusedReadable(x);
      if (r) return r;
    }
  }
  return null;
}

/** The acting agent as a service Actor; UNAUTHENTICATED when there is none. */
export function actorOf(ctx: Context): Actor & { operator: boolean } {
  if (!ctx.agent) throw new DomainError('UNAUTHENTICATED', 'a valid bearer token is required');
  return { fleet: ctx.agent.fleet_id, agentId: ctx.agent.id, operator: ctx.agent.operator };
}

export const builder = new SchemaBuilder<{
  Context: Context;
  AuthScopes: { scope: Scope; authenticated: boolean; readable: Readable; ownScopes: string };
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
    SafeInt: { Input: number; Output: number };
    ID: { Input: string; Output: string | number | bigint };
  };
  DefaultFieldNullability: false;
  DefaultEdgesNullability: false;
  DefaultNodeNullability: false;
  DefaultInputFieldRequiredness: false;
}>({
  plugins: [ScopeAuthPlugin, RelayPlugin, DataloaderPlugin, SimpleObjectsPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    runScopesOnType: true,
    authScopes: (ctx) => ({
      scope: (s: Scope) => hasScope(ctx.agent, s),
      authenticated: !!ctx.agent,
      readable: (what: Readable) => mayRead(ctx.agent, what),
      ownScopes: (agentId: string) => mayReadScopesOf(ctx.agent, agentId),
    }),
    unauthorizedError: (_parent, ctx, info, result) => {
      const what = refusedReadable(result.failure);
      // Which scopes would allow it, in the message and in extensions.requiredScopes (any one of them, or admin).
      const scopes = requiredScopes(result.failure);
      const message = what
        ? forbiddenReason(what)
        : scopes.length
          ? fieldForbidden(info, scopes)
          : 'this operation needs a scope your token does not hold';
      return ctx.agent
        ? new GraphQLError(message, { extensions: { code: 'FORBIDDEN', requiredScopes: scopes } })
        : new GraphQLError(
            ctx.badToken
              ? 'the bearer token is not valid'
              : 'a bearer token is required (Authorization: Bearer <token>)',
            {
              extensions: { code: 'UNAUTHENTICATED' },
            },
          );
    },
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: {
      authScopes: { scope: 'beliefs:read' },
      description: 'Any object of your fleet by its global id.',
    },
    nodesQueryOptions: false,
    edgesFieldOptions: { nullable: false },
    nodeFieldOptions: { nullable: false },
    pageInfoTypeOptions: { description: 'Where a page ends and whether more follow.' },
    nodeTypeOptions: { description: 'An object with a global id.' },
  },
});

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

builder.addScalarType(
  'DateTime',
  new GraphQLScalarType({
    name: 'DateTime',
    description:
      'An RFC 3339 instant with its offset, e.g. 2026-12-01T08:00:00.000Z, from 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z.',
    serialize: (v) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString()),
    // RFC 3339 with an offset, a real calendar instant, years 0001–9999 (src/validation.ts, docs/input-rules.md).
    parseValue: (v) => instant('DateTime', v),
  }),
);

function literalToJson(ast: ValueNode): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map(literalToJson);
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalToJson(f.value)]));
    default:
      throw new GraphQLError('JSON: variables are not allowed inside a JSON literal');
  }
}

builder.addScalarType(
  'JSON',
  new GraphQLScalarType({
    name: 'JSON',
    description: 'Any JSON value.',
    serialize: (v) => v,
    parseValue: (v) => v,
    parseLiteral: (ast) => literalToJson(ast),
  }),
);

function safeInt(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > MAX_SAFE) {
    // A TypeError (not a GraphQLError) lets graphql-js report it as an input coercion error with the field's path.
    throw new TypeError('SafeInt: must be an integer between -(2^53-1) and 2^53-1');
  }
  return v;
}

builder.addScalarType(
  'SafeInt',
  new GraphQLScalarType({
    name: 'SafeInt',
    description: 'Integer between -(2^53-1) and 2^53-1.',
    serialize: (v) => safeInt(typeof v === 'string' ? Number(v) : v),
    parseValue: safeInt,
    parseLiteral: (ast) => {
      if (ast.kind !== Kind.INT) throw new GraphQLError('SafeInt: must be an integer literal');
      return safeInt(Number(ast.value));
    },
  }),
);

builder.queryType({ description: "Reads. Every query sees the caller's fleet alone." });
builder.mutationType({ description: 'Writes. Every write records the acting agent.' });
builder.subscriptionType({ description: 'Streams, resumable from a cursor.' });
