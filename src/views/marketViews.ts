// Read models of market data that the engine does not keep: mark price history (one point per
// minute per active instrument) and traded volume per currency and option type (for
// get_trade_volumes). They are fed by `observe`, called after every applied command both live and
// during recovery's replay, so a restart rebuilds them from the journal: volumes from the public
// trades the engine holds plus the replayed commands, mark history from the replayed commands (the
// points before the latest snapshot are not in the journal any more, see docs/architecture.md).
// A planned stop saves them beside its snapshot (save/load below), so that they survive it whole.
import type { CurrencyCode } from '../domain/currency.ts';
import type { Sequenced } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { Trade } from '../engine/types.ts';
import { volatilityIndex } from '../market/volIndex.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 3600_000;
const DAY_MS = 24 * 3600 * 1000;
/** How long index minute closes and volatility-index minutes are kept. */
export const VOL_HISTORY_RETENTION_MS = 16 * DAY_MS;
/** Minutes in a 365-day year: annualises the variance of minute returns. */
const MINUTES_PER_YEAR = 365 * 24 * 60;
/** How long mark history is kept (a point per minute per instrument: ~2000 instruments x 1440/day). */
export const MARK_HISTORY_RETENTION_MS = DAY_MS;
/** Volume buckets are kept for the longest window reported. */
const VOLUME_RETENTION_MS = 30 * DAY_MS;

interface VolumeBucket {
  /** contracts x 10^8 */
  calls: number;
  puts: number;
}

export interface TradeVolumes {
  currency: CurrencyCode;
  calls: [number, number, number];
  puts: [number, number, number];
}

const VOL_CURRENCIES: CurrencyCode[] = ['BTC', 'ETH'];

/** MarketViews.save's text: every field of the class, Maps as entry arrays. */
interface SavedViews {
  v: 1;
  seq: number;
  lastMinute: number;
  lastTradeId: number;
  marks: [number, number[]][];
  volumes: [CurrencyCode, [number, number, number][]][];
  indexCloses: [CurrencyCode, number[]][];
  volIndex: [CurrencyCode, number[]][];
}

/** Drops the leading records (of `width` numbers, the first a timestamp) older than `cutoff`. */
function trim(arr: number[], width: number, cutoff: number): void {
  if (arr.length === 0 || arr[0] >= cutoff) return;
  let i = 0;
  while (i < arr.length && arr[i] < cutoff) i += width;
  arr.splice(0, i);
}

export class MarketViews {
  /** instrument id -> flat [ts, mark, ts, mark, ...] ascending */
  private readonly marks = new Map<number, number[]>();
  private lastMinute = -1;
  /** currency -> minute -> volume (insertion order is time order) */
  private readonly volumes = new Map<CurrencyCode, Map<number, VolumeBucket>>();
  private lastTradeId = 0;
  /** currency -> flat [minute start, index close, ...] ascending (one pair per minute with a print) */
  private readonly indexCloses = new Map<CurrencyCode, number[]>();
  /** currency -> flat [minute start, open, high, low, close, ...] of the volatility index */
  private readonly volIndex = new Map<CurrencyCode, number[]>();

  /**
   * The read models as text, for a snapshot taken at a planned stop (src/app/plannedStop.ts): a
   * restart from that snapshot replays nothing, so nothing would rebuild them. Tagged with the
   * seq of the state they were observed up to; recovery loads them only beside the snapshot of
   * that very seq (src/app/recovery.ts).
   */
  save(seq: number): string {
    const state: SavedViews = {
      v: 1,
      seq,
      lastMinute: this.lastMinute,
      lastTradeId: this.lastTradeId,
      marks: [...this.marks],
      volumes: [...this.volumes].map(([c, byMinute]) => [c, [...byMinute].map(([minute, b]) => [minute, b.calls, b.puts])]),
      indexCloses: [...this.indexCloses],
      volIndex: [...this.volIndex],
    };
    return JSON.stringify(state);
  }

  /** The seq a saved text was taken at, or null when it is not one this version reads. */
  static savedSeq(text: string): number | null {
    const state = JSON.parse(text) as Partial<SavedViews>;
    return state.v === 1 && typeof state.seq === 'number' ? state.seq : null;
  }

  /** Replaces the read models with a saved state (before the replay of what followed it). */
  load(text: string): void {
    const state = JSON.parse(text) as SavedViews;
    if (state.v !== 1) throw new Error(`market views: saved format ${String(state.v)} is not one this server reads`);
    this.lastMinute = state.lastMinute;
    this.lastTradeId = state.lastTradeId;
    this.marks.clear();
    for (const [id, arr] of state.marks) this.marks.set(id, arr);
    this.volumes.clear();
    for (const [c, rows] of state.volumes) this.volumes.set(c, new Map(rows.map(([minute, calls, puts]) => [minute, { calls, puts }])));
    this.indexCloses.clear();
    for (const [c, arr] of state.indexCloses) this.indexCloses.set(c, arr);
    this.volIndex.clear();
    for (const [c, arr] of state.volIndex) this.volIndex.set(c, arr);
  }

