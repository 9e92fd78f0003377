// One instrument's L2 book as a gateway keeps it: a snapshot read from the leader
// (`public/get_order_book`), then the raw changes from the stream whose `prev_change_id` chains on
// to it. A change that does not chain (a gap: messages dropped by the leader's full backlog, a
// gateway that fell behind) makes the owner read a new snapshot; changes already in the snapshot
// (change_id <= its change_id) are skipped. Prices and amounts are the wire numbers, used as keys
// as they are: the leader renders each price level the same way every time.

import { PRICE_SCALE } from '../domain/instrument.ts';

export type Level = [number, number];
/** A Deribit book change entry: action, price, amount. */
export type Entry = [string, number, number];

export interface BookChange {
  type: 'change';
  timestamp: number;
  instrument_name: string;
  prev_change_id: number;
  change_id: number;
  bids: Entry[];
  asks: Entry[];
}

export interface BookSnapshot {
  timestamp: number;
  change_id: number;
  bids: Level[];
  asks: Level[];
}

export class L2 {
  constructor(
    public changeId: number,
    public bids: Map<number, number>,
    public asks: Map<number, number>,
  ) {}

  static of(s: BookSnapshot): L2 {
    return new L2(s.change_id, new Map(s.bids), new Map(s.asks));
  }

  copy(): L2 {
    return new L2(this.changeId, new Map(this.bids), new Map(this.asks));
  }

  apply(c: BookChange): void {
    for (const [a, p, q] of c.bids) {
      if (a === 'delete') this.bids.delete(p);
      else this.bids.set(p, q);
    }
    for (const [a, p, q] of c.asks) {
      if (a === 'delete') this.asks.delete(p);
      else this.asks.set(p, q);
    }
    this.changeId = c.change_id;
  }

  /** Deribit snapshot data: every level, best first. */
  snapshot(name: string, timestamp: number): Record<string, unknown> {
    return {
      type: 'snapshot',
      timestamp,
      instrument_name: name,
      change_id: this.changeId,
      bids: sorted(this.bids, true).map(([p, q]) => ['new', p, q]),
      asks: sorted(this.asks, false).map(([p, q]) => ['new', p, q]),
    };
  }

  /** `book.X.{group}.N.*` data: the best `depth` levels, grouped into buckets of `group` base ticks
   *  (`tick`, coin) as the leader groups them (src/api/ws/parityChannels.ts groupLevels). */
  depthView(name: string, depth: number, timestamp: number, group = 0, tick = 0): Record<string, unknown> {
    const side = (m: Map<number, number>, desc: boolean) => (group === 0 || !(tick > 0) ? sorted(m, desc).slice(0, depth) : grouped(m, desc, depth, group, tick));
    return { timestamp, instrument_name: name, change_id: this.changeId, bids: side(this.bids, true), asks: side(this.asks, false) };
  }

  /** The change from `this` to `next` (conflated channels), best first. */
  diffTo(next: L2, name: string, timestamp: number): BookChange {
    return { type: 'change', timestamp, instrument_name: name, prev_change_id: this.changeId, change_id: next.changeId, bids: diff(this.bids, next.bids, true), asks: diff(this.asks, next.asks, false) };
  }
}

/** Price units per coin. */
const UNIT = 10 ** PRICE_SCALE;

/** Levels in buckets of `group` x `tick`: bids rounded down, asks up, amounts summed; the best `depth`. */
function grouped(m: Map<number, number>, desc: boolean, depth: number, group: number, tick: number): Level[] {
  const width = Math.max(1, Math.round(group * tick * UNIT));
  const buckets = new Map<number, number>();
  for (const [p, q] of m) {
    const u = Math.round(p * UNIT);
    const b = desc ? Math.floor(u / width) * width : Math.ceil(u / width) * width;
    buckets.set(b, (buckets.get(b) ?? 0) + q);
  }
  return [...buckets].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0])).slice(0, depth).map(([u, q]) => [u / UNIT, Number(q.toFixed(8))]);
}

function sorted(m: Map<number, number>, desc: boolean): Level[] {
  return [...m].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0]));
}

function diff(before: Map<number, number>, after: Map<number, number>, desc: boolean): Entry[] {
  const out: Entry[] = [];
  for (const [p, q] of after) {
    const old = before.get(p);
    if (old === undefined) out.push(['new', p, q]);
    else if (old !== q) out.push(['change', p, q]);
  }
  for (const p of before.keys()) if (!after.has(p)) out.push(['delete', p, 0]);
  out.sort((a, b) => (desc ? b[1] - a[1] : a[1] - b[1]));
  return out;
}

/** What `offer` did with a change. */
export type Offered = 'applied' | 'old' | 'gap' | 'buffered';

/** A book being followed: syncing (changes buffered until the snapshot arrives) or live. */
export class BookMirror {
  book: L2 | null = null;
  private buffer: BookChange[] = [];
  /** Conflated (100 ms) channels' state: what they last published. */
  agg: L2 | null = null;

  /** Changes arriving before the snapshot: kept (bounded; past it the sync starts over). */
  offer(c: BookChange): Offered {
    if (this.book === null) {
      if (this.buffer.length >= 10_000) this.buffer.shift();
      this.buffer.push(c);
      return 'buffered';
    }
    if (c.change_id <= this.book.changeId) return 'old';
    if (c.prev_change_id !== this.book.changeId) return 'gap';
    this.book.apply(c);
    return 'applied';
  }

  /** Installs a snapshot and the buffered changes after it; false when they do not chain (read again). */
  install(s: BookSnapshot): boolean {
    const book = L2.of(s);
    for (const c of this.buffer) {
      if (c.change_id <= book.changeId) continue;
      if (c.prev_change_id !== book.changeId) return false;
      book.apply(c);
    }
    this.buffer = [];
    this.book = book;
    this.agg ??= book.copy();
    return true;
  }

  /** Forgets the book (a gap): changes are buffered again until the next snapshot. */
  reset(): void {
    this.book = null;
    this.buffer = [];
  }
}
