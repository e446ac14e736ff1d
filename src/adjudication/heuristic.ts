/**
 * An offline, deterministic rule set for contradictions. It reads keywords, identifiers, units and
 * timestamps; it does not understand text. It is the default because it needs nothing, and it is scored on
 * the same eval set as the model-backed adjudicator so its limits are visible. Known blind spots:
 * keyword stuffing ("verified official" in bogus evidence), evidence that is strong but about another fact,
 * and orderings stated only in prose ("revision C supersedes B").
 */
import type { AdjudicationCase, AdjudicationResult, Adjudicator, BeliefSide } from './adjudicator';

/** Evidence strength tiers, weakest first. */
export type EvidenceTier = 'none' | 'weak' | 'unclassified' | 'strong';
const TIER_RANK: Record<EvidenceTier, number> = { none: 0, weak: 1, unclassified: 2, strong: 3 };

/**
 * Markers of weak evidence: hearsay, rumour, self-declared uncertainty, informal channels. Checked first
 * and dominant, so "unverified document" or "not verified" is weak even though it names a document.
 */
const WEAK_MARKERS: readonly RegExp[] = [
  /\brumou?rs?\b/,
  /\bunverified\b/,
  /\bunconfirmed\b/,
  /\bnot (?:been )?(?:verified|confirmed|checked)\b/,
  /\bhearsay\b/,
  /\ballegedly\b/,
  /\bapparently\b/,
  /\bheard\b/,
  /\b(?:said|says|mentioned|told|claims?)\b/,
  /\bguess(?:ed)?\b/,
  /\bestimated?\b/,
  /\bassum(?:e|ed|ption)\b/,
  /\b(?:blog|forum|gossip|social media|chat group)\b/,
  /\banonymous\b/,
];

/** Markers of strong evidence: verification, official records, signed or issued documents. */
const STRONG_MARKERS: readonly RegExp[] = [
  /\bverif(?:ied|ication)\b/,
  /\bconfirmed\b/,
  /\bofficial\b/,
  /\bregist(?:ry|er)\b/,
  /\bdocument(?:ed|s)?\b/,
  /\bcertificate\b/,
  /\bsigned\b|\bsignatures?\b/,
  /\bcontract\b/,
  /\binvoice\b|\breceipt\b|\bcredit note\b/,
  /\b(?:bank )?statement\b|\bledger\b/,
  /\bfil(?:ed|ing)\b.*\bregulator\b|\bregulatory filing\b/,
  /\baudit(?:ed)?\b/,
  /\bnotari[sz]ed\b/,
  /\bgazette\b/,
];

/** Classifies one side's evidence (plus its `source`) into a tier; `matched` says which marker decided. */
export function classifyEvidence(side: Pick<BeliefSide, 'evidence' | 'source'>): {
  tier: EvidenceTier;
  matched?: string;
} {
  if (side.evidence === null || side.evidence.trim() === '') return { tier: 'none' };
  const text = `${side.evidence} ${side.source ?? ''}`.normalize('NFKC').toLowerCase();
  for (const re of WEAK_MARKERS) {
    const m = re.exec(text);
    if (m) return { tier: 'weak', matched: m[0] };
  }
  for (const re of STRONG_MARKERS) {
    const m = re.exec(text);
    if (m) return { tier: 'strong', matched: m[0] };
  }
  return { tier: 'unclassified' };
}

