import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BUY, SELL, OrderBook } from '../../src/engine/orderBook.ts';
import type { BookNode, PriceLevel, Side } from '../../src/engine/orderBook.ts';

class Order implements BookNode {
  prev: BookNode | null = null;
  next: BookNode | null = null;
  level: PriceLevel | null = null;
  constructor(public id: number, public side: Side, public price: number, public remaining: number, public userId = 1) {}
}

type Fill = [makerId: number, qty: number, price: number];

function setup() {
  const book = new OrderBook<Order>();
  let nextId = 1;
  const add = (side: Side, price: number, qty: number): Order => {
    const o = new Order(nextId++, side, price, qty);
    book.add(o);
    return o;
  };
  const match = (side: Side, limit: number, qty: number): { left: number; fills: Fill[] } => {
    const fills: Fill[] = [];
    const left = book.match(side, limit, qty, (m, q, p) => { fills.push([m.id, q, p]); });
    return { left, fills };
  };
  const ids = () => [...book.orders()].map((o) => o.id);
  return { book, add, match, ids };
}

describe('OrderBook', () => {
  it('reports NaN best prices and no levels when empty', () => {
    const { book } = setup();
    assert.ok(Number.isNaN(book.bestBid()));
    assert.ok(Number.isNaN(book.bestAsk()));
    assert.equal(book.bestLevel(BUY), null);
    assert.equal(book.levels(SELL), 0);
    assert.equal(book.orderCount(), 0);
    assert.deepEqual(book.depth(BUY, 10), []);
  });

  it('rests orders and reports the best bid and ask', () => {
    const { book, add } = setup();
    add(BUY, 99, 1); add(BUY, 100, 2); add(SELL, 103, 3); add(SELL, 102, 4);
    assert.equal(book.bestBid(), 100);
    assert.equal(book.bestAsk(), 102);
    assert.equal(book.bestLevel(SELL)?.total, 4);
    assert.equal(book.orderCount(), 4);
  });

  it('fills the better price first, then the earlier order at the same price', () => {
    const { add, match } = setup();
    const a = add(SELL, 101, 5);
    const b = add(SELL, 100, 5);
    const c = add(SELL, 100, 5);
    const { left, fills } = match(BUY, 101, 12);
    assert.equal(left, 0);
    assert.deepEqual(fills, [[b.id, 5, 100], [c.id, 5, 100], [a.id, 2, 101]]);
  });

  it('leaves a partially filled maker at the head of its level with the rest', () => {
    const { book, add, match, ids } = setup();
    const a = add(BUY, 100, 10);
    const b = add(BUY, 100, 4);
    const { fills } = match(SELL, 100, 3);
    assert.deepEqual(fills, [[a.id, 3, 100]]);
    assert.equal(a.remaining, 7);
    assert.deepEqual(ids(), [a.id, b.id]);
    assert.deepEqual(book.depth(BUY, 5), [[100, 11]]);
    assert.deepEqual(match(SELL, 100, 8).fills, [[a.id, 7, 100], [b.id, 1, 100]]);
  });

  it('sweeps several levels best first, trading at each maker price', () => {
    const { book, add, match } = setup();
    add(BUY, 98, 1); add(BUY, 100, 2); add(BUY, 99, 3);
    const { left, fills } = match(SELL, 90, 5);
    assert.equal(left, 0);
    assert.deepEqual(fills.map((f) => [f[1], f[2]]), [[2, 100], [3, 99]]);
    assert.deepEqual(book.depth(BUY, 10), [[98, 1]]);
    assert.equal(book.levels(BUY), 1);
  });

  it('stops at the limit price and returns the unfilled quantity', () => {
    const { book, add, match } = setup();
    add(SELL, 100, 2); add(SELL, 101, 2); add(SELL, 102, 2);
    const { left, fills } = match(BUY, 101, 10);
    assert.equal(left, 6);
    assert.equal(fills.length, 2);
    assert.equal(book.bestAsk(), 102);
  });

  it('lets a market taker (NaN limit) sweep until the side is empty', () => {
    const { book, add, match } = setup();
    add(BUY, 100, 2); add(BUY, 50, 2); add(SELL, 200, 1);
    const { left, fills } = match(SELL, NaN, 7);
    assert.equal(left, 3);
    assert.equal(fills.length, 2);
    assert.equal(book.levels(BUY), 0);
    assert.ok(Number.isNaN(book.bestBid()));
    assert.equal(book.orderCount(), 1);
  });

  it('matches nothing and changes nothing for a zero quantity', () => {
    const { book, add, match } = setup();
    add(SELL, 100, 2);
    assert.deepEqual(match(BUY, 100, 0), { left: 0, fills: [] });
    assert.deepEqual(book.depth(SELL, 1), [[100, 2]]);
  });

  it('cancels from the head, the middle and the tail of a level, keeping the others in order', () => {
    const { book, add, ids, match } = setup();
    const o = [add(SELL, 100, 1), add(SELL, 100, 2), add(SELL, 100, 3), add(SELL, 100, 4), add(SELL, 100, 5)];
    assert.equal(book.remove(o[2]), true); // middle
    assert.deepEqual(ids(), [o[0].id, o[1].id, o[3].id, o[4].id]);
    assert.equal(book.remove(o[0]), true); // head
    assert.deepEqual(ids(), [o[1].id, o[3].id, o[4].id]);
    assert.equal(book.remove(o[4]), true); // tail
    assert.deepEqual(ids(), [o[1].id, o[3].id]);
    assert.deepEqual(book.depth(SELL, 1), [[100, 6]]);
    assert.equal(book.bestLevel(SELL)?.count, 2);
    const late = add(SELL, 100, 1); // the tail pointer survived the tail removal
    assert.deepEqual(match(BUY, 100, 7).fills.map((f) => f[0]), [o[1].id, o[3].id, late.id]);
    assert.equal(o[2].level, null);
    assert.equal(o[2].next, null);
  });

  it('returns false when removing an order that is not resting', () => {
    const { book, add, match } = setup();
    const a = add(BUY, 100, 1);
    match(SELL, 100, 1);
    assert.equal(book.remove(a), false);
    assert.equal(book.remove(new Order(99, BUY, 100, 1)), false);
  });

  it('drops an emptied level wherever it sits in the price index', () => {
    const { book, add } = setup();
    const mid = add(BUY, 99, 1);
    add(BUY, 100, 1); add(BUY, 98, 1);
    const best = add(BUY, 101, 1);
    book.remove(mid);
    assert.deepEqual(book.depth(BUY, 10), [[101, 1], [100, 1], [98, 1]]);
    book.remove(best);
    assert.deepEqual(book.depth(BUY, 10), [[100, 1], [98, 1]]);
    assert.equal(book.levels(BUY), 2);
    add(BUY, 99, 7); // re-creates the level in the right place
    assert.deepEqual(book.depth(BUY, 10), [[100, 1], [99, 7], [98, 1]]);
  });

  it('keeps level totals and counts in step with adds, fills, reductions and cancels', () => {
    const { book, add, match } = setup();
    const a = add(SELL, 100, 5);
    const b = add(SELL, 100, 7);
    const c = add(SELL, 100, 9);
    const level = book.bestLevel(SELL)!;
    assert.deepEqual([level.total, level.count], [21, 3]);
    match(BUY, 100, 6);
    assert.deepEqual([level.total, level.count], [15, 2]);
    book.reduce(c, 4);
    assert.deepEqual([level.total, level.count], [11, 2]);
    book.remove(b);
    assert.deepEqual([level.total, level.count], [5, 1]);
    assert.equal(a.level, null);
    assert.equal(c.remaining, 5);
  });

  it('lists depth best first on both sides, honouring the level limit', () => {
    const { book, add } = setup();
    for (const p of [97, 103, 99, 95, 101]) add(BUY, p, p - 90);
    for (const p of [110, 104, 108, 106]) { add(SELL, p, 1); add(SELL, p, 2); }
    assert.deepEqual(book.depth(BUY, 10), [[103, 13], [101, 11], [99, 9], [97, 7], [95, 5]]);
    assert.deepEqual(book.depth(BUY, 2), [[103, 13], [101, 11]]);
    assert.deepEqual(book.depth(SELL, 3), [[104, 3], [106, 3], [108, 3]]);
    assert.deepEqual(book.depth(SELL, 0), []);
  });

  it('walks the makers a taker would meet, best first, without mutating the book', () => {
    const { book, add, ids } = setup();
    const a = add(SELL, 101, 1);
    const b = add(SELL, 100, 2);
    const c = add(SELL, 100, 3);
    add(SELL, 102, 4);
    const before = { depth: book.depth(SELL, 10), ids: ids(), rem: [a.remaining, b.remaining, c.remaining] };
    const seen: number[] = [];
    book.walk(BUY, 101, (m) => { seen.push(m.id); return true; });
    assert.deepEqual(seen, [b.id, c.id, a.id]);
    assert.deepEqual({ depth: book.depth(SELL, 10), ids: ids(), rem: [a.remaining, b.remaining, c.remaining] }, before);
  });

  it('stops walking when the visitor returns false, and walks everything for a market taker', () => {
    const { book, add } = setup();
    add(BUY, 100, 1); add(BUY, 99, 1); add(BUY, 10, 1);
    let visits = 0;
    book.walk(SELL, NaN, () => ++visits < 2);
    assert.equal(visits, 2);
    visits = 0;
    book.walk(SELL, NaN, () => { visits++; return true; });
    assert.equal(visits, 3);
  });

  it('keeps time priority when an order is reduced, and removes it when reduced to zero', () => {
    const { book, add, match, ids } = setup();
    const a = add(BUY, 100, 10);
    const b = add(BUY, 100, 10);
    book.reduce(a, 9);
    assert.deepEqual(ids(), [a.id, b.id]);
    assert.deepEqual(match(SELL, 100, 2).fills, [[a.id, 1, 100], [b.id, 1, 100]]);
    book.reduce(b, 9);
    assert.equal(book.orderCount(), 0);
    assert.equal(book.levels(BUY), 0);
    assert.equal(b.level, null);
  });

  it('rejects a reduction larger than the remaining quantity or of an order that is not resting', () => {
    const { book, add } = setup();
    const a = add(BUY, 100, 3);
    assert.throws(() => book.reduce(a, 4), RangeError);
    assert.throws(() => book.reduce(a, 0), RangeError);
    assert.throws(() => book.reduce(a, 1.5), RangeError);
    assert.equal(a.remaining, 3);
    book.remove(a);
    assert.throws(() => book.reduce(a, 1));
  });

  it('rejects resting an order twice, a non-positive quantity or a non-integer price', () => {
    const { book, add } = setup();
    const a = add(BUY, 100, 3);
    assert.throws(() => book.add(a));
    assert.throws(() => book.add(new Order(50, BUY, 100, 0)), RangeError);
    assert.throws(() => book.add(new Order(51, SELL, 100.5, 1)), RangeError);
    assert.throws(() => book.add(new Order(52, 2 as Side, 100, 1)), RangeError);
    assert.equal(book.orderCount(), 1);
  });

  it('calls onFill before applying the fill: the maker is linked and still has its pre-fill quantity', () => {
    const { book, add } = setup();
    const a = add(SELL, 100, 3);
    const b = add(SELL, 100, 5);
    const seen: Array<[number, number, number, boolean, number | undefined]> = [];
    book.match(BUY, 100, 4, (m, q) => { seen.push([m.id, q, m.remaining, m.level !== null, m.level?.total]); });
    assert.deepEqual(seen, [[a.id, 3, 3, true, 8], [b.id, 1, 5, true, 5]]);
    assert.deepEqual([a.remaining, a.level, b.remaining], [0, null, 4]);
  });

  it('throws if a callback tries to mutate the book, and stays locked if onFill threw', () => {
    const { book, add } = setup();
    const a = add(SELL, 100, 3);
    add(SELL, 101, 3);
    assert.throws(() => book.walk(BUY, NaN, () => { book.remove(a); return true; }));
    assert.equal(book.remove(a), true); // walk unlocks on the way out
    assert.throws(() => book.match(BUY, NaN, 1, (m) => { book.remove(m); }));
    assert.throws(() => add(SELL, 102, 1));
  });

  it('yields every resting order so that re-adding them rebuilds the same book', () => {
    const { book, add, match } = setup();
    add(BUY, 100, 1); add(BUY, 99, 2); add(BUY, 100, 3); add(SELL, 105, 4); add(SELL, 104, 5); add(SELL, 105, 6);
    match(SELL, 100, 2);
    const copy = new OrderBook<Order>();
    for (const o of book.orders()) copy.add(new Order(o.id, o.side, o.price, o.remaining));
    assert.deepEqual([...copy.orders()].map((o) => [o.id, o.remaining]), [...book.orders()].map((o) => [o.id, o.remaining]));
    assert.deepEqual(copy.depth(BUY, 9), book.depth(BUY, 9));
    assert.deepEqual(copy.depth(SELL, 9), book.depth(SELL, 9));
  });

  it('keeps many levels sorted whatever order they are created in', () => {
    const { book, add } = setup();
    const prices = Array.from({ length: 200 }, (_, i) => (i * 7919) % 200);
    for (const p of prices) add(BUY, p, 1);
    for (const p of prices) add(SELL, 1000 + p, 1);
    const bids = book.depth(BUY, 1000).map((l) => l[0]);
    const asks = book.depth(SELL, 1000).map((l) => l[0]);
    assert.deepEqual(bids, [...bids].sort((x, y) => y - x));
    assert.deepEqual(asks, [...asks].sort((x, y) => x - y));
    assert.equal(bids.length, 200);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: the book behaves exactly like an obviously correct reference book made of arrays.

interface RefOrder { id: number; side: Side; price: number; remaining: number; seq: number }

/** Obviously correct and slow: a flat list, sorted on demand. */
class ReferenceBook {
  orders: RefOrder[] = [];
  private seq = 0;
  add(id: number, side: Side, price: number, qty: number): void {
    this.orders.push({ id, side, price, remaining: qty, seq: this.seq++ });
  }
  remove(id: number): void {
    this.orders = this.orders.filter((o) => o.id !== id);
  }
  reduce(id: number, qty: number): void {
    const o = this.orders.find((x) => x.id === id)!;
    o.remaining -= qty;
    if (o.remaining === 0) this.remove(id);
  }
  /** Makers of the side a taker of `side` meets, in priority order. */
  queue(makerSide: Side): RefOrder[] {
    return this.orders.filter((o) => o.side === makerSide)
      .sort((a, b) => (a.price !== b.price ? (makerSide === BUY ? b.price - a.price : a.price - b.price) : a.seq - b.seq));
  }
  match(side: Side, limit: number, qty: number): { left: number; fills: Fill[] } {
    const fills: Fill[] = [];
    for (const m of this.queue(side === BUY ? SELL : BUY)) {
      if (qty === 0) break;
      if (!Number.isNaN(limit) && (side === BUY ? m.price > limit : m.price < limit)) break;
      const f = Math.min(qty, m.remaining);
      fills.push([m.id, f, m.price]);
      qty -= f;
      m.remaining -= f;
    }
    this.orders = this.orders.filter((o) => o.remaining > 0);
    return { left: qty, fills };
  }
  depth(side: Side): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (const o of this.queue(side)) {
      if (out.length > 0 && out[out.length - 1][0] === o.price) out[out.length - 1][1] += o.remaining;
      else out.push([o.price, o.remaining]);
    }
    return out;
  }
  /** Same order as OrderBook.orders(): bids best first, then asks best first, FIFO within a level. */
  all(): number[] {
    return [...this.queue(BUY), ...this.queue(SELL)].map((o) => o.id);
  }
}

type Op =
  | { t: 'limit'; side: Side; price: number; qty: number }
  | { t: 'post'; side: Side; price: number; qty: number }
  | { t: 'market'; side: Side; qty: number }
  | { t: 'cancel'; pick: number }
  | { t: 'reduce'; pick: number; qty: number }
  | { t: 'walk'; side: Side; price: number; stopAfter: number };

const sideArb = fc.constantFrom<Side>(BUY, SELL);
const priceArb = fc.integer({ min: 95, max: 105 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('limit' as const), side: sideArb, price: priceArb, qty: fc.integer({ min: 1, max: 10 }) }) },
  // rests without matching first, so the book may end up crossed: sides must stay independent
  { weight: 1, arbitrary: fc.record({ t: fc.constant('post' as const), side: sideArb, price: priceArb, qty: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('market' as const), side: sideArb, qty: fc.integer({ min: 1, max: 25 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('reduce' as const), pick: fc.nat(), qty: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('walk' as const), side: sideArb, price: fc.oneof(priceArb, fc.constant(NaN)), stopAfter: fc.integer({ min: 1, max: 30 }) }) },
);

describe('OrderBook against a reference book', () => {
  it('produces the same fills, depth and order sequence after every step of random add/cancel/match streams', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200, size: 'max' }), (ops) => {
        const book = new OrderBook<Order>();
        const ref = new ReferenceBook();
        const nodes = new Map<number, Order>();
        let nextId = 1;
        const onFillLog: Fill[] = [];
        const onFill = (m: Order, q: number, p: number) => {
          onFillLog.push([m.id, q, p]);
          assert.ok(q <= m.remaining && m.level !== null);
          if (m.remaining === q) nodes.delete(m.id);
        };
        const live = () => [...nodes.keys()].sort((a, b) => a - b);
        for (const op of ops) {
          switch (op.t) {
            case 'limit':
            case 'post': {
              const id = nextId++;
              let left = op.qty;
              if (op.t === 'limit') {
                onFillLog.length = 0;
                left = book.match(op.side, op.price, op.qty, onFill);
                const r = ref.match(op.side, op.price, op.qty);
                assert.deepEqual(onFillLog, r.fills);
                assert.equal(left, r.left);
              }
              if (left > 0) {
                const o = new Order(id, op.side, op.price, left);
                book.add(o);
                nodes.set(id, o);
                ref.add(id, op.side, op.price, left);
              }
              break;
            }
            case 'market': {
              onFillLog.length = 0;
              const left = book.match(op.side, NaN, op.qty, onFill);
              const r = ref.match(op.side, NaN, op.qty);
              assert.deepEqual(onFillLog, r.fills);
              assert.equal(left, r.left);
              break;
            }
            case 'cancel': {
              const ids = live();
              if (ids.length === 0) break;
              const id = ids[op.pick % ids.length];
              assert.equal(book.remove(nodes.get(id)!), true);
              nodes.delete(id);
              ref.remove(id);
              break;
            }
            case 'reduce': {
              const ids = live();
              if (ids.length === 0) break;
              const id = ids[op.pick % ids.length];
              const node = nodes.get(id)!;
              const qty = Math.min(op.qty, node.remaining);
              book.reduce(node, qty);
              if (node.remaining === 0) nodes.delete(id);
              ref.reduce(id, qty);
              break;
            }
            case 'walk': {
              const before = [book.depth(BUY, 99), book.depth(SELL, 99), [...book.orders()].map((o) => o.id)];
              const seen: number[] = [];
              book.walk(op.side, op.price, (m) => { seen.push(m.id); return seen.length < op.stopAfter; });
              const expected = ref.queue(op.side === BUY ? SELL : BUY)
                .filter((m) => Number.isNaN(op.price) || (op.side === BUY ? m.price <= op.price : m.price >= op.price))
                .slice(0, op.stopAfter).map((m) => m.id);
              assert.deepEqual(seen, expected);
              assert.deepEqual([book.depth(BUY, 99), book.depth(SELL, 99), [...book.orders()].map((o) => o.id)], before);
              break;
            }
          }
          const bids = ref.depth(BUY);
          const asks = ref.depth(SELL);
          assert.deepEqual(book.depth(BUY, 1000), bids);
          assert.deepEqual(book.depth(SELL, 1000), asks);
          assert.equal(book.levels(BUY), bids.length);
          assert.equal(book.levels(SELL), asks.length);
          assert.equal(book.bestBid(), bids.length ? bids[0][0] : NaN);
          assert.equal(book.bestAsk(), asks.length ? asks[0][0] : NaN);
          assert.equal(book.orderCount(), ref.orders.length);
          assert.deepEqual([...book.orders()].map((o) => o.id), ref.all());
          for (const o of ref.orders) assert.equal(nodes.get(o.id)?.remaining, o.remaining);
        }
      }),
      { numRuns: 300 },
    );
  });
});
