import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_core';

/** Every migration, in order. A static list: the same on both engines, no file-system scanning. */
export const migrations: Record<string, Migration> = {
  '0001_core': m0001,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
