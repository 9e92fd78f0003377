// The snapshot's text (src/engine/snapshot.ts serialize): its orders and trades are written last, in
// lines of rows, so restore parses one line at a time instead of building a tree of the whole
// state. The text stays one JSON document; a snapshot written before the lines (one line, parsed
// whole) still restores to the same engine; and a text whose lines were cut or run on is refused,
// never restored as a smaller book.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { markPrice } from '../risk/portfolio/pmHarness.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

/** A book with well over one line of orders and of trades, labels that hold a newline and the orders key. */
function busyEngine() {
  const h = Harness.market([CALL], { ...DEFAULT_LIMITS, maxOpenOrdersPerInstrument: 1000 });
  const a = h.user('1000');
  const b = h.user('1000');
  // prices in price units (0.0001 BTC), inside the bands around the mark, on the 0.0005 grid
  const mark = Math.floor(px(markPrice(h, CALL.name)) / 5) * 5;
  const price = (units: number) => (units / 10_000).toFixed(4);
  for (let i = 0; i < 700; i++) {
    // a resting bid, then an ask that fills it: one closed order pair and one trade each time
    h.ok(a, 'buy', CALL.name, price(mark), '0.1', { label: i % 100 === 0 ? `line\nbreak,"orders":[${i}` : `bid${i}` });
    h.ok(b, 'sell', CALL.name, price(mark), '0.1', { tif: 'immediate_or_cancel' });
  }
  // and some that stay open
  for (let i = 0; i < 600; i++) h.ok(a, 'buy', CALL.name, price(mark - 5 - (i % 50) * 5), '0.1');
  return h;
}

describe('the snapshot text in lines', () => {
  const h = busyEngine();
  const text = serialize(h.ex);
  const lines = text.split('\n');
  const parsed = JSON.parse(text) as { orders: unknown[][]; trades: unknown[][] };

  it('is one JSON document whose orders and trades come last, in lines of rows', () => {
    assert.equal(parsed.trades.length, 700);
    assert.ok(parsed.orders.length >= 2000, `${parsed.orders.length} orders`);
    // the head, then the order lines, then `],"trades":[`, the trade lines, and `]}`
    assert.ok(lines[0]!.endsWith(',"orders":['));
    const head = JSON.parse(`${lines[0]!.slice(0, -',"orders":['.length)}}`) as Record<string, unknown>;
    assert.equal(head.orders, undefined);
    assert.equal(head.trades, undefined);
    assert.deepEqual(head.rows, [parsed.orders.length, 700]);
    assert.ok(lines.includes('],"trades":['));
    assert.equal(lines.at(-1), ']}');
    const orderLines = lines.indexOf('],"trades":[') - 1;
    assert.equal(orderLines, Math.ceil(parsed.orders.length / 512));
    assert.equal(lines.length - orderLines - 3, Math.ceil(700 / 512));
    // a label's newline stays escaped inside its string: no line starts inside a row
    assert.ok(text.includes('line\\nbreak,\\"orders\\":['));
  });

  it('restores to the same engine, and writes the same text again', () => {
    const back = restore(text, h.ex.limits);
    assert.equal(stateHash(back), stateHash(h.ex));
    assert.equal(serialize(back), text);
  });

  it('still restores a snapshot written before the lines (one line, parsed whole)', () => {
    const legacy = JSON.stringify(parsed);
    assert.ok(!legacy.includes('\n'));
    const back = restore(legacy, h.ex.limits);
    assert.equal(stateHash(back), stateHash(h.ex));
    assert.equal(serialize(back), text);
  });

  it('refuses a text with a line cut, a line run on, or text past its end', () => {
    const dropLine = (i: number) => [...lines.slice(0, i), ...lines.slice(i + 1)].join('\n');
    // an order line gone (as a lost part would take it) or said twice: fewer or more rows than the head counts
    assert.throws(() => restore(dropLine(3)), /in the lines, the head says/);
    assert.throws(() => restore(dropLine(lines.indexOf('],"trades":[') - 1)), /in the lines, the head says/);
    assert.throws(() => restore([...lines.slice(0, 3), lines[2], ...lines.slice(3)].join('\n')), /in the lines, the head says/);
    // a full trade line gone (the first of the two: 512 of the 700 trades)
    const firstTradeLine = lines.indexOf('],"trades":[') + 1;
    assert.throws(() => restore(dropLine(firstTradeLine)), /trades in the lines, the head says/);
    // the line between orders and trades gone: the trade rows are read as orders, and refused as such
    assert.throws(() => restore(dropLine(lines.indexOf('],"trades":['))));
    // cut short inside the trades
    assert.throws(() => restore(text.slice(0, text.length - 3)));
    assert.throws(() => restore(`${text}\n{}`), /after the end|expected/);
    // a head that does not end at the orders key, or does not count its rows
    assert.throws(() => restore(text.replace(/"rows":\[\d+,\d+\],/, '')), /does not count its rows/);
    assert.throws(() => restore(text.replace(',"orders":[\n', ',"orders":[1,\n')), /do not follow the head/);
  });
});
