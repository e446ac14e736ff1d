import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context } from '../../api/builder';
import { limitError } from '../../errors/limit-error';

/**
 * Caps the subscriptions one agent's token holds open at once, over graphql-ws and SSE together:
 * each holds memory and a share of every wake-up's fan-out. Counted from subscribe until its stream
 * ends, however it ends (completed, cancelled by the client, failed).
 */
export function useSubscriptionCap(max: number): Plugin {
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
