// Trigger orders (issue 17): what waiting trigger orders cost the commands that move prices. An
// index update or a trade looks only at the top of each trigger queue of the source it moves, so
// with 20,000 untriggered orders on that source that the move does not reach it costs what it
// costs with 200 (the reference, measured in the same run, on an engine holding as many orders
// in all); and a move that fires an order costs about what the same order sent by a client costs.
// Engine only (the command path of the sequencer, without HTTP or the journal).
import type { Sequenced } from '../src/engine/commands.ts';
import { Exchange } from '../src/engine/exchange.ts';
import { instrumentName } from '../src/domain/instrument.ts';
import { applyCommand } from '../src/sequencer/sequencer.ts';

const T0 = Date.UTC(2026, 0, 5, 12);
const EXPIRY = Date.UTC(2026, 2, 27, 8);
const NAME = instrumentName('BTC', EXPIRY, 100000, 'call');
const USERS = 100;
const PER_USER = 200;
const MOVES = 20_000;
/** The stated bound: an index update or a trade with 20,000 unreached triggers on its source, against 200. */
export const UNREACHED_RATIO_BOUND = 1.5;

interface Engine {
  ex: Exchange;
  apply(cmd: object): unknown;
  users: number[];
}

function engine(): Engine {
  const ex = new Exchange({ ...new Exchange().limits, maxUntriggeredPerUser: PER_USER });
  let seq = 0;
  const apply = (cmd: object): unknown => applyCommand(ex, { ...cmd, ts: T0 + seq, seq: ++seq } as Sequenced);
  apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  apply({
    t: 'list',
    instruments: [{ currency: 'BTC', name: NAME, optionType: 'call', strike: 100000, expiry: EXPIRY, settlementPeriod: 'month', tick: 1, tickSteps: [{ abovePrice: 50, tick: 5 }], lotScaled: 10_000_000, makerCommission: 30_000, takerCommission: 30_000, contractSize: 1 }],
  });
  const users: number[] = [];
  for (let i = 0; i < USERS; i++) {
    const u = apply({ t: 'create_user', email: `b${i}@example.com`, passwordHash: 'x', role: 'user', inviteCode: null, by: null }) as { id: number };
    apply({ t: 'deposit', userId: u.id, currency: 'BTC', amount: 100e8, depositId: null, by: 0 });
    users.push(u.id);
  }
  return { ex, apply, users };
}

function trigger(userId: number, side: 0 | 1, type: 'stop_market' | 'take_market', source: 'index_price' | 'last_price', level: number): object {
  return { t: 'place', userId, side, instrument: NAME, price: null, advanced: null, advPrice: null, lots: 10_000_000, type: 'market', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, trig: { type, source, price: level, offset: null } };
}

function limit(userId: number, side: 0 | 1, price: number): object {
  return { t: 'place', userId, side, instrument: NAME, price, advanced: null, advPrice: null, lots: 10_000_000, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null };
}

/** µs per index update alternating between two prices that reach no trigger. */
function indexMoves(e: Engine, n = MOVES): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) e.apply({ t: 'index', currency: 'BTC', price: i % 2 === 0 ? 100_010 : 100_000, manual: true, by: null });
  return ((performance.now() - t0) * 1000) / n;
}

/** µs per order of crossing pairs (a resting sell and the buy that takes it: one trade prints a
 *  last price); the two users swap sides each pair, so their positions stay small. */
function tradeMoves(e: Engine, n = MOVES): number {
  const [a, b] = e.users;
  const t0 = performance.now();
  for (let i = 0; i < n / 2; i++) {
    const [s, t] = i % 2 === 0 ? [a, b] : [b, a];
    const r1 = e.apply(limit(s, 1, 1000)) as { order?: { state: string } };
    const r2 = e.apply(limit(t, 0, 1000)) as { trades?: unknown[] };
    if (i === 0 && (r1.order === undefined || r2.trades?.length !== 1)) throw new Error(`the bench pair did not trade: ${JSON.stringify(r2)}`);
  }
  return ((performance.now() - t0) * 1000) / n;
}

