import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

/** Long suites (props at full count, stress, crash, hostile, dispatch crash): run by their own npm scripts. */
export default defineConfig({
  // One graphql for src and the dependencies (see vitest.config.ts).
  resolve: { alias: [{ find: /^graphql$/, replacement: createRequire(import.meta.url).resolve('graphql') }] },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 1_800_000,
    hookTimeout: 600_000,
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
  },
});
