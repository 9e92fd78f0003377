// An L2 order book rebuilt from the `book.{instrument}.{interval}` channel (API.md 6): a snapshot,
// then changes chained by `prev_change_id`. A change whose `prev_change_id` is not the change id
// this book holds means messages were lost (a reconnect, a dropped frame): the book is then marked
// stale and the caller must get a fresh snapshot (re-subscribe). Pure: unit-tested in
// test/web/book.test.ts.

export type Level = [price: number, amount: number];
export type LevelChange = [action: 'new' | 'change' | 'delete', price: number, amount: number];

export interface BookMessage {
  type: 'snapshot' | 'change';
  instrument_name: string;
  change_id: number;
  prev_change_id?: number;
  bids: LevelChange[];
  asks: LevelChange[];
}

/** A ladder row: the level and the size summed from the best price down to it. */
export interface LadderRow {
  price: number;
  amount: number;
  cumulative: number;
}

export type ApplyResult = 'ok' | 'gap' | 'ignored';

export class Book {
  readonly bids = new Map<number, number>();
  readonly asks = new Map<number, number>();
  /** The change id of the last message applied; null until a snapshot arrives (or after a gap). */
  changeId: number | null = null;

  constructor(readonly instrument: string) {}

  /** Applies one message. `gap`: the book is now empty and stale until the next snapshot. */
  apply(msg: BookMessage): ApplyResult {
    if (msg.instrument_name !== this.instrument) return 'ignored';
    if (msg.type === 'snapshot') {
      this.bids.clear();
      this.asks.clear();
      for (const [, p, a] of msg.bids) if (a > 0) this.bids.set(p, a);
      for (const [, p, a] of msg.asks) if (a > 0) this.asks.set(p, a);
      this.changeId = msg.change_id;
      return 'ok';
    }
    // a change before any snapshot, or one that does not follow the last: stale
    if (this.changeId === null || msg.prev_change_id !== this.changeId) {
      this.reset();
      return 'gap';
    }
    applySide(this.bids, msg.bids);
    applySide(this.asks, msg.asks);
    this.changeId = msg.change_id;
    return 'ok';
  }

  /** Forgets everything: the next message must be a snapshot. */
  reset(): void {
    this.bids.clear();
    this.asks.clear();
    this.changeId = null;
  }

  get ready(): boolean {
    return this.changeId !== null;
  }

  /** Bids best (highest) first, at most `depth`, with cumulative sizes. */
  bidLadder(depth = 20): LadderRow[] {
    return ladder(this.bids, depth, true);
  }

  /** Asks best (lowest) first, at most `depth`, with cumulative sizes. */
  askLadder(depth = 20): LadderRow[] {
    return ladder(this.asks, depth, false);
  }

  /** The book as `get_order_book` lists it: [[price, amount]], bids descending, asks ascending. */
  levels(depth = 20): { bids: Level[]; asks: Level[] } {
    return {
      bids: this.bidLadder(depth).map((r) => [r.price, r.amount]),
      asks: this.askLadder(depth).map((r) => [r.price, r.amount]),
    };
  }
}

function applySide(side: Map<number, number>, changes: LevelChange[]): void {
  for (const [action, p, a] of changes) {
    if (action === 'delete' || a === 0) side.delete(p);
    else side.set(p, a);
  }
}

function ladder(side: Map<number, number>, depth: number, desc: boolean): LadderRow[] {
  const prices = [...side.keys()].sort((a, b) => (desc ? b - a : a - b)).slice(0, depth);
  let cum = 0;
  return prices.map((price) => {
    const amount = side.get(price)!;
    // cumulative sizes summed in lots of 10^-8 so 0.1 + 0.2 shows 0.3
    cum = Math.round((cum + amount) * 1e8) / 1e8;
    return { price, amount, cumulative: cum };
  });
}