/** Fills the queues with USERS x PER_USER triggers that the moves below never reach; the first
 *  `onMoved` of them wait on `moved`, the others on the other source. */
function unreached(e: Engine, moved: 'index_price' | 'last_price', onMoved: number): number {
  let n = 0;
  for (const u of e.users) {
    for (let k = 0; k < PER_USER / 2; k++) {
      const source = n < onMoved ? moved : moved === 'index_price' ? 'last_price' : 'index_price';
      // index: stop sells 50,000-90,000 USD and stop buys 110,000-150,000; last price: 0.01-0.09 and 0.11-0.19 coin
      const lo = source === 'index_price' ? (50_000 + ((n * 7) % 40_000)) * 1e4 : 100 + ((n * 7) % 160) * 5;
      const hi = source === 'index_price' ? (110_000 + ((n * 7) % 40_000)) * 1e4 : 1100 + ((n * 7) % 160) * 5;
      const r1 = e.apply(trigger(u, 1, 'stop_market', source, lo)) as { order?: unknown };
      const r2 = e.apply(trigger(u, 0, 'stop_market', source, hi)) as { order?: unknown };
      if (r1.order === undefined || r2.order === undefined) throw new Error(`a bench trigger was refused: ${JSON.stringify(r1)} ${JSON.stringify(r2)}`);
      n += 2;
    }
  }
  return n;
}

