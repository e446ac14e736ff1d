import { assertBelief } from '../../belief/belief.service';
import type { Core } from '../../core';
import { retractBelief } from '../../retraction/retraction.service';
import { withRole } from '../../store/tx';
import type { GraphPort } from '../memory-graph/operations';
import { registerMemoryGraphTools } from '../memory-graph/tools';
import { readerTx } from '../reader';
import type { Toolkit } from '../toolkit';

/**
 * The drop-in for @modelcontextprotocol/server-memory (src/mcp/memory-graph/), wired to RETRACT: its
 * writes are the services GraphQL's assertBelief and retractBelief call, run as retract_mcp; its reads
 * go through the reader path. This is the memory graph's only way to a write.
 */
export function registerMemoryGraph(kit: Toolkit): void {
  const { deps, fleet } = kit;
  const core: Core = { store: withRole(deps.store, 'retract_mcp'), embedder: deps.embedder };
  const port: GraphPort = {
    fleet,
    read: (fn) => readerTx(deps.store, fleet, fn),
    async assert(input) {
      const r = await assertBelief(core, kit.actor, input);
      if (r.kind === 'asserted' || r.kind === 'corroborated') return { kind: r.kind, beliefId: r.belief.id };
      if (r.kind === 'contradiction') return r;
      if (r.kind === 'premiseRetracted') return { kind: r.kind, premiseId: r.premise.id };
      return { kind: 'claimChanged' };
    },
    retract: (beliefId, reason) => retractBelief(core, kit.actor, { beliefId, reason }),
  };
  registerMemoryGraphTools(kit, port);
}
