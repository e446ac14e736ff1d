import { onOff } from '../../kernel/choice';
import { ConfigError } from '../../kernel/config-error';

/** What GET /metrics serves and to whom (docs/metrics.md lists each setting). */
export interface MetricsSettings {
  /** RETRACT_METRICS: on (the default) or off (no /metrics, nothing measured). */
  enabled: boolean;
  /** RETRACT_METRICS_TOKEN: when set, a scrape must send `Authorization: Bearer <token>` (401 otherwise). */
  token: string | null;
  /** RETRACT_METRICS_FLEET_LABEL: on adds a `fleet` label to the open-money and backlog gauges; off (default) sums fleets. */
  fleetLabel: boolean;
  /** RETRACT_METRICS_MAX_OPERATIONS: distinct GraphQL operation names labelled before the rest count as `other`. */
  maxOperations: number;
}

export function metricsSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): MetricsSettings {
  const raw = env.RETRACT_METRICS_MAX_OPERATIONS;
  const maxOperations = raw === undefined || raw === '' ? 100 : Number(raw);
  if (!Number.isInteger(maxOperations) || maxOperations < 1 || maxOperations > 10_000) {
    throw new ConfigError(`RETRACT_METRICS_MAX_OPERATIONS must be an integer from 1 to 10000 (got ${raw})`);
  }
  const token = env.RETRACT_METRICS_TOKEN || null;
  if (token !== null && token.length < 16)
    throw new ConfigError('RETRACT_METRICS_TOKEN must be at least 16 characters');
  return {
    enabled: onOff(env, 'RETRACT_METRICS', true),
    token,
    fleetLabel: onOff(env, 'RETRACT_METRICS_FLEET_LABEL', false),
    maxOperations,
  };
}
