import type { Tracing } from '../tracing-sdk';

/**
 * OpenTelemetry traces (docs/tracing.md), on when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and then only: this module names types alone, and the SDK
 * (src/server/tracing-sdk.ts, its own chunk of the build) is imported only when a variable is set, so a
 * server without one loads no OpenTelemetry module and pays nothing per request (createApp checks once, at start).
 */

/** Whether the environment asks for traces. */
function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return (
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) &&
    env.OTEL_SDK_DISABLED !== 'true'
  );
}

/** The tracing the environment asks for, or null (nothing imported). */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingWanted(env)) return null;
  const { createTracing } = await import('../tracing-sdk');
  return createTracing(env);
}
