// The derivation graph as data: beliefs, effects and reversals with the edges between them, merged in from
// belief neighbourhoods as the page fetches them. Drawing it is graph-view.ts's business.
import type {
  BeliefDetail,
  BeliefRef,
  BeliefStatus,
  EffectRef,
  EffectStatus,
  Money,
  ReversalRef,
  ReversalStatus,
} from './types';

export type NodeKind = 'belief' | 'effect' | 'reversal';
/** What a preview says will happen to a node. */
export type PreviewMark = 'retract' | 'survivor' | 'cancel' | 'reach';

interface NodeBase {
  id: string;
  /** Signed distance from the graph's root along derivations: premises < 0 < dependents. */
  depth: number;
}
/** How a belief relates to the root: on its premise chain, on its dependent chain, or another premise of a dependent. */
type BeliefRole = 'root' | 'premise' | 'dependent' | 'context';
interface BeliefNode extends NodeBase {
  kind: 'belief';
  role: BeliefRole;
  status: BeliefStatus;
  claimKey: string;
  statement: string;
  /** Its own neighbourhood was fetched (premises, dependents and effects known). */
  expanded: boolean;
  hiddenDependents: number;
}
interface EffectNode extends NodeBase {
  kind: 'effect';
  status: EffectStatus;
  effectKind: string;
  amount: Money | null;
  idempotencyKey?: string;
}
interface ReversalNode extends NodeBase {
  kind: 'reversal';
  status: ReversalStatus;
  amount: Money | null;
  effectId: string;
  idempotencyKey?: string;
}
export type GraphNode = BeliefNode | EffectNode | ReversalNode;

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  type: 'premise' | 'supports' | 'compensates';
  justificationId?: string;
}

export class GraphModel {
  readonly nodes = new Map<string, GraphNode>();
  protected readonly edges = new Map<string, GraphEdge>();
  private readonly justifications = new Map<string, { beliefId: string; premiseIds: string[] }>();
  rootId: string | null = null;

  reset(rootId: string): void {
    this.clearModel();
    this.rootId = rootId;
  }

