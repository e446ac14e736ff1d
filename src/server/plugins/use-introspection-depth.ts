import type { Plugin } from 'graphql-yoga';
import { introspectionDepthRule } from '../introspection';

/** The depth limit as it applies under `__schema` (src/server/introspection.ts), a validation rule on every operation. */
export function useIntrospectionDepth(maxDepth: number): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(introspectionDepthRule(maxDepth));
    },
  };
}
