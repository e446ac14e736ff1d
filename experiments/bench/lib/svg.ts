/**
 * A minimal, dependency-free SVG line chart: a few series of (x, y) points on linear or log10 axes,
 * with grid lines, tick labels, a legend and a title. Enough to see how a cost grows with a size.
 */
interface Series {
  name: string;
  points: Array<[number, number]>;
  /** Dashed line (e.g. a limit or a baseline). */
  dashed?: boolean;
}

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  xLog?: boolean;
  yLog?: boolean;
  /** Formats a tick value (default: compact number). */
  xTick?: (v: number) => string;
  yTick?: (v: number) => string;
  width?: number;
  height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  if (a >= 1 || a === 0) return `${+v.toPrecision(3)}`;
  return `${+v.toPrecision(2)}`;
}

function ticks(lo: number, hi: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
      }
    }
    return out;
  }
  const span = hi - lo || 1;
  const step = 10 ** Math.floor(Math.log10(span / 5));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 8) ?? step * 10;
  const out: number[] = [];
  for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-9; v += nice) out.push(+v.toPrecision(12));
  return out;
}

/** Renders the chart as a standalone SVG document. Non-positive values are dropped on a log axis. */
export function lineChart(spec: ChartSpec): string {
  const W = spec.width ?? 720;
  const H = spec.height ?? 440;
  const m = { l: 72, r: 190, t: 40, b: 56 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const keep = (x: number, y: number) =>
    Number.isFinite(x) && Number.isFinite(y) && (!spec.xLog || x > 0) && (!spec.yLog || y > 0);
  const series = spec.series
    .map((s) => ({ ...s, points: s.points.filter(([x, y]) => keep(x, y)) }))
    .filter((s) => s.points.length > 0);
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (!xs.length) [x0, x1, y0, y1] = [1, 10, 1, 10];
  if (spec.xLog) [x0, x1] = [10 ** Math.floor(Math.log10(x0)), 10 ** Math.ceil(Math.log10(x1))];
  if (spec.yLog) [y0, y1] = [10 ** Math.floor(Math.log10(y0)), 10 ** Math.ceil(Math.log10(y1))];
  else [y0, y1] = [Math.min(0, y0), y1 * 1.1 || 1];
  if (x0 === x1) [x0, x1] = spec.xLog ? [x0 / 10, x1 * 10] : [x0 - 1, x1 + 1];
  const f = (v: number, lo: number, hi: number, log?: boolean) =>
    log ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo);
  const X = (v: number) => m.l + f(v, x0, x1, spec.xLog) * pw;
  const Y = (v: number) => m.t + ph - f(v, y0, y1, spec.yLog) * ph;
  const xt = spec.xTick ?? compact;
  const yt = spec.yTick ?? compact;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${m.l}" y="22" font-size="15" font-weight="600">${esc(spec.title)}</text>`);
  for (const v of ticks(x0, x1, !!spec.xLog)) {
    out.push(`<line x1="${X(v).toFixed(1)}" y1="${m.t}" x2="${X(v).toFixed(1)}" y2="${m.t + ph}" stroke="#eee"/>`);
    out.push(`<text x="${X(v).toFixed(1)}" y="${m.t + ph + 16}" text-anchor="middle" fill="#444">${esc(xt(v))}</text>`);
  }
  for (const v of ticks(y0, y1, !!spec.yLog)) {
    out.push(`<line x1="${m.l}" y1="${Y(v).toFixed(1)}" x2="${m.l + pw}" y2="${Y(v).toFixed(1)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${(Y(v) + 4).toFixed(1)}" text-anchor="end" fill="#444">${esc(yt(v))}</text>`);
  }
  out.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  out.push(
    `<text x="${m.l + pw / 2}" y="${H - 14}" text-anchor="middle">${esc(spec.xLabel)}${spec.xLog ? ' (log)' : ''}</text>`,
  );
  out.push(
    `<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}${spec.yLog ? ' (log)' : ''}</text>`,
  );
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length]!;
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    const d = pts.map(([x, y], k) => `${k ? 'L' : 'M'}${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    for (const [x, y] of pts)
      out.push(
        `<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3.5" fill="${c}"><title>${esc(`${s.name}: ${xt(x)} → ${yt(y)}`)}</title></circle>`,
      );
    const ly = m.t + 10 + i * 20;
    out.push(
      `<line x1="${m.l + pw + 14}" y1="${ly}" x2="${m.l + pw + 40}" y2="${ly}" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    out.push(`<text x="${m.l + pw + 46}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
