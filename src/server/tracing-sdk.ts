import type http from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { type GraphQLFieldResolver, type GraphQLSchema, getOperationAST } from 'graphql';
import type { LogEvent } from 'kysely';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';

/**
 * The OpenTelemetry SDK behind src/server/plugins/use-tracing.ts, imported only when tracing is on. Spans are
 * made by hand at the three layers this server owns, rather than by monkey-patching instrumentations:
 * the build bundles its dependencies and runs as ESM, where require-hook instrumentations (http, pg,
 * graphql) do not reach, and the embedded engine (PGlite) is no `pg` socket for them to see. Kysely's
 * log hook sees every statement of every engine alike.
 */

const TRACER = 'retract';
const WRAPPED = Symbol('retract.traced');

/** Span names stay few: the routes this server has, else the method alone. */
const ROUTES = ['/graphql', '/mcp', '/health', '/providers/callback', '/dashboard'];
function route(url: string | undefined): string | null {
  const p = (url ?? '/').split('?')[0]!;
  return ROUTES.find((r) => p === r || (r === '/dashboard' && p.startsWith('/dashboard/'))) ?? null;
}

function failed(span: Span, e: unknown): void {
  span.recordException(e instanceof Error ? e : String(e));
  span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error)?.message ?? String(e) });
}

/** Wraps each root field's resolver (once per schema) in a span, active while it runs. */
function traceRootFields(schema: GraphQLSchema): void {
  for (const type of [schema.getQueryType(), schema.getMutationType()]) {
    if (!type) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve = field.resolve as (GraphQLFieldResolver<unknown, unknown> & { [WRAPPED]?: true }) | undefined;
      if (!resolve || resolve[WRAPPED]) continue;
      const name = `${type.name}.${field.name}`;
      const wrapped: GraphQLFieldResolver<unknown, unknown> & { [WRAPPED]?: true } = (root, args, ctx, info) =>
        trace
          .getTracer(TRACER)
          .startActiveSpan(
            name,
            { attributes: { 'graphql.field.name': field.name, 'graphql.field.path': String(info.path.key) } },
            async (span) => {
              try {
                return await resolve(root, args, ctx, info);
              } catch (e) {
                failed(span, e);
                throw e;
              } finally {
                span.end();
              }
            },
          );
      wrapped[WRAPPED] = true;
      field.resolve = wrapped;
    }
  }
}

/** `SELECT`, `INSERT events`: the statement's verb and, where it names one plainly, its table. */
function statementName(text: string): string {
  const verb = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
  const table = /\b(?:from|into|update)\s+"?(\w+)"?/i.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

/** What the server asks of tracing (src/server/plugins/use-tracing.ts starts it). */
export interface Tracing {
  /** Wraps the HTTP handler: a SERVER span per request (parent from an incoming `traceparent`), active while it runs. */
  http(handler: http.RequestListener): http.RequestListener;
  /** The Envelop plugin: a span per GraphQL operation, and one per root-field resolver inside it. */
  readonly plugin: Plugin;
  /** Kysely's log hook (OpenOptions.onQuery): a span per SQL statement, under the span that ran it. */
  readonly onQuery: (event: LogEvent) => void;
  /** The logger with `trace_id` and `span_id` on every line written inside a span. */
  logger(log: Logger): Logger;
  /** Exports what is buffered and unregisters the SDK. */
  shutdown(): Promise<void>;
}

export function createTracing(env: NodeJS.ProcessEnv): Tracing {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers, timeout); OTLP/HTTP with JSON bodies.
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'retract' }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        ...(Number(env.OTEL_BSP_SCHEDULE_DELAY) > 0
          ? { scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY) }
          : {}),
      }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  const tracer = trace.getTracer(TRACER);

  const plugin: Plugin = {
    onSchemaChange({ schema }) {
      traceRootFields(schema);
    },
    onExecute({ args, executeFn, setExecuteFn }) {
      const op = getOperationAST(args.document, args.operationName);
      const kind = op?.operation ?? 'query';
      const name = op?.name?.value;
      setExecuteFn((a) =>
        tracer.startActiveSpan(
          name ? `${kind} ${name}` : kind,
          { attributes: { 'graphql.operation.type': kind, ...(name ? { 'graphql.operation.name': name } : {}) } },
          async (span) => {
            try {
              const result = await executeFn(a);
              const errors = (result as { errors?: readonly { message: string }[] }).errors;
              if (errors?.length) span.setStatus({ code: SpanStatusCode.ERROR, message: errors[0]!.message });
              return result;
            } catch (e) {
              failed(span, e);
              throw e;
            } finally {
              span.end();
            }
          },
        ),
      );
    },
  };

  return {
    http(handler) {
      return (req: http.IncomingMessage, res: http.ServerResponse) => {
        const parent = propagation.extract(ROOT_CONTEXT, req.headers);
        const r = route(req.url);
        const span = tracer.startSpan(
          r ? `${req.method} ${r}` : String(req.method),
          {
            kind: SpanKind.SERVER,
            attributes: {
              'http.request.method': String(req.method),
              'url.path': (req.url ?? '/').split('?')[0]!,
              ...(r ? { 'http.route': r } : {}),
            },
          },
          parent,
        );
        res.once('close', () => {
          span.setAttribute('http.response.status_code', res.statusCode);
          if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
        context.with(trace.setSpan(parent, span), () => handler(req, res));
      };
    },
    plugin,
    onQuery(event: LogEvent) {
      const text = event.query.sql;
      // Kysely tells after the statement: the span is dated back by its duration, under the span that awaited it.
      const span = tracer.startSpan(statementName(text), {
        kind: SpanKind.CLIENT,
        startTime: Date.now() - event.queryDurationMillis,
        attributes: { 'db.system.name': 'postgresql', 'db.query.text': text },
      });
      if (event.level === 'error') failed(span, event.error);
      span.end();
    },
    logger(log) {
      return log.child(
        {},
        {
          formatters: {
            log(o) {
              const s = trace.getActiveSpan()?.spanContext();
              return s ? { ...o, trace_id: s.traceId, span_id: s.spanId } : o;
            },
          },
        },
      );
    },
    async shutdown() {
      await provider.shutdown().catch(() => {});
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
