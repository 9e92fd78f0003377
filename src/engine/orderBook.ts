// Price-time-priority limit order book for ONE instrument.
//
// Pure and deterministic: no clock, no randomness, no I/O. Prices and quantities are integers
// (price units / lots); the book never does float arithmetic on them.
//
// Layout, chosen for speed (DESIGN.md "Rules that make it fast"):
// - the caller's own order objects are the FIFO queue nodes (intrusive `prev`/`next`/`level`
//   links), so resting an order allocates nothing in the book and cancel is an O(1) unlink;
// - each side keeps its non-empty price levels in an array sorted so that the BEST level is at
//   the END: the taker always consumes from the end, so exhausting the best level is a `pop()`;
//   a new level is placed by binary search (with a fast path for "new best");
// - a Map per side finds the level of a price in O(1) when an order is added;
// - emptied PriceLevel objects go to a small free list and are reused.
//
// Ownership: while a node rests (node.level !== null) the book owns `prev`, `next`, `level` and
// `remaining`; the caller must not write them, nor `side`/`price` (re-price = remove + add, which
// loses time priority, as it should). A node may rest in at most one book at a time.
//
// Callbacks (`match`'s onFill, `walk`'s visitor) must not mutate the book: add/remove/reduce/match
// called from inside one throws. If onFill itself throws, the match is half-applied, so the book
// stays locked and every later mutation throws: exceptions are bugs, and a book in an unknown
// state must not keep trading.

export const BUY = 0;
export const SELL = 1;
export type Side = 0 | 1;

export interface BookNode {
  id: number;
  userId: number;
  side: Side;
  /** Limit price in integer price units. */
  price: number;
  /** Open quantity in integer lots; > 0 while resting. */
  remaining: number;
  /** intrusive links, owned by the book */
  prev: BookNode | null;
  next: BookNode | null;
  level: PriceLevel | null;
}

/** One price level of one side: a FIFO queue of resting nodes plus its aggregate. */
export class PriceLevel {
  price: number;
  /** Sum of `remaining` over the level's nodes. */
  total = 0;
  /** Number of nodes in the level. */
  count = 0;
  head: BookNode | null = null;
  tail: BookNode | null = null;
  constructor(price: number) {
    this.price = price;
  }
}

const FREE_LEVELS_MAX = 64;

export type FillHandler<T> = (maker: T, qty: number, price: number) => void;

export class OrderBook<T extends BookNode = BookNode> {
  /** Bids ascending by price (best = highest at the end). */
  private readonly bidLevels: PriceLevel[] = [];
  /** Asks descending by price (best = lowest at the end). */
  private readonly askLevels: PriceLevel[] = [];
  private readonly bidMap = new Map<number, PriceLevel>();
  private readonly askMap = new Map<number, PriceLevel>();
  private readonly freeLevels: PriceLevel[] = [];
  private count = 0;
  /** Set while a callback runs (and forever after a callback threw inside match). */
  private locked = false;

  /** Rests `node` at the tail of its price level. Does not match: cross first with `match`. */
  add(node: T): void {
    if (this.locked) lockedError();
    const qty = node.remaining;
    if (node.level !== null) throw new Error(`order ${node.id} is already resting`);
    if (!(qty > 0) || !Number.isSafeInteger(qty)) throw new RangeError(`order ${node.id}: remaining must be a positive integer`);
    const price = node.price;
    if (!Number.isSafeInteger(price)) throw new RangeError(`order ${node.id}: price must be an integer`);
    const isBuy = node.side === BUY;
    if (!isBuy && node.side !== SELL) throw new RangeError(`order ${node.id}: bad side`);
    const map = isBuy ? this.bidMap : this.askMap;
    let level = map.get(price);
    if (level === undefined) {
      level = this.newLevel(price);
      map.set(price, level);
      insertLevel(isBuy ? this.bidLevels : this.askLevels, level, isBuy);
    }
    const tail = level.tail;
    node.prev = tail;
    node.next = null;
    node.level = level;
    if (tail === null) level.head = node;
    else tail.next = node;
    level.tail = node;
    level.count++;
    level.total += qty;
    this.count++;
  }

  /** Unlinks a resting node in O(1); returns false (and does nothing) if it is not resting. */
  remove(node: T): boolean {
    if (this.locked) lockedError();
    const level = node.level;
    if (level === null) return false;
    level.total -= node.remaining;
    this.unlink(node, level);
    return true;
  }