const UNIT_ALIASES: Record<string, string> = {
  $: 'usd',
  usd: 'usd',
  us$: 'usd',
  dollar: 'usd',
  dollars: 'usd',
  '€': 'eur',
  eur: 'eur',
  euro: 'eur',
  euros: 'eur',
  '£': 'gbp',
  gbp: 'gbp',
  pound: 'gbp',
  pounds: 'gbp',
  '¥': 'jpy',
  jpy: 'jpy',
  yen: 'jpy',
  chf: 'chf',
  cad: 'cad',
  aud: 'aud',
  inr: 'inr',
  '₹': 'inr',
  kg: 'kg',
  kgs: 'kg',
  kilogram: 'kg',
  kilograms: 'kg',
  g: 'g',
  gram: 'g',
  grams: 'g',
  lb: 'lb',
  lbs: 'lb',
  oz: 'oz',
  ounce: 'oz',
  ounces: 'oz',
  km: 'km',
  kilometre: 'km',
  kilometer: 'km',
  kilometres: 'km',
  kilometers: 'km',
  mi: 'mi',
  mile: 'mi',
  miles: 'mi',
  m: 'm',
  metre: 'm',
  meter: 'm',
  metres: 'm',
  meters: 'm',
  ft: 'ft',
  foot: 'ft',
  feet: 'ft',
  m2: 'm2',
  'm²': 'm2',
  sqm: 'm2',
  'sq m': 'm2',
  ft2: 'ft2',
  'ft²': 'ft2',
  sqft: 'ft2',
  'sq ft': 'ft2',
  c: 'degc',
  '°c': 'degc',
  f: 'degf',
  '°f': 'degf',
  l: 'l',
  litre: 'l',
  liter: 'l',
  litres: 'l',
  liters: 'l',
  gal: 'gal',
  gallon: 'gal',
  gallons: 'gal',
};

function canonicalUnit(u: string): string {
  const k = u.normalize('NFKC').trim().toLowerCase().replace(/\.$/, '');
  return UNIT_ALIASES[k] ?? k;
}

/**
 * The unit or currency a value is expressed in, when it says: an object with a `unit`/`currency` field,
 * or a string such as "1200 USD", "$1,200", "12 kg". Undefined when the value carries none.
 */
export function unitOf(value: unknown): string | undefined {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (/^(unit|units|currency|currencycode|currency_code)$/i.test(k) && typeof v === 'string' && v.trim()) {
        return canonicalUnit(v);
      }
    }
    return undefined;
  }
  if (typeof value !== 'string') return undefined;
  const s = value.normalize('NFKC').trim();
  const pre = /^([$€£¥₹]|[A-Za-z]{3})\s*-?\d[\d,.]*$/.exec(s);
  if (pre) return canonicalUnit(pre[1]!);
  const post = /^-?\d[\d,.]*\s*([^\d\s][^\d]*)$/.exec(s);
  if (post) return canonicalUnit(post[1]!);
  return undefined;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * For a claim key shaped `type:id/…` whose id contains a digit, the identifiers of the same type that
 * `statement` names instead ("customer 4412" under `customer:4411/…`). Empty when it names the key's own
 * id, names none, or the key has no such shape.
 */
export function otherEntitiesNamed(claimKey: string, statement: string): string[] {
  const m = /^([a-z][\w-]*):([^/]+)\//i.exec(claimKey);
  if (!m) return [];
  const type = m[1]!.toLowerCase();
  const id = m[2]!.toLowerCase();
  if (!/\d/.test(id)) return [];
  const re = new RegExp(`\\b${escapeRegExp(type)}s?\\b\\W{0,3}(?:(?:no|number|id)\\W{0,2})?([a-z]*\\d[\\w-]*)`, 'gi');
  const named = [...statement.normalize('NFKC').matchAll(re)].map((x) => x[1]!.toLowerCase());
  if (named.length === 0 || named.includes(id)) return [];
  return [...new Set(named)];
}

function parseTime(at: string | undefined): number | undefined {
  if (!at) return undefined;
  const t = Date.parse(at);
  return Number.isFinite(t) ? t : undefined;
}

/** Reliability difference at or above which, with equal evidence tiers, the more reliable source wins. */
const RELIABILITY_MARGIN = 0.3;

/**
 * Rule-based adjudicator (id `heuristic`). Deterministic: the same case always yields the same verdict and
 * rationale. Rules, first match wins:
 *
 * 1. identical values → KEEP_EXISTING (corroboration, nothing to change);
 * 2. the proposal names a different entity than the claim key (`customer 4412` under `customer:4411/…`)
 *    → ESCALATE;
 * 3. the values carry different units or currencies → ESCALATE (not comparable without conversion);
 * 4. evidence tiers differ (none < weak < unclassified < strong; weak markers dominate) → the stronger side;
 * 5. neither side has evidence → ESCALATE;
 * 6. equal tiers, both reliabilities given and ≥ 0.3 apart → the more reliable side;
 * 7. equal tiers, both times given → the newer side;
 * 8. otherwise → ESCALATE.
 *
 * Never throws: an unexpected input error yields ESCALATE.
 */
