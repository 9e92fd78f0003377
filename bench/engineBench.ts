// Engine benchmark: Strikebook's OrderBook against nodejs-order-book on the same seeded stream
// (stream v1, see orderStream.ts), in the same process run, both checked against the stream's
// expected final state.
import { createRequire } from 'node:module';
import { BUY, SELL, OrderBook } from '../src/engine/orderBook.ts';
import type { BookNode, PriceLevel, Side } from '../src/engine/orderBook.ts';
import { STREAM_V1_SHA256, generateStream, runBench } from './orderStream.ts';
import type { BenchResult, ExpectedState, OrderStream, StreamAdapter } from './orderStream.ts';

/** Strikebook must beat the reference by at least this factor. */
export const TARGET_RATIO = 4;

/** Stands in for the exchange's Order: the object that is itself the book's queue node. */
class BenchOrder implements BookNode {
  id: number;
  userId: number;
  side: Side;
  price: number;
  remaining: number;
  prev: BookNode | null = null;
  next: BookNode | null = null;
  level: PriceLevel | null = null;
  constructor(id: number, side: Side, price: number, remaining: number) {
    this.id = id;
    this.userId = 0;
    this.side = side;
    this.price = price;
    this.remaining = remaining;
  }
}

/**
 * Drives OrderBook the way the exchange will: a limit matches first and rests its remainder,
 * a market order matches with no limit, a cancel finds the order by id in O(1). Stream prices
 * (multiples of 0.5) become integer units of 0.5.
 */
class StrikebookAdapter implements StreamAdapter {
  readonly book = new OrderBook<BenchOrder>();
  readonly open = new Map<number, BenchOrder>();
  fills = 0;
  volume = 0;
  // Created once per adapter, not per match call.
  private readonly onFill = (maker: BenchOrder, qty: number): void => {
    this.fills++;
    this.volume += qty;
    if (maker.remaining === qty) this.open.delete(maker.id); // onFill runs before the book applies the fill
  };

  limit(side: string, id: string, price: number, size: number): void {
    const s: Side = side === 'buy' ? BUY : SELL;
    const p = price * 2;
    const left = this.book.match(s, p, size, this.onFill);
    if (left > 0) {
      const o = new BenchOrder(+id, s, p, left);
      this.book.add(o);
      this.open.set(o.id, o);
    }
  }

  market(side: string, size: number): void {
    this.book.match(side === 'buy' ? BUY : SELL, NaN, size, this.onFill);
  }

  cancel(id: string): void {
    const key = +id;
    const o = this.open.get(key);
    if (o !== undefined) {
      this.book.remove(o);
      this.open.delete(key);
    }
  }

  /** Same shape as nodejs-order-book's depth(): [asks, bids], decimal prices. */
  depth(): [Array<[number, number]>, Array<[number, number]>] {
    const half = (lv: Array<[number, number]>) => lv.map(([p, q]): [number, number] => [p / 2, q]);
    return [half(this.book.depth(SELL, Infinity)), half(this.book.depth(BUY, Infinity))];
  }
}

async function referenceFactory(): Promise<{ factory: () => StreamAdapter; version: string }> {
  // nodejs-order-book's package.json points "types" at a missing file, so it is imported untyped.
  const modName = 'nodejs-order-book';
  const mod: any = await import(modName);
  const version: string = createRequire(import.meta.url)('nodejs-order-book/package.json').version ?? '?';
  const factory = (): StreamAdapter => {
    const lob = new mod.OrderBook({ enableJournaling: false });
    return {
      limit: (side, id, price, size) => lob.limit({ side, id, size, price }),
      market: (side, size) => lob.market({ side, size }),
      cancel: (id) => lob.cancel(id),
      depth: () => lob.depth(),
    };
  };
  return { factory, version };
}

interface EngineSummary {
  label: string;
  opsPerSec: number;
  runs: BenchResult['runs'];
  latencyUs: BenchResult['latencyUs'];
  byKindUs: BenchResult['byKindUs'];
  depthOk: boolean;
  /** Strikebook only: fills count and traded volume match the stream. */
  fillsOk?: boolean;
  problems: string[];
}

const norm = (lv: Array<[number, number]>) => [...lv].sort((x, y) => x[0] - y[0]).map(([p, q]) => `${p}:${q}`).join(',');

