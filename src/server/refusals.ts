import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context } from '../api/builder';
import type { Limits } from './config';
import { type LimitName, limitError } from '../errors/limit-error';

export { limitError };

/**
 * A GraphQLError from any copy of graphql-js. Two copies can be loaded at once (its ESM and CJS
 * builds: a dual-package hazard a bundler or test runner triggers), and an error built by the other
 * copy must still be recognised, not masked as unexpected.
 */
export function isGraphQLError(e: unknown): e is GraphQLError {
  return e instanceof GraphQLError || Object.prototype.toString.call(e) === '[object GraphQLError]';
}

/**
 * graphql-armor's depth, alias, token and directive limits. Armor's own refusals have no
 * `extensions.code` and begin "Syntax Error:", so each rejection throws ours instead, before armor
 * would throw its own (armor calls onReject first). Cost is counted by src/server/cost.ts; depth under
 * `__schema` by src/server/introspection.ts.
 */
export function armorPlugin(limits: Limits, production: boolean): Plugin {
  const refuse = (limit: LimitName, message: string) => ({
    exposeLimits: false,
    onReject: [
      () => {
        throw limitError(limit, message);
      },
    ],
  });
  return EnvelopArmorPlugin({
    maxDepth: {
      n: limits.depth,
      ignoreIntrospection: true,
      flattenFragments: true,
      ...refuse('depth', 'the query is nested too deeply; ask for fewer levels'),
    },
    maxAliases: {
      n: limits.aliases,
      ...refuse('aliases', 'the query uses too many aliases; split it into several requests'),
    },
    costLimit: { enabled: false },
    maxTokens: {
      n: limits.tokens,
      ...refuse('tokens', 'the query has too many tokens; split it into several requests'),
    },
    maxDirectives: { n: limits.directives, ...refuse('directives', 'the query uses too many directives') },
    blockFieldSuggestion: { enabled: production },
  }) as Plugin;
}

/**
 * Caps the subscriptions one agent's token holds open at once, over graphql-ws and SSE together:
 * each holds memory and a share of every wake-up's fan-out. Counted from subscribe until its stream
 * ends, however it ends (completed, cancelled by the client, failed).
 */
export function subscriptionCapPlugin(max: number): Plugin {
  const open = new Map<string, number>();
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const agent = (args.contextValue as Partial<Context>).agent;
      if (!agent) return undefined; // refused by scope-auth, holds nothing
      const key = String(agent.id);
      const n = open.get(key) ?? 0;
      if (n >= max) {
        setResultAndStopExecution({
          errors: [
            limitError(
              'subscriptionsPerToken',
              'this token has too many open subscriptions; close one before opening another',
              429,
            ),
          ],
        });
        return undefined;
      }
      open.set(key, n + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const left = (open.get(key) ?? 1) - 1;
        if (left > 0) open.set(key, left);
        else open.delete(key);
      };
      return {
        onSubscribeResult({ result }) {
          if (!isAsyncIterable(result)) {
            release();
            return undefined;
          }
          return { onEnd: release };
        },
        onSubscribeError: release,
      };
    },
  };
}

/**
 * Gives every parse and validation error a code: armor's and graphql-js's syntax errors become
 * GRAPHQL_PARSE_FAILED, validation errors GRAPHQL_VALIDATION_FAILED. An error that has a code keeps it.
 */
export const codedParseAndValidationPlugin: Plugin = {
  onParse() {
    return ({ result, replaceParseResult }) => {
      if (isGraphQLError(result) && !result.extensions?.code)
        replaceParseResult(withCode(result, 'GRAPHQL_PARSE_FAILED'));
    };
  },
  onValidate() {
    return ({ result, setResult }) => {
      if (result.some((e) => !e.extensions?.code))
        setResult(result.map((e) => (e.extensions?.code ? e : withCode(e, 'GRAPHQL_VALIDATION_FAILED'))));
    };
  },
};

function withCode(e: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(e.message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    originalError: e.originalError,
    extensions: { ...e.extensions, code, http: { status: 400, spec: true } },
  });
}