export async function runTriggerBench(): Promise<{ lines: string[]; ok: boolean }> {
  const lines: string[] = [];
  let ok = true;
  // warm-up, so the first measurement is not the JIT's
  indexMoves(engine());
  tradeMoves(engine());

  // interleaved in chunks (one chunk on each engine in turn, the order swapped every chunk), so
  // that drifts of the shared machine, GC and the engines' growing state weigh on both alike; the
  // ratio is the median of the chunks' ratios (a burst of another process spoils a chunk, not all)
  const interleaved = (a: (n: number) => number, b: (n: number) => number, total = MOVES): [number, number, number] => {
    const CHUNKS = 40;
    const n = total / CHUNKS;
    const xs: number[] = [];
    const ys: number[] = [];
    for (let c = 0; c < CHUNKS; c++) {
      if (c % 2 === 0) {
        xs.push(a(n));
        ys.push(b(n));
      } else {
        ys.push(b(n));
        xs.push(a(n));
      }
    }
    const median = (v: number[]) => [...v].sort((p, q) => p - q)[v.length >> 1];
    return [median(xs), median(ys), median(xs.map((x, i) => ys[i] / x))];
  };
  // both engines hold 20,000 untriggered orders (the same heap to mark): the reference has 200 of
  // them on the source that moves, the other 20,000; the moves reach none
  const SMALL = 200;
  const withLastPrint = (): Engine => {
    const e = engine();
    // a first trade, so the last-price triggers have a reference between their levels
    e.apply(limit(e.users[2], 1, 1000));
    e.apply(limit(e.users[3], 0, 1000));
    return e;
  };
  const fewIdx = withLastPrint();
  const manyIdx = withLastPrint();
  unreached(fewIdx, 'index_price', SMALL);
  const nIdx = unreached(manyIdx, 'index_price', Infinity);
  const [refIndex, idx, rIdx] = interleaved((n) => indexMoves(fewIdx, n), (n) => indexMoves(manyIdx, n));
  ok &&= rIdx <= UNREACHED_RATIO_BOUND;
  lines.push(`index update: ${refIndex.toFixed(2)} us with ${SMALL} unreached index triggers (reference), ${idx.toFixed(2)} us with ${nIdx.toLocaleString('en-US')}: ratio ${rIdx.toFixed(2)} (bound ${UNREACHED_RATIO_BOUND}) ${rIdx <= UNREACHED_RATIO_BOUND ? 'OK' : 'OVER'}`);

  const fewLast = withLastPrint();
  const manyLast = withLastPrint();
  unreached(fewLast, 'last_price', SMALL);
  const nLast = unreached(manyLast, 'last_price', Infinity);
  const [refTrade, trade, rTrade] = interleaved((n) => tradeMoves(fewLast, n), (n) => tradeMoves(manyLast, n));
  ok &&= rTrade <= UNREACHED_RATIO_BOUND;
  lines.push(`order that trades: ${refTrade.toFixed(2)} us with ${SMALL} unreached last-price triggers (reference), ${trade.toFixed(2)} us with ${nLast.toLocaleString('en-US')}: ratio ${rTrade.toFixed(2)} (bound ${UNREACHED_RATIO_BOUND}) ${rTrade <= UNREACHED_RATIO_BOUND ? 'OK' : 'OVER'}`);

  // firing: 10,000 stop sells one dollar apart, the index stepping down a dollar per update; each
  // fires one market sell into a resting bid. Reference: the same index updates, each followed by
  // the same market sell sent as an ordinary order.
  const FIRES = 10_000;
  const market = (userId: number) => ({ ...limit(userId, 1, 0), price: null, type: 'market' });
  const setup = (): Engine & { maker: number; sellers: number[] } => {
    const e = engine();
    const [maker, ...sellers] = e.users;
    e.apply({ t: 'deposit', userId: maker, currency: 'BTC', amount: 10_000e8, depositId: null, by: 0 });
    const bid = e.apply({ ...limit(maker, 0, 800), lots: 10_000_000 * FIRES }) as { order?: unknown };
    if (bid.order === undefined) throw new Error(`the maker's bid was refused: ${JSON.stringify(bid)}`);
    return { ...e, maker, sellers };
  };
  const plain = setup();
  const fire = setup();
  for (let k = 0; k < FIRES; k++) fire.apply(trigger(fire.sellers[k % fire.sellers.length], 1, 'stop_market', 'index_price', (99_999 - k) * 1e4));
  let plainStep = 0;
  let fireStep = 0;
  const [refFire, perFire, rFire] = interleaved(
    (n) => {
      const t0 = performance.now();
      for (let k = 0; k < n; k++) {
        plainStep++;
        plain.apply({ t: 'index', currency: 'BTC', price: 100_000 - plainStep, manual: true, by: null });
        plain.apply(market(plain.sellers[(plainStep - 1) % plain.sellers.length]));
      }
      return ((performance.now() - t0) * 1000) / n;
    },
    (n) => {
      const t0 = performance.now();
      for (let k = 0; k < n; k++) {
        fireStep++;
        fire.apply({ t: 'index', currency: 'BTC', price: 100_000 - fireStep, manual: true, by: null });
      }
      return ((performance.now() - t0) * 1000) / n;
    },
    FIRES,
  );
  let fired = 0;
  for (const m of fire.ex.triggers.byUser.values()) for (const t of m.values()) if (t.state === 'triggered' && fire.ex.users.get(t.userId)!.orders.get(t.firedOrderId!)!.filled > 0) fired++;
  const plainSize = plain.ex.users.get(plain.maker)!.positions.values().next().value?.size;
  const firedSize = fire.ex.users.get(fire.maker)!.positions.values().next().value?.size;
  ok &&= fired === FIRES && plainSize === firedSize;
  lines.push(`firing: ${FIRES.toLocaleString('en-US')} index updates each firing one stop into a fill: ${perFire.toFixed(2)} us per update; reference (the update, then the same market sell as an ordinary order): ${refFire.toFixed(2)} us: ratio ${rFire.toFixed(2)}; ${fired.toLocaleString('en-US')} fired and filled (maker long ${firedSize} lots, ${plainSize} in the reference)`);
  return { lines, ok };
}
