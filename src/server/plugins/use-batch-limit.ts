import type { Plugin } from 'graphql-yoga';
import { limitError } from '../../errors/limit-error';

/**
 * Refuses a batched request of more than `max` operations (LIMIT_EXCEEDED, 413) once it is parsed, before
 * Yoga's own batching check, whose message would state the limit.
 */
export function useBatchLimit(max: number): Plugin {
  return {
    onRequestParse() {
      return {
        onRequestParseDone({ requestParserResult }) {
          if (Array.isArray(requestParserResult) && requestParserResult.length > max) {
            throw limitError(
              'batch',
              'too many operations in one batched request; send them in several requests',
              413,
              false,
            );
          }
        },
      };
    },
  };
}
