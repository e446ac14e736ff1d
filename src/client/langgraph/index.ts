// RETRACT as LangGraph's long-term memory: `new RetractStore({ url, token })` wherever a graph takes a store.
export { RetractStore, type RetractStoreOptions } from './retract-store.js';
export { DERIVED_FROM, RetractStoreError, type DerivedFromRef } from './item-values.js';
export { CLAIM_KEY_MAX, itemClaimKey, namespacePrefixKey, parseItemClaimKey } from './claim-keys.js';
