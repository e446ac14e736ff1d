/** Server configuration, from the environment. */
export interface ServerConfig {
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  bootstrapToken: string | null;
  logLevel: string;
  production: boolean;
  maxBodyBytes: number;
  providerSecret: string | null;
  dashboardDir: string;
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const port = Number(env.PORT ?? 4000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number (got ${env.PORT})`);
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    databaseUrl: env.DATABASE_URL || null,
    dataDir: env.RETRACT_DATA_DIR ?? './.retract',
    bootstrapToken: env.RETRACT_BOOTSTRAP_TOKEN || null,
    logLevel: env.LOG_LEVEL ?? env.RETRACT_LOG_LEVEL ?? 'info',
    production: env.NODE_ENV === 'production',
    maxBodyBytes: Number(env.RETRACT_MAX_BODY_BYTES ?? 1_048_576),
    providerSecret: env.RETRACT_PROVIDER_SECRET || null,
    dashboardDir: env.RETRACT_DASHBOARD_DIR ?? 'dashboard/dist',
  };
}