export class HeuristicAdjudicator implements Adjudicator {
  readonly id = 'heuristic';

  async adjudicate(c: AdjudicationCase, _opts?: { signal?: AbortSignal }): Promise<AdjudicationResult> {
    try {
      return this.decide(c);
    } catch (e) {
      return {
        verdict: 'ESCALATE',
        rationale: `heuristic could not read the case: ${(e as Error)?.message ?? String(e)}`,
      };
    }
  }

  /** The synchronous rule evaluation behind {@link adjudicate}. */
  decide(c: AdjudicationCase): AdjudicationResult {
    const { existing: ex, proposed: pr } = c;

    if (stableJson(ex.value) === stableJson(pr.value)) {
      return {
        verdict: 'KEEP_EXISTING',
        rationale: 'both sides assert the same value: corroboration, not a contradiction',
      };
    }

    const others = otherEntitiesNamed(c.claimKey, pr.statement);
    if (others.length > 0) {
      return {
        verdict: 'ESCALATE',
        rationale: `the proposal names ${others.join(', ')}, not the entity of claim key ${c.claimKey}; it may belong to another claim`,
      };
    }

    const ue = unitOf(ex.value);
    const up = unitOf(pr.value);
    if (ue !== undefined && up !== undefined && ue !== up) {
      return {
        verdict: 'ESCALATE',
        rationale: `values are in different units/currencies (${ue} vs ${up}); not comparable without conversion`,
      };
    }

    const ee = classifyEvidence(ex);
    const ep = classifyEvidence(pr);
    const describe = (e: { tier: EvidenceTier; matched?: string }) =>
      e.matched ? `${e.tier} ("${e.matched}")` : e.tier;
    if (TIER_RANK[ep.tier] > TIER_RANK[ee.tier]) {
      return {
        verdict: 'ACCEPT_PROPOSED',
        rationale: `proposed evidence is stronger: ${describe(ep)} vs existing ${describe(ee)}`,
      };
    }
    if (TIER_RANK[ep.tier] < TIER_RANK[ee.tier]) {
      return {
        verdict: 'KEEP_EXISTING',
        rationale: `existing evidence is stronger: ${describe(ee)} vs proposed ${describe(ep)}`,
      };
    }
    if (ee.tier === 'none') {
      return { verdict: 'ESCALATE', rationale: 'neither side offers any evidence' };
    }

    const re = ex.reliability;
    const rp = pr.reliability;
    if (typeof re === 'number' && typeof rp === 'number' && Math.abs(re - rp) >= RELIABILITY_MARGIN) {
      return rp > re
        ? {
            verdict: 'ACCEPT_PROPOSED',
            rationale: `equal evidence tier (${ep.tier}); proposed source is more reliable (${rp} vs ${re})`,
          }
        : {
            verdict: 'KEEP_EXISTING',
            rationale: `equal evidence tier (${ee.tier}); existing source is more reliable (${re} vs ${rp})`,
          };
    }

    const te = parseTime(ex.at);
    const tp = parseTime(pr.at);
    if (te !== undefined && tp !== undefined && te !== tp) {
      return tp > te
        ? {
            verdict: 'ACCEPT_PROPOSED',
            rationale: `equal evidence tier (${ep.tier}); proposal is newer (${pr.at} > ${ex.at})`,
          }
        : {
            verdict: 'KEEP_EXISTING',
            rationale: `equal evidence tier (${ee.tier}); existing is newer (${ex.at} > ${pr.at})`,
          };
    }

    return {
      verdict: 'ESCALATE',
      rationale: `evidence is equally strong (${ee.tier}) and there is no usable time or reliability ordering`,
    };
  }
}
