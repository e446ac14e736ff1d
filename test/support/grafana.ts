import fs from 'node:fs';

/** One query of a Grafana dashboard panel (the JSON model's `targets[]`). */
export interface PanelQuery {
  panel: string;
  type: string;
  refId: string;
  expr: string;
  legendFormat?: string;
}

interface PanelJson {
  type: string;
  title: string;
  panels?: PanelJson[];
  targets?: Array<{ refId: string; expr?: string; legendFormat?: string }>;
}

/** Every panel of a dashboard JSON (rows' collapsed panels included) except the rows themselves. */
function dashboardPanels(file: string): PanelJson[] {
  const d = JSON.parse(fs.readFileSync(file, 'utf8')) as { panels: PanelJson[] };
  return d.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]));
}

/** Every PromQL expression of every panel, with its panel's title and type. */
export function dashboardQueries(file: string): PanelQuery[] {
  return dashboardPanels(file).flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: p.title,
      type: p.type,
      refId: t.refId,
      expr: t.expr ?? '',
      legendFormat: t.legendFormat,
    })),
  );
}

/**
 * Grafana's built-in interval variables as Grafana would expand them, and nothing else: an expression naming any
 * other variable is left with its `$`, which Prometheus refuses, so a test sees it.
 */
export function expandGrafanaVariables(expr: string, rateInterval: string): string {
  return expr.replaceAll('$__rate_interval', rateInterval).replaceAll('$__interval', rateInterval);
}

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects, read lexically: a name is an identifier followed by its label
 * matchers (`name{…}`); `bare` lists identifiers that are neither that, a function call, a keyword nor a number
 * (a selector without matchers, which a dashboard should not have: every selector here names its job);
 * `unscoped` lists selectors without `job="retract"`.
 */
export function selectedMetrics(expr: string): { names: string[]; bare: string[]; unscoped: string[] } {
  const names: string[] = [];
  const unscoped: string[] = [];
  const withoutSelectors = expr.replace(/([A-Za-z_:][\w:]*)\s*\{([^}]*)\}/g, (_, name: string, body: string) => {
    names.push(name);
    if (!/\bjob\s*=\s*"retract"/.test(body)) unscoped.push(`${name}{${body}}`);
    return ' ';
  });
  const rest = withoutSelectors
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const bare: string[] = [];
  for (const m of rest.matchAll(/([A-Za-z_:][\w:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1]!.toLowerCase())) continue;
    bare.push(m[1]!);
  }
  return { names: [...new Set(names)], bare, unscoped };
}

/** The metric names an exposition in Prometheus' text format offers: each family, a histogram's series names too. */
export function exportedMetricNames(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    out.add(name!);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}
