import { type GraphQLError, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Counter, Histogram, type Registry } from 'prom-client';

/** Outcomes an operation is counted under: `ok`, the refusal codes clients see, else `error`. A bounded set. */
const CODES = new Set([
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'LIMIT_EXCEEDED',
  'INTERNAL_SERVER_ERROR',
]);
const NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

/**
 * The operation-name label, bounded: a client names its operations, so the first `max` distinct names are kept and
 * any later one counts as `other`; an unnamed operation is `anonymous`, a name longer than 64 characters `other`.
 */
export class OperationNames {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}
  label(name: string | null | undefined): string {
    if (!name) return 'anonymous';
    if (!NAME.test(name)) return 'other';
    if (this.seen.has(name)) return name;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(name);
    return name;
  }
}

function outcome(result: unknown): string {
  const errors = (result as { errors?: readonly GraphQLError[] } | null)?.errors;
  if (!errors?.length) return 'ok';
  const e = errors[0]!;
  const code = e.extensions?.code ?? (e.originalError as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CODES.has(code) ? code.toLowerCase() : 'error';
}

/**
 * useMetrics: every executed GraphQL operation (HTTP, SSE and WebSocket go through the same envelop), counted and
 * timed by operation name, type and outcome. A subscription is timed to its first answer (set up or refused), not
 * for as long as it stays open. Operations refused before execution (parse, validation, limits) are not counted here.
 */
export function useMetrics(registry: Registry, maxOperations: number): Plugin {
  const names = new OperationNames(maxOperations);
  const labelNames = ['operation', 'type', 'outcome'] as const;
  const total = new Counter({
    name: 'retract_graphql_operations_total',
    help: 'GraphQL operations executed, by operation name, type and outcome.',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'retract_graphql_operation_duration_seconds',
    help: 'Time to execute a GraphQL operation (a subscription: to its first answer).',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const start = (args: { document: Parameters<typeof getOperationAST>[0]; operationName?: string | null }) => {
    const op = getOperationAST(args.document, args.operationName);
    const labels = { operation: names.label(op?.name?.value ?? args.operationName), type: op?.operation ?? 'unknown' };
    const t0 = performance.now();
    return (result: unknown) => {
      const l = { ...labels, outcome: outcome(result) };
      total.inc(l);
      duration.observe(l, (performance.now() - t0) / 1000);
    };
  };
  return {
    onExecute({ args }) {
      const done = start(args);
      return { onExecuteDone: ({ result }) => done(result) };
    },
    onSubscribe({ args }) {
      const done = start(args);
      return { onSubscribeResult: ({ result }) => done(result) };
    },
  };
}