  /**
   * Lowers a resting node's `remaining` by `qty` in place, keeping its time priority (an edit
   * that only shrinks). Reaching 0 removes the node. `qty` must be an integer in 1..remaining.
   */
  reduce(node: T, qty: number): void {
    if (this.locked) lockedError();
    const level = node.level;
    if (level === null) throw new Error(`order ${node.id} is not resting`);
    if (!(qty > 0) || !Number.isSafeInteger(qty) || qty > node.remaining) {
      throw new RangeError(`order ${node.id}: reduce by ${qty} of ${node.remaining}`);
    }
    node.remaining -= qty;
    level.total -= qty;
    if (node.remaining === 0) this.unlink(node, level);
  }

  /** Best (highest) bid price, NaN when there are no bids. */
  bestBid(): number {
    const a = this.bidLevels;
    return a.length === 0 ? NaN : a[a.length - 1].price;
  }

  /** Best (lowest) ask price, NaN when there are no asks. */
  bestAsk(): number {
    const a = this.askLevels;
    return a.length === 0 ? NaN : a[a.length - 1].price;
  }

  bestLevel(side: Side): PriceLevel | null {
    const a = side === BUY ? this.bidLevels : this.askLevels;
    return a.length === 0 ? null : a[a.length - 1];
  }

  /**
   * Visits, best first and in time priority, the resting orders a taker of `takerSide` with
   * `limitPrice` (NaN = market) would meet, without mutating anything. The visitor returns
   * false to stop. Useful for pre-trade checks (self-trade, fill-or-kill, cost estimates).
   */
  walk(takerSide: Side, limitPrice: number, visit: (maker: T) => boolean): void {
    if (this.locked) lockedError();
    const levels = takerSide === BUY ? this.askLevels : this.bidLevels;
    const isBuy = takerSide === BUY;
    this.locked = true;
    try {
      for (let i = levels.length - 1; i >= 0; i--) {
        const level = levels[i];
        // NaN compares false both ways, so a market taker never stops on price.
        if (isBuy ? level.price > limitPrice : level.price < limitPrice) return;
        for (let n = level.head; n !== null; n = n.next) {
          if (!visit(n as T)) return;
        }
      }
    } finally {
      this.locked = false;
    }
  }

  /**
   * Matches a taker of `takerSide` for `qty` lots against the book: best level first, FIFO
   * within a level, at the maker's price, never beyond `limitPrice` (NaN = no limit).
   * Returns the quantity left unfilled; resting it (or not) is the caller's decision.
   *
   * For each fill, `onFill(maker, fillQty, price)` is called BEFORE the book applies it: the
   * maker is still linked and `maker.remaining` (and its level's total) still hold the pre-fill
   * quantity, so `maker.remaining === fillQty` means this fill completes the maker. Right after
   * onFill returns, the book lowers `remaining` and unlinks a completed maker (remaining 0).
   * onFill must not mutate the book (see the file header). Pass a function created once, not a
   * fresh closure per call, to keep the hot path allocation-free.
   *
   * `canFill(maker)`, when given, is asked before each maker is filled; false stops the match
   * right there, with that maker untouched, so that the caller can change the book (cancel or
   * shrink orders) and match the rest again. Same rules as onFill.
   */
  match(takerSide: Side, limitPrice: number, qty: number, onFill: FillHandler<T>, canFill?: (maker: T) => boolean): number {
    if (this.locked) lockedError();
    if (!Number.isSafeInteger(qty) || qty < 0) throw new RangeError(`match: qty must be a non-negative integer, got ${qty}`);
    const isBuy = takerSide === BUY;
    const levels = isBuy ? this.askLevels : this.bidLevels;
    this.locked = true; // stays set if onFill throws: see the file header
    sweep: while (qty > 0 && levels.length > 0) {
      const level = levels[levels.length - 1];
      const price = level.price;
      if (isBuy ? price > limitPrice : price < limitPrice) break;
      for (;;) {
        const maker = level.head as BookNode; // a level in the index is never empty
        if (canFill !== undefined && !canFill(maker as T)) break sweep;
        const rem = maker.remaining;
        if (rem > qty) {
          onFill(maker as T, qty, price);
          maker.remaining = rem - qty;
          level.total -= qty;
          qty = 0;
          break;
        }
        onFill(maker as T, rem, price);
        maker.remaining = 0;
        level.total -= rem;
        qty -= rem;
        // The head leaves: its prev is already null.
        const next = maker.next;
        maker.next = null;
        maker.level = null;
        level.count--;
        this.count--;
        if (next === null) {
          levels.pop();
          (isBuy ? this.askMap : this.bidMap).delete(price);
          this.freeLevel(level);
          break;
        }
        next.prev = null;
        level.head = next;
        if (qty === 0) break;
      }
    }
    this.locked = false;
    return qty;
  }

