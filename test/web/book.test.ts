// The web app's book rebuild (web/src/lib/book.ts): a snapshot, then changes chained by
// prev_change_id; a gap empties the book until a fresh snapshot. Checked against the server's own
// notifications in the browser story; here against hand-made and random message streams.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Book, type BookMessage, type LevelChange } from '../../web/src/lib/book.ts';

const I = 'BTC-27MAR26-100000-C';
const snap = (id: number, bids: [number, number][], asks: [number, number][]): BookMessage => ({
  type: 'snapshot',
  instrument_name: I,
  change_id: id,
  bids: bids.map(([p, a]) => ['new', p, a]),
  asks: asks.map(([p, a]) => ['new', p, a]),
});
const change = (prev: number, id: number, bids: LevelChange[], asks: LevelChange[] = []): BookMessage => ({ type: 'change', instrument_name: I, prev_change_id: prev, change_id: id, bids, asks });

describe('web book rebuild', () => {
  it('applies a snapshot and chained changes, best prices first, with cumulative sizes', () => {
    const b = new Book(I);
    assert.equal(b.apply(snap(10, [[0.04, 1], [0.039, 2]], [[0.042, 0.5]])), 'ok');
    assert.equal(b.apply(change(10, 11, [['new', 0.0395, 0.3], ['delete', 0.039, 0]], [['change', 0.042, 0.2], ['new', 0.045, 1]])), 'ok');
    assert.deepEqual(b.levels(), { bids: [[0.04, 1], [0.0395, 0.3]], asks: [[0.042, 0.2], [0.045, 1]] });
    assert.deepEqual(b.bidLadder().map((r) => r.cumulative), [1, 1.3]);
    assert.deepEqual(b.askLadder().map((r) => r.cumulative), [0.2, 1.2]);
    assert.equal(b.changeId, 11);
  });

  it('reports a gap when a change does not follow the last one, and stays empty until a snapshot', () => {
    const b = new Book(I);
    assert.equal(b.apply(change(1, 2, [['new', 0.01, 1]])), 'gap', 'a change before any snapshot');
    b.apply(snap(5, [[0.01, 1]], []));
    assert.equal(b.apply(change(6, 7, [['new', 0.02, 1]])), 'gap');
    assert.equal(b.ready, false);
    assert.deepEqual(b.levels(), { bids: [], asks: [] });
    assert.equal(b.apply(change(7, 8, [['new', 0.03, 1]])), 'gap', 'still stale');
    b.apply(snap(8, [[0.03, 1]], []));
    assert.equal(b.apply(change(8, 9, [['change', 0.03, 2]])), 'ok');
    assert.deepEqual(b.levels().bids, [[0.03, 2]]);
  });

  it('ignores another instrument and cuts the ladder at the depth asked', () => {
    const b = new Book(I);
    assert.equal(b.apply({ ...snap(1, [], []), instrument_name: 'ETH-1' }), 'ignored');
    b.apply(snap(1, Array.from({ length: 30 }, (_, k) => [0.05 - k * 0.0005, 1] as [number, number]), []));
    assert.equal(b.bidLadder(20).length, 20);
    assert.equal(b.bidLadder(20)[19].cumulative, 20);
  });

  it('rebuilds the same book as the levels it was sent, for any stream of changes', () => {
    const level = fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 5 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.array(level, { maxLength: 6 }), fc.array(level, { maxLength: 6 })), { maxLength: 30 }), (steps) => {
        // the "server": the true book, and the diffs it sends
        const truth = { bids: new Map<number, number>(), asks: new Map<number, number>() };
        const b = new Book(I);
        b.apply(snap(0, [], []));
        let id = 0;
        for (const [bids, asks] of steps) {
          const diff = (side: Map<number, number>, ls: [number, number][]): LevelChange[] => {
            const out: LevelChange[] = [];
            for (const [t, a] of ls) {
              const p = t / 10000;
              if (a === 0) {
                if (side.delete(p)) out.push(['delete', p, 0]);
              } else {
                out.push([side.has(p) ? 'change' : 'new', p, a / 10]);
                side.set(p, a / 10);
              }
            }
            return out;
          };
          const msg = change(id, id + 1, diff(truth.bids, bids), diff(truth.asks, asks));
          id++;
          assert.equal(b.apply(msg), 'ok');
        }
        const sorted = (m: Map<number, number>, desc: boolean) => [...m.entries()].sort((x, y) => (desc ? y[0] - x[0] : x[0] - y[0])).slice(0, 20);
        assert.deepEqual(b.levels(), { bids: sorted(truth.bids, true), asks: sorted(truth.asks, false) });
      }),
    );
  });
});
