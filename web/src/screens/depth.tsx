// The instrument page's depth chart: the book's cumulative size by price, bids stepping down to the
// left of the spread and asks up to the right, from the same ladder the order book table shows
// (depth 20). SVG, redrawn with the ladder (at most once an animation frame).
import * as fmt from '../lib/format.ts';

export interface DepthLevel {
  price: number;
  amount: number;
  cumulative: number;
}

const W = 320;
const H = 140;
const PAD = 4;

/** The SVG path of one side: a step line from the best price outward, closed to the axis as an area. */
function sidePath(levels: DepthLevel[], x: (p: number) => number, y: (c: number) => number, edge: number): string {
  if (levels.length === 0) return '';
  let d = `M${x(levels[0].price).toFixed(1)},${y(0).toFixed(1)}`;
  // at each price the cumulative size steps up, then holds outward to the next price
  for (const l of levels) d += ` H${x(l.price).toFixed(1)} V${y(l.cumulative).toFixed(1)}`;
  d += ` H${edge.toFixed(1)} V${y(0).toFixed(1)} Z`;
  return d;
}

export function DepthChart({ bids, asks }: { bids: DepthLevel[]; asks: DepthLevel[] }) {
  if (bids.length === 0 && asks.length === 0) return null;
  const prices = [...bids.map((l) => l.price), ...asks.map((l) => l.price)];
  let lo = Math.min(...prices);
  let hi = Math.max(...prices);
  if (hi === lo) {
    lo -= 1e-4;
    hi += 1e-4;
  }
  const maxCum = Math.max(bids.at(-1)?.cumulative ?? 0, asks.at(-1)?.cumulative ?? 0, 1e-9);
  const x = (p: number) => PAD + ((p - lo) / (hi - lo)) * (W - 2 * PAD);
  const y = (c: number) => H - PAD - (c / maxCum) * (H - 2 * PAD);
  const summary = (ls: DepthLevel[]) => ls.map((l) => `${fmt.price(l.price)}:${fmt.amount(l.cumulative)}`).join(' ');
  return (
    <figure class="depth" aria-label="Depth chart" data-bids={summary(bids)} data-asks={summary(asks)}>
      <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={`Depth: ${fmt.amount(bids.at(-1)?.cumulative ?? 0)} bid, ${fmt.amount(asks.at(-1)?.cumulative ?? 0)} offered`}>
        <path class="bid" d={sidePath(bids, x, y, PAD)} />
        <path class="ask" d={sidePath(asks, x, y, W - PAD)} />
      </svg>
      <figcaption class="muted">
        <span>{fmt.price(lo)}</span>
        <span>cumulative size by price</span>
        <span>{fmt.price(hi)}</span>
      </figcaption>
    </figure>
  );
}
