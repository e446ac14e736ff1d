import { decodeGlobalID, encodeGlobalID } from '@pothos/plugin-relay';
import { DomainError, badInput } from '../errors/domain-error';
import { inRange } from './cursor';

export const NODE_TYPES = [
  'Agent',
  'Belief',
  'Effect',
  'Reversal',
  'Retraction',
  'Contradiction',
  'Justification',
  'Reinstatement',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export const gid = (type: NodeType, id: string | number) => encodeGlobalID(type, String(id));

/**
 * The database id behind a global id of the expected type. Malformed ids are BAD_USER_INPUT;
 * a well-formed id of another type names nothing of that type: NOT_FOUND.
 */
export function parseGid(field: string, value: string, type: NodeType): string {
  let decoded: { typename: string; id: string };
  try {
    decoded = decodeGlobalID(String(value));
  } catch {
    throw badInput(field, 'must be a global id returned by this API');
  }
  // The id part must fit the bigint column it is compared with, or the database would refuse the cast.
  if (!decoded?.typename || !inRange('id', decoded.id ?? ''))
    throw badInput(field, 'must be a global id returned by this API');
  if (decoded.typename !== type) throw new DomainError('NOT_FOUND', `${field}: no ${type} with id ${value}`, field);
  return decoded.id;
}

export function parseGids(field: string, values: readonly string[] | null | undefined, type: NodeType): string[] {
  return (values ?? []).map((v, i) => parseGid(`${field}[${i}]`, v, type));
}