function checkDepth(finalDepth: unknown, e: ExpectedState, problems: string[]): boolean {
  const [asks, bids] = finalDepth as [Array<[number, number]>, Array<[number, number]>];
  const bidsOk = norm(bids) === norm(e.bids);
  const asksOk = norm(asks) === norm(e.asks);
  if (!bidsOk) problems.push(`bids ${norm(bids).slice(0, 120)} != expected ${norm(e.bids).slice(0, 120)}`);
  if (!asksOk) problems.push(`asks ${norm(asks).slice(0, 120)} != expected ${norm(e.asks).slice(0, 120)}`);
  return bidsOk && asksOk;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : Math.round((s[m - 1] + s[m]) / 2);
}

function summarize(res: BenchResult, e: ExpectedState): EngineSummary {
  // run0 is the JIT warm-up; the figure is the median of the others.
  const measured = res.runs.length > 1 ? res.runs.slice(1) : res.runs;
  const problems: string[] = [];
  const depthOk = checkDepth(res.finalDepth, e, problems);
  return {
    label: res.label, opsPerSec: median(measured.map((r) => r.opsPerSec)), runs: res.runs,
    latencyUs: res.latencyUs, byKindUs: res.byKindUs, depthOk, problems,
  };
}

function fmtLine(s: EngineSummary): string {
  const l = s.latencyUs;
  const checks = s.fillsOk === undefined ? `depth ${s.depthOk ? 'ok' : 'WRONG'}` : `depth ${s.depthOk ? 'ok' : 'WRONG'}, fills+volume ${s.fillsOk ? 'ok' : 'WRONG'}`;
  return `${s.label.padEnd(28)} ${String(s.opsPerSec.toLocaleString('en-US')).padStart(11)} ops/s   ` +
    `p50 ${l.p50.toFixed(2)} µs  p99 ${l.p99.toFixed(2)} µs  p99.9 ${l.p999.toFixed(2)} µs   ${checks}`;
}

export async function runEngineBench(opts: { n?: number; runs?: number } = {}): Promise<{
  lines: string[]; strikebook: any; reference: any; ratio: number; ok: boolean;
}> {
  const n = opts.n ?? 1_000_000;
  const runs = opts.runs ?? 3;
  const seed = 42;
  const lines: string[] = [];
  const t0 = process.hrtime.bigint();
  const stream: OrderStream = generateStream({ seed, n });
  const genMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const e = stream.expected;
  const shaChecked = seed === 42 && n === 1_000_000;
  const shaOk = !shaChecked || stream.sha256 === STREAM_V1_SHA256;
  lines.push(`order stream v1 seed=${seed} n=${n} ops=${stream.n} (limit ${e.limits}, market ${e.markets}, cancel ${e.cancels}) ` +
    `sha256 ${stream.sha256.slice(0, 16)}… ${shaChecked ? (shaOk ? 'matches v1' : 'DOES NOT MATCH v1') : '(not the canonical size)'}; ` +
    `expected ${e.fills} fills, volume ${e.volume}, ${e.restingAtEnd} resting; generated in ${genMs.toFixed(0)} ms`);

  const sbRes = runBench(() => new StrikebookAdapter(), stream, { label: 'strikebook OrderBook', runs });
  const strikebook = summarize(sbRes, e);
  const last = sbRes.lastAdapter as StrikebookAdapter;
  strikebook.fillsOk = last.fills === e.fills && last.volume === e.volume && last.book.orderCount() === e.restingAtEnd;
  if (!strikebook.fillsOk) {
    strikebook.problems.push(`fills ${last.fills}/${e.fills}, volume ${last.volume}/${e.volume}, resting ${last.book.orderCount()}/${e.restingAtEnd}`);
  }

  const ref = await referenceFactory();
  const reference = summarize(runBench(ref.factory, stream, { label: `nodejs-order-book@${ref.version}`, runs }), e);

  const ratio = strikebook.opsPerSec / reference.opsPerSec;
  const correct = shaOk && strikebook.depthOk && strikebook.fillsOk && reference.depthOk;
  const ok = correct && ratio >= TARGET_RATIO;
  lines.push(fmtLine(strikebook), fmtLine(reference));
  for (const p of [...strikebook.problems.map((x) => `strikebook: ${x}`), ...reference.problems.map((x) => `reference: ${x}`)]) lines.push(`  ! ${p}`);
  lines.push(`verdict: ${ok ? 'PASS' : 'FAIL'} — strikebook is ${ratio.toFixed(2)}x the reference (target >= ${TARGET_RATIO}x)` +
    `${correct ? ', both engines end in the expected state' : ', CORRECTNESS CHECK FAILED'}; ` +
    `ops/s = median of ${Math.max(1, runs - 1)} run(s) after a warm-up run`);
  return { lines, strikebook, reference, ratio, ok };
}
