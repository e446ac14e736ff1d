import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder';
import './types/agent';
import './types/money';
import './types/belief';
import './types/effect';
import './types/reversal';
import './types/retraction';
import './types/reinstatement';
import './types/contradiction';
import './types/search';
import './types/events';
import './types/assert-belief';
import './types/as-of';

// Each type file declares its types, then the root fields beside them: `builder.queryField(name, …)` (or
// mutationField) when it has one, `builder.queryFields` when several. A node's fields run in one order: what it
// is, who made it and when, where it stands now.

/** The executable schema, built once. */
export const schema = builder.toSchema({ sortSchema: false });

/** The SDL checked in at schema/schema.graphql; a test fails when it drifts from this. */
export function printedSchema(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
