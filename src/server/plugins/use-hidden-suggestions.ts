import type { Plugin } from 'graphql-yoga';
import { toClientError } from '../client-error';

/**
 * Validation errors without suggestions (production): armor's field-suggestion blocking misses the
 * others ("Did you mean the enum value …?"). Over graphql-ws too: its operations are validated through the same envelop.
 */
export const useHiddenSuggestions: Plugin = {
  onValidate() {
    return ({ result, setResult }) => {
      if (result.some((e) => e.message.includes('Did you mean '))) setResult(result.map((e) => toClientError(e, true)));
    };
  },
};
