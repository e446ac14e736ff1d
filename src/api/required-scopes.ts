import { type AuthFailure, AuthScopeFailureType } from '@pothos/plugin-scope-auth';
import type { GraphQLResolveInfo } from 'graphql';
import { READ_SCOPES, type Readable } from '../agent/access';
import type { Scope } from '../agent/scopes';

/**
 * The scopes a scope-auth failure asked for: any one of them (or `admin`, which implies all) would
 * have allowed the operation. `authenticated` asks for no scope (a token is enough).
 */
export function requiredScopes(f: AuthFailure | undefined): Scope[] {
  const out = new Set<Scope>();
  const walk = (x: AuthFailure) => {
    if (x.kind === AuthScopeFailureType.AuthScope) {
      if (x.scope === 'scope') out.add(x.parameter as Scope);
      else if (x.scope === 'readable') for (const s of READ_SCOPES[x.parameter as Readable]) out.add(s);
      else if (x.scope === 'ownScopes') for (const s of READ_SCOPES.AgentScopes) out.add(s);
    } else if (x.kind === AuthScopeFailureType.AnyAuthScopes || x.kind === AuthScopeFailureType.AllAuthScopes) {
      x.failures.forEach(walk);
    }
  };
  if (f) walk(f);
  return [...out];
}

const ROOTS: Record<string, string> = {
  Query: 'the query',
  Mutation: 'the mutation',
  Subscription: 'the subscription',
};

/** "the mutation assertBelief needs the scope beliefs:write …": the refused field, and the scopes that would open it. */
export function fieldForbidden(info: GraphQLResolveInfo, scopes: readonly Scope[]): string {
  const parent = info.parentType.name;
  const what = ROOTS[parent] ? `${ROOTS[parent]} ${info.fieldName}` : `${parent}.${info.fieldName}`;
  return `${what} needs the scope ${scopes.join(' or ')} (admin implies every scope), which your token does not hold`;
}
