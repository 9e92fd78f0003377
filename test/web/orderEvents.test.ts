// The web app's own open orders laid over a snapshot from user.changes (web/src/lib/orderEvents.ts):
// hand-made cases, then random histories of orders placed, edited, filled and cancelled, read by a
// snapshot at one moment and heard from a subscription live since an earlier one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { notCaughtUp, overlay, withHeard } from '../../web/src/lib/orderEvents.ts';
import type { Order } from '../../web/src/lib/types.ts';

const order = (id: string, ts: number, state = 'open', price = 0.01, created = 1): Order => ({
  order_id: id,
  instrument_name: 'BTC-27MAR26-100000-C',
  direction: 'buy',
  price,
  amount: 1,
  filled_amount: state === 'filled' ? 1 : 0,
  order_state: state,
  order_type: 'limit',
  label: '',
  time_in_force: 'good_til_cancelled',
  post_only: false,
  reduce_only: false,
  creation_timestamp: created,
  last_update_timestamp: ts,
  average_price: 0,
});
const shown = (os: Order[]) => os.map((o) => `${o.order_id}@${o.last_update_timestamp}`);

describe('own orders from user.changes over a snapshot', () => {
  it('shows an order placed after the snapshot and hides one cancelled after it', () => {
    const snapshot = [order('a', 1), order('b', 2)];
    const heard = withHeard(new Map(), [order('c', 5, 'open', 0.01, 5), order('a', 6, 'cancelled')]);
    assert.deepEqual(shown(overlay(snapshot, heard)), ['b@2', 'c@5']);
  });

  it('an edit heard replaces the snapshot row; an older heard state never replaces a newer one', () => {
    const snapshot = [order('a', 7, 'open', 0.02)];
    assert.deepEqual(shown(overlay(snapshot, withHeard(new Map(), [order('a', 4, 'open', 0.01)]))), ['a@7']);
    const heard = withHeard(withHeard(new Map(), [order('a', 9, 'open', 0.03)]), [order('a', 8, 'open', 0.05)]);
    assert.equal(overlay(snapshot, heard)[0].price, 0.03);
  });

  it('keeps only what a fresh snapshot has not caught up with', () => {
    const heard = withHeard(new Map(), [order('a', 5), order('b', 6, 'filled'), order('c', 7), order('d', 8)]);
    // the snapshot has a at its heard state, has forgotten filled b, has c older, lacks d
    const left = notCaughtUp(heard, [order('a', 5), order('c', 3)]);
    assert.deepEqual([...left.keys()].sort(), ['c', 'd']);
  });

  it('matches the true open orders for random histories, snapshots and subscription starts', () => {
    // an order's history: placed at a time, then a few later changes, the last maybe a close
    const history = fc.record({
      placed: fc.integer({ min: 1, max: 50 }),
      steps: fc.array(fc.record({ gap: fc.integer({ min: 1, max: 10 }), state: fc.constantFrom('open', 'open', 'filled', 'cancelled') }), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(fc.array(history, { maxLength: 12 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (hs, a, b, c) => {
        // every change with its own time (a notification never carries two states of one order at one time)
        let clock = 0;
        const changes: Order[] = [];
        hs.forEach((h, k) => {
          let t = h.placed * 100 + k;
          const id = `o${k}`;
          changes.push(order(id, t, 'open', 0.01, t));
          for (const s of h.steps) {
            if (changes[changes.length - 1].order_state !== 'open') break;
            t += s.gap * 100;
            changes.push(order(id, t, s.state, 0.01 + s.gap / 1000, h.placed * 100 + k));
          }
          clock = Math.max(clock, t);
        });
        const stateAt = (time: number) => {
          const latest = new Map<string, Order>();
          for (const o of changes) if (o.last_update_timestamp <= time && (latest.get(o.order_id)?.last_update_timestamp ?? -1) < o.last_update_timestamp) latest.set(o.order_id, o);
          return [...latest.values()].filter((o) => o.order_state === 'open').sort((x, y) => x.creation_timestamp - y.creation_timestamp);
        };
        const [subscribed, read, reread] = [a, b, c].map((x) => Math.floor((x / 100) * (clock + 1))).sort((x, y) => x - y);
        // heard: every change after the subscription was live, in time order, in batches of any size
        const heardInOrder = changes.filter((o) => o.last_update_timestamp > subscribed).sort((x, y) => x.last_update_timestamp - y.last_update_timestamp);
        let heard: Map<string, Order> = new Map();
        for (let i = 0; i < heardInOrder.length; i += 3) heard = withHeard(heard, heardInOrder.slice(i, i + 3));
        const truth = shown(stateAt(clock + 1)).sort();
        assert.deepEqual(shown(overlay(stateAt(read), heard)).sort(), truth);
        // a later snapshot (still older than the last change, or not) prunes without changing what shows
        const later = stateAt(reread);
        const kept = notCaughtUp(heard, later);
        assert.deepEqual(shown(overlay(later, kept)).sort(), truth);
        assert.ok(kept.size <= heard.size);
        // a snapshot after every change leaves nothing heard to keep
        assert.equal(notCaughtUp(heard, stateAt(clock + 1)).size, 0);
      }),
      { numRuns: 500 },
    );
  });
});
