import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { Plugin } from 'graphql-yoga';
import { type LimitName, limitError } from '../../errors/limit-error';
import type { Limits } from '../config';

/**
 * graphql-armor's depth, alias, token and directive limits. Armor's own refusals have no
 * `extensions.code` and begin "Syntax Error:", so each rejection throws ours instead, before armor
 * would throw its own (armor calls onReject first). Cost is counted by src/server/cost.ts; depth under
 * `__schema` by src/server/introspection.ts.
 */
export function useArmor(limits: Limits, production: boolean): Plugin {
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