  /** Attach to an engine: every applied command is observed from now on. */
  attach(ex: Exchange): void {
    ex.viewObserver = (cmd) => this.observe(ex, cmd);
  }

  observe(ex: Exchange, cmd: Sequenced): void {
    if (ex.nextTradeId - 1 > this.lastTradeId) this.collectTrades(ex);
    const minute = Math.floor(cmd.ts / MINUTE_MS);
    // the first command of each minute records every active instrument; a listing records the new
    // series at once (sampleMarks skips what already has this minute's point)
    const newMinute = minute > this.lastMinute;
    if (newMinute || cmd.t === 'list') {
      this.lastMinute = minute;
      this.sampleMarks(ex, minute * MINUTE_MS);
    }
    if (cmd.t === 'index') this.recordIndex(cmd.currency, minute * MINUTE_MS, ex.indexPrice(cmd.currency));
    // the volatility index moves with marks: sampled at the first command of each minute and when
    // a vol smile is set (not on every index print: replaying a day of 1 s prints would cost ~10 s)
    if (newMinute) for (const c of VOL_CURRENCIES) this.recordVolIndex(c, minute * MINUTE_MS, volatilityIndex(ex, c));
    else if (cmd.t === 'set_vol') this.recordVolIndex(cmd.currency, minute * MINUTE_MS, volatilityIndex(ex, cmd.currency));
  }

  private recordIndex(c: CurrencyCode, ts: number, price: number): void {
    if (!Number.isFinite(price)) return;
    let arr = this.indexCloses.get(c);
    if (!arr) this.indexCloses.set(c, (arr = []));
    if (arr.length > 0 && arr[arr.length - 2] === ts) arr[arr.length - 1] = price;
    else arr.push(ts, price);
    trim(arr, 2, ts - VOL_HISTORY_RETENTION_MS);
  }

  private recordVolIndex(c: CurrencyCode, ts: number, v: number): void {
    if (!Number.isFinite(v)) return;
    let arr = this.volIndex.get(c);
    if (!arr) this.volIndex.set(c, (arr = []));
    const n = arr.length;
    if (n > 0 && arr[n - 5] === ts) {
      arr[n - 3] = Math.max(arr[n - 3], v);
      arr[n - 2] = Math.min(arr[n - 2], v);
      arr[n - 1] = v;
    } else arr.push(ts, v, v, v, v);
    trim(arr, 5, ts - VOL_HISTORY_RETENTION_MS);
  }

  /**
   * Realized volatility of the index, in percent a year, one point per full hour up to `now` (within
   * the retention): the root mean square of the 60 minute log returns of the hour ending at the
   * point's timestamp, annualised over 365 days. A minute without a print keeps the close before it.
   */
  historicalVolatility(c: CurrencyCode, now: number): [number, number][] {
    const arr = this.indexCloses.get(c);
    const out: [number, number][] = [];
    if (!arr || arr.length === 0) return out;
    const first = arr[0];
    let j = 0;
    /** the close in force at minute `m` (the pointer only moves forward: minutes are asked in order) */
    const closeAt = (m: number): number => {
      while (j + 2 < arr.length && arr[j + 2] <= m) j += 2;
      return arr[j + 1];
    };
    const lastHour = Math.floor(now / HOUR_MS) * HOUR_MS;
    const firstHour = Math.max(Math.ceil((first + 61 * MINUTE_MS) / HOUR_MS) * HOUR_MS, lastHour - (VOL_HISTORY_RETENTION_MS - DAY_MS));
    for (let T = firstHour; T <= lastHour; T += HOUR_MS) {
      j = 0;
      let prev = closeAt(T - 61 * MINUTE_MS);
      let sum = 0;
      for (let m = T - 60 * MINUTE_MS; m < T; m += MINUTE_MS) {
        const cl = closeAt(m);
        const r = Math.log(cl / prev);
        sum += r * r;
        prev = cl;
      }
      out.push([T, 100 * Math.sqrt((sum / 60) * MINUTES_PER_YEAR)]);
    }
    return out;
  }

  /** Index minute closes [[minute start, close]] from `from` on, ascending (within the retention). */
  indexMinutes(c: CurrencyCode, from: number): [number, number][] {
    const arr = this.indexCloses.get(c);
    const out: [number, number][] = [];
    if (!arr) return out;
    for (let i = 0; i < arr.length; i += 2) if (arr[i] >= from) out.push([arr[i], arr[i + 1]]);
    return out;
  }

