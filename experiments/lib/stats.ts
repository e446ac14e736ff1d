/**
 * Small, dependency-free statistics for experiment reports: Wilson score intervals for a
 * proportion, the two-proportion z-test, and Fisher's exact test on a 2×2 table.
 */

export interface Interval {
  /** k / n (0 when n is 0). */
  rate: number;
  low: number;
  high: number;
}

/** Wilson score interval for k successes in n trials at the given z (1.96: 95%). Bounds stay within [0, 1]. */
export function wilson(k: number, n: number, z = 1.959963984540054): Interval {
  if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || n < 0 || k > n)
    throw new Error(`wilson: need integers 0 ≤ k ≤ n (got k=${k}, n=${n})`);
  if (n === 0) return { rate: 0, low: 0, high: 1 };
  const p = k / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { rate: p, low: k === 0 ? 0 : Math.max(0, centre - half), high: k === n ? 1 : Math.min(1, centre + half) };
}

/** Complementary error function, fractional error below 1.2e-7 everywhere (Chebyshev fit), so tails keep their precision. */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** Two-sided p-value of a standard normal statistic. */
export function normalTwoSided(z: number): number {
  return Math.min(1, erfc(Math.abs(z) / Math.SQRT2));
}

/**
 * Two-proportion z-test with the pooled standard error: k1/n1 against k2/n2. When both rates are
 * 0 or both are 1 the statistic is undefined: z is 0 and p is 1 (no evidence of a difference).
 */
export function twoProportionZ(k1: number, n1: number, k2: number, n2: number): { z: number; p: number } {
  if (n1 <= 0 || n2 <= 0) throw new Error('twoProportionZ: both samples must be non-empty');
  const pooled = (k1 + k2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (se === 0) return { z: 0, p: 1 };
  const z = (k1 / n1 - k2 / n2) / se;
  return { z, p: normalTwoSided(z) };
}

const logFactorials: number[] = [0];
function logFactorial(n: number): number {
  for (let i = logFactorials.length; i <= n; i++) logFactorials[i] = logFactorials[i - 1]! + Math.log(i);
  return logFactorials[n]!;
}

/**
 * Fisher's exact test, two-sided, on the table [[a, b], [c, d]] (rows: arms; columns: anomaly yes/no):
 * the probability, under fixed margins, of a table at most as likely as the one observed.
 */
export function fisherExact(a: number, b: number, c: number, d: number): number {
  for (const x of [a, b, c, d])
    if (!Number.isInteger(x) || x < 0) throw new Error('fisherExact: cells must be non-negative integers');
  const r1 = a + b;
  const r2 = c + d;
  const c1 = a + c;
  const n = r1 + r2;
  const logP = (x: number) =>
    logFactorial(r1) +
    logFactorial(r2) +
    logFactorial(c1) +
    logFactorial(n - c1) -
    (logFactorial(n) + logFactorial(x) + logFactorial(r1 - x) + logFactorial(c1 - x) + logFactorial(r2 - c1 + x));
  const observed = logP(a);
  const lo = Math.max(0, c1 - r2);
  const hi = Math.min(r1, c1);
  let p = 0;
  for (let x = lo; x <= hi; x++) {
    const lx = logP(x);
    // Tables as likely as the observed one count, within floating-point noise.
    if (lx <= observed + 1e-7) p += Math.exp(lx);
  }
  return Math.min(1, p);
}

/** Percentile (nearest-rank) of a list of numbers; NaN for an empty list. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