  protected clearModel(): void {
    this.nodes.clear();
    this.edges.clear();
    this.justifications.clear();
    this.rootId = null;
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  getBelief(id: string): BeliefNode | undefined {
    const n = this.nodes.get(id);
    return n?.kind === 'belief' ? n : undefined;
  }

  /** Adds a belief known only by reference (a premise or dependent whose own neighbourhood is not loaded). */
  private stub(ref: BeliefRef, depth: number, role: BeliefRole): BeliefNode {
    const existing = this.nodes.get(ref.id);
    if (existing?.kind === 'belief') {
      existing.status = ref.status;
      existing.claimKey = ref.claimKey;
      existing.statement = ref.statement;
      // A belief first seen as context may turn out to be on the root's own chains.
      if (existing.role === 'context' && role !== 'context') {
        existing.role = role;
        existing.depth = depth;
      }
      return existing;
    }
    const node: BeliefNode = {
      kind: 'belief',
      role: ref.id === this.rootId ? 'root' : role,
      id: ref.id,
      status: ref.status,
      claimKey: ref.claimKey,
      statement: ref.statement,
      depth,
      expanded: false,
      hiddenDependents: 0,
    };
    this.nodes.set(ref.id, node);
    return node;
  }

  private edge(e: GraphEdge): void {
    this.edges.set(e.id, e);
  }

  /**
   * Merges one belief's neighbourhood (from BeliefNeighborhood) at the given depth and returns its dependents and
   * premises. In 'up' mode (walking towards premises) dependents not already drawn are left out, so a widely
   * used premise does not drag every sibling into the picture.
   */
  ingest(
    detail: BeliefDetail,
    depth: number,
    mode: 'full' | 'up' = 'full',
  ): { dependents: BeliefRef[]; premises: BeliefRef[] } {
    const node = this.stub(detail, depth, mode === 'up' ? 'premise' : 'dependent');
    node.expanded = true;
    // Premises of the root and of premises are its premise chain; other premises of dependents are context.
    const premiseRole: BeliefRole = node.role === 'root' || node.role === 'premise' ? 'premise' : 'context';
    const premises: BeliefRef[] = [];
    for (const j of detail.justifications) {
      this.justifications.set(j.id, { beliefId: detail.id, premiseIds: j.premises.map((p) => p.id) });
      for (const p of j.premises) {
        premises.push(p);
        this.stub(p, depth - 1, premiseRole);
        this.edge({ id: `j:${j.id}:${p.id}`, source: p.id, target: detail.id, type: 'premise', justificationId: j.id });
      }
    }
    const all = detail.dependents.edges.map((e) => e.node);
    const dependents = mode === 'up' ? all.filter((d) => this.nodes.has(d.id)) : all;
    node.hiddenDependents = Math.max(0, detail.dependents.totalCount - dependents.length);
    for (const d of dependents) {
      this.stub(d, depth + 1, 'dependent');
      // The dependent's own justifications name the exact justification; until it is expanded, a plain edge.
      const hasJustifiedEdge = [...this.edges.values()].some(
        (e) => e.type === 'premise' && e.source === detail.id && e.target === d.id && e.justificationId,
      );
      if (!hasJustifiedEdge)
        this.edge({ id: `d:${detail.id}:${d.id}`, source: detail.id, target: d.id, type: 'premise' });
    }
    for (const eff of detail.effects ?? []) this.upsertEffect(eff, detail.id, depth);
    // Once a belief is expanded its justification edges are authoritative: drop the plain placeholder edges.
    for (const j of detail.justifications) {
      for (const p of j.premises) this.edges.delete(`d:${p.id}:${detail.id}`);
    }
    return { dependents, premises };
  }

  private upsertEffect(eff: EffectRef, supportingBeliefId: string | null, depth: number): EffectNode {
    const node = this.nodeOf<EffectNode>(eff.id, 'effect', () => ({
      kind: 'effect',
      id: eff.id,
      status: eff.status,
      effectKind: eff.kind,
      amount: eff.amount,
      depth: depth + 0.5,
    }));
    node.status = eff.status;
    node.effectKind = eff.kind;
    node.amount = eff.amount ?? node.amount;
    if (eff.idempotencyKey) node.idempotencyKey = eff.idempotencyKey;
    if (supportingBeliefId) {
      this.edge({
        id: `s:${supportingBeliefId}:${eff.id}`,
        source: supportingBeliefId,
        target: eff.id,
        type: 'supports',
      });
    }
    if (eff.reversal) this.upsertReversal(eff.reversal, eff.id);
    return node;
  }

  protected upsertReversal(rev: ReversalRef, effectId: string): ReversalNode | undefined {
    const effect = this.nodes.get(effectId);
    if (!effect) return undefined;
    const node = this.nodeOf<ReversalNode>(rev.id, 'reversal', () => ({
      kind: 'reversal',
      id: rev.id,
      status: rev.status,
      amount: rev.amount,
      effectId,
      depth: effect.depth + 0.25,
    }));
    node.status = rev.status;
    node.amount = rev.amount ?? node.amount;
    node.idempotencyKey = rev.idempotencyKey;
    this.edge({ id: `r:${effectId}:${rev.id}`, source: effectId, target: rev.id, type: 'compensates' });
    return node;
  }

  /** The node `id` if it is already of `kind` (to be updated in place), else the one `fresh` makes, put in its place. */
  private nodeOf<N extends GraphNode>(id: string, kind: N['kind'], fresh: () => N): N {
    const known = this.nodes.get(id);
    if (known?.kind === kind) return known as N;
    const node = fresh();
    this.nodes.set(id, node);
    return node;
  }

  private justificationHolds(jid: string | undefined): boolean {
    if (!jid) return true;
    const j = this.justifications.get(jid);
    if (!j) return true;
    return j.premiseIds.every((p) => this.getBelief(p)?.status !== 'RETRACTED');
  }

  /** A premise edge stops holding once its justification has a retracted premise (drawn dashed grey). */
  protected edgeHolds(e: GraphEdge): boolean {
    if (e.type !== 'premise') return true;
    if (e.justificationId) return this.justificationHolds(e.justificationId);
    return this.getBelief(e.source)?.status !== 'RETRACTED';
  }
}
