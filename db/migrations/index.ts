import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_core';
import * as m0002 from './0002_dispatch';
import * as m0003 from './0003_embedding_active_only';
import * as m0004 from './0004_prefix_search';
import * as m0005 from './0005_nearest';
import * as m0006 from './0006_provider_ref';
import * as m0007 from './0007_fleet_keys';
import * as m0008 from './0008_reinstatement';
import * as m0009 from './0009_belief_history';
import * as m0010 from './0010_citus';
import * as m0011 from './0011_belief_ids';
import * as m0012 from './0012_mcp_writer';
import * as m0013 from './0013_metrics';

/** Every migration, in order. A static list: the same on both engines, no file-system scanning. */
export const migrations: Record<string, Migration> = {
  '0001_core': m0001,
  '0002_dispatch': m0002,
  '0003_embedding_active_only': m0003,
  '0004_prefix_search': m0004,
  '0005_nearest': m0005,
  '0006_provider_ref': m0006,
  '0007_fleet_keys': m0007,
  '0008_reinstatement': m0008,
  '0009_belief_history': m0009,
  '0010_citus': m0010,
  '0011_belief_ids': m0011,
  '0012_mcp_writer': m0012,
  '0013_metrics': m0013,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