  /** Aggregated levels of one side, best first: `[price, total]` for up to `n` levels. */
  depth(side: Side, n: number): Array<[number, number]> {
    const levels = side === BUY ? this.bidLevels : this.askLevels;
    const out: Array<[number, number]> = [];
    for (let i = levels.length - 1; i >= 0 && out.length < n; i--) out.push([levels[i].price, levels[i].total]);
    return out;
  }

  /** Number of non-empty price levels on `side`. */
  levels(side: Side): number {
    return side === BUY ? this.bidLevels.length : this.askLevels.length;
  }

  /** Number of resting orders, both sides. */
  orderCount(): number {
    return this.count;
  }

  /**
   * Every resting order: bids best level first, then asks best level first, FIFO within a level.
   * Adding them in this order to an empty book rebuilds the same book, priorities included
   * (this is what snapshots rely on). Do not mutate the book while iterating.
   */
  *orders(): IterableIterator<T> {
    for (const levels of [this.bidLevels, this.askLevels]) {
      for (let i = levels.length - 1; i >= 0; i--) {
        for (let n = levels[i].head; n !== null; n = n.next) yield n as T;
      }
    }
  }

  private unlink(node: BookNode, level: PriceLevel): void {
    const prev = node.prev;
    const next = node.next;
    if (prev === null) level.head = next;
    else prev.next = next;
    if (next === null) level.tail = prev;
    else next.prev = prev;
    node.prev = null;
    node.next = null;
    node.level = null;
    this.count--;
    if (--level.count === 0) this.dropLevel(level, node.side === BUY);
  }

  private dropLevel(level: PriceLevel, isBuy: boolean): void {
    const levels = isBuy ? this.bidLevels : this.askLevels;
    const last = levels.length - 1;
    if (levels[last] === level) {
      levels.pop();
    } else {
      let i = findLevel(levels, level.price, isBuy);
      for (; i < last; i++) levels[i] = levels[i + 1];
      levels.pop();
    }
    (isBuy ? this.bidMap : this.askMap).delete(level.price);
    this.freeLevel(level);
  }

  private newLevel(price: number): PriceLevel {
    const level = this.freeLevels.pop();
    if (level === undefined) return new PriceLevel(price);
    level.price = price;
    return level;
  }

  private freeLevel(level: PriceLevel): void {
    level.total = 0;
    level.count = 0;
    level.head = null;
    level.tail = null;
    if (this.freeLevels.length < FREE_LEVELS_MAX) this.freeLevels.push(level);
  }
}

function lockedError(): never {
  throw new Error('order book mutated from inside a callback (or a previous callback threw)');
}

/** True when a level at price `a` ranks below (is worse than) one at price `b` on that side. */
function worse(a: number, b: number, isBuy: boolean): boolean {
  return isBuy ? a < b : a > b;
}

/** Index of the first level not worse than `price`, i.e. where a level at `price` sits or would go. */
function lowerBound(levels: PriceLevel[], price: number, isBuy: boolean): number {
  let lo = 0;
  let hi = levels.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (worse(levels[mid].price, price, isBuy)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function findLevel(levels: PriceLevel[], price: number, isBuy: boolean): number {
  const i = lowerBound(levels, price, isBuy);
  if (i >= levels.length || levels[i].price !== price) throw new Error(`price level ${price} missing from the sorted index`);
  return i;
}

function insertLevel(levels: PriceLevel[], level: PriceLevel, isBuy: boolean): void {
  const n = levels.length;
  // Fast path: a new best level (the common case near the touch) is a push.
  if (n === 0 || worse(levels[n - 1].price, level.price, isBuy)) {
    levels.push(level);
    return;
  }
  const at = lowerBound(levels, level.price, isBuy);
  levels.push(level);
  for (let i = n; i > at; i--) levels[i] = levels[i - 1];
  levels[at] = level;
}
