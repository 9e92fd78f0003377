// The volatility smile an exchange runs, read back from its marks: API.md 7.2 gives
// iv(k) = atm_vol + skew*k + curvature*k^2 with k = ln(K/F), so three marks of one expiry near the
// money (above the 5% floor) determine it. The admin console pre-fills its form with this instead
// of constants. Pure (unit-tested in test/web/smileFit.test.ts).

export interface Smile {
  atm_vol: number;
  skew: number;
  curvature: number;
}

/** Solves the smile from three (strike, mark IV in percent) points and the index; null if degenerate. */
export function fitSmile(F: number, points: { strike: number; iv: number }[]): Smile | null {
  if (points.length < 3 || !(F > 0)) return null;
  const rows = points.slice(0, 3).map((p) => {
    const k = Math.log(p.strike / F);
    return [1, k, k * k, p.iv / 100];
  });
  const det = (m: number[][]) => m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  const a = rows.map((r) => r.slice(0, 3));
  const d = det(a);
  if (Math.abs(d) < 1e-12) return null;
  const col = (j: number) => det(a.map((r, i) => r.map((x, c) => (c === j ? rows[i][3] : x))));
  const round = (x: number) => Math.round(x * 1e4) / 1e4;
  return { atm_vol: round(col(0) / d), skew: round(col(1) / d), curvature: round(col(2) / d) };
}