  /** Volatility-index minutes [[ts, open, high, low, close]] with from <= ts <= to, ascending. */
  volIndexMinutes(c: CurrencyCode, from: number, to: number): [number, number, number, number, number][] {
    const arr = this.volIndex.get(c);
    const out: [number, number, number, number, number][] = [];
    if (!arr) return out;
    for (let i = 0; i < arr.length; i += 5) if (arr[i] >= from && arr[i] <= to) out.push([arr[i], arr[i + 1], arr[i + 2], arr[i + 3], arr[i + 4]]);
    return out;
  }

  /**
   * Adds the trades since the last one seen, in id order: from the end of `ex.recentTrades` (O(new
   * trades)), or, when that does not reach back far enough (after a snapshot restore, or a command
   * with more trades than it keeps), from every instrument's list.
   */
  private collectTrades(ex: Exchange): void {
    const recent = ex.recentTrades;
    if (recent.length > 0 && recent[0]!.id <= this.lastTradeId + 1) {
      let i = recent.length;
      while (i > 0 && recent[i - 1]!.id > this.lastTradeId) i--;
      for (; i < recent.length; i++) this.addVolume(recent[i]!);
    } else {
      const fresh: Trade[] = [];
      for (const m of ex.markets.values()) {
        for (let i = m.trades.length - 1; i >= 0 && m.trades[i].id > this.lastTradeId; i--) fresh.push(m.trades[i]);
      }
      fresh.sort((a, b) => a.id - b.id);
      for (const t of fresh) this.addVolume(t);
    }
    this.lastTradeId = ex.nextTradeId - 1;
  }

  private addVolume(t: Trade): void {
    let byMinute = this.volumes.get(t.inst.currency);
    if (!byMinute) this.volumes.set(t.inst.currency, (byMinute = new Map()));
    const minute = Math.floor(t.ts / MINUTE_MS);
    let b = byMinute.get(minute);
    if (!b) byMinute.set(minute, (b = { calls: 0, puts: 0 }));
    const contracts = t.lots * t.inst.lotScaled * t.inst.contractSize;
    if (t.inst.optionType === 'call') b.calls += contracts;
    else b.puts += contracts;
    const cutoff = Math.floor((t.ts - VOLUME_RETENTION_MS) / MINUTE_MS);
    for (const k of byMinute.keys()) {
      if (k >= cutoff) break;
      byMinute.delete(k);
    }
  }

  private sampleMarks(ex: Exchange, ts: number): void {
    const cutoff = ts - MARK_HISTORY_RETENTION_MS;
    for (const m of ex.markets.values()) {
      if (m.inst.state !== 'open' || m.inst.expiry <= ts || !Number.isFinite(m.markCoin)) continue;
      let arr = this.marks.get(m.inst.id);
      if (!arr) this.marks.set(m.inst.id, (arr = []));
      if (arr.length > 0 && arr[arr.length - 2] === ts) continue;
      arr.push(ts, m.markCoin);
    }
    for (const [id, arr] of this.marks) {
      if (arr.length === 0 || arr[0] >= cutoff) continue;
      let i = 0;
      while (i < arr.length && arr[i] < cutoff) i += 2;
      arr.splice(0, i);
      if (arr.length === 0) this.marks.delete(id);
    }
  }

  /** [[ts, mark], ...] ascending with from <= ts <= to. */
  markHistory(instrumentId: number, from: number, to: number): [number, number][] {
    const arr = this.marks.get(instrumentId);
    const out: [number, number][] = [];
    if (!arr) return out;
    for (let i = 0; i < arr.length; i += 2) if (arr[i] >= from && arr[i] <= to) out.push([arr[i], arr[i + 1]]);
    return out;
  }

  /** Volumes (contracts x 10^8) over the last 24 h, 7 d and 30 d before `now`. */
  tradeVolumes(currency: CurrencyCode, now: number): TradeVolumes {
    const out: TradeVolumes = { currency, calls: [0, 0, 0], puts: [0, 0, 0] };
    const byMinute = this.volumes.get(currency);
    if (!byMinute) return out;
    const windows = [DAY_MS, 7 * DAY_MS, 30 * DAY_MS];
    for (const [minute, b] of byMinute) {
      const ts = minute * MINUTE_MS;
      if (ts > now) continue;
      windows.forEach((w, i) => {
        // a bucket counts when its minute lies inside the window
        if (ts > now - w) {
          out.calls[i] += b.calls;
          out.puts[i] += b.puts;
        }
      });
    }
    return out;
  }
}
