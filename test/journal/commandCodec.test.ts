import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Sequenced } from '../../src/engine/commands.ts';
import { decodeCommand, encodeCommand, encodeCompact } from '../../src/journal/commandCodec.ts';

const place = (over: Record<string, unknown> = {}): Sequenced =>
  ({
    t: 'place', userId: 85, side: 0, instrument: 'BTC-4DEC26-106000-C', price: 50, advanced: null, advPrice: null, lots: 10_000_000,
    type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
    ...over, ts: 1_795_544_834_604, seq: 30_000,
  }) as unknown as Sequenced;

/** Decoded from its record text (seq and ts come from the record's columns), as replay reads it. */
const roundTrip = (c: Sequenced): Sequenced => decodeCommand(encodeCommand(c), c.seq, c.ts);

/** Same values and the same key order (JSON text compares both). */
function assertSame(actual: unknown, expected: unknown, msg?: string): void {
  assert.equal(JSON.stringify(actual), JSON.stringify(expected), msg);
  assert.deepEqual(actual, expected, msg);
}

test('the hot commands are written compactly and read back with the same values and key order', () => {
  const cmds: Sequenced[] = [
    place(),
    place({ side: 1, price: null, type: 'market', tif: 'immediate_or_cancel', label: 'bot 7 ü', clientOrderId: 'abc-1', reduceOnly: true }),
    place({ price: null, advanced: 'implv', advPrice: 61.25, postOnly: true, rejectPostOnly: true }),
    place({ mmp: true }),
    { t: 'cancel', userId: 3, orderId: 123_456, ts: 5, seq: 9 } as Sequenced,
    { t: 'edit', userId: 3, orderId: 7, lots: 20_000_000, price: null, postOnly: null, rejectPostOnly: false, ts: 5, seq: 10 } as Sequenced,
    { t: 'edit', userId: 3, orderId: 7, lots: 1, price: 105, postOnly: true, rejectPostOnly: null, mmp: false, ts: 5, seq: 11 } as Sequenced,
    { t: 'index', currency: 'ETH', price: 4012.37, manual: false, by: null, ts: 6, seq: 12 } as Sequenced,
    { t: 'index', currency: 'BTC', price: 100_000, manual: true, by: 1, ts: 6, seq: 13 } as Sequenced,
  ];
  for (const c of cmds) {
    const text = encodeCompact(c);
    assert.ok(text !== null && !text.startsWith('{'), `${c.t} is compact: ${text}`);
    assert.ok(!text.includes(String(c.seq)) || c.t !== 'place', 'seq is not repeated in the text (it is a column)');
    assertSame(roundTrip(c), c, text);
  }
  const json = JSON.stringify(place());
  const compact = encodeCompact(place())!;
  assert.ok(compact.length * 3 < json.length, `a resting order's record is a third of its JSON or less (${compact.length} vs ${json.length} bytes)`);
});

test('a command the compact form cannot hold exactly stays JSON, and reads back as JSON would give it', () => {
  const cases: Array<[string, Sequenced]> = [
    ['a label with the separator', place({ label: 'a|b' })],
    ['a lone surrogate (no UTF-8 form)', place({ label: 'x\ud800' })],
    ['a control character', place({ clientOrderId: 'a\u0000' })],
    ['an empty client_order_id (null is written as empty)', place({ clientOrderId: '' })],
    ['a trigger order (nested)', place({ trig: { type: 'stop_limit', source: 'mark', price: 90, offset: null } })],
    ['NaN', place({ price: Number.NaN })],
    ['-0', place({ advPrice: -0 })],
    ['a key present with undefined', place({ mmp: undefined })],
    ['a string where a number belongs', place({ lots: '10' })],
    ['an unknown key', place({ extra: 1 })],
    ['keys in another order', { t: 'cancel', orderId: 1, userId: 2, ts: 1, seq: 1 } as unknown as Sequenced],
    ['a command with no compact form', { t: 'deposit', userId: 1, currency: 'BTC', amount: 5, depositId: null, by: 1, ts: 1, seq: 2 } as Sequenced],
  ];
  for (const [what, c] of cases) {
    assert.equal(encodeCompact(c), null, what);
    const text = encodeCommand(c);
    assert.equal(text, JSON.stringify(c), what);
    assertSame(decodeCommand(text, c.seq, c.ts), JSON.parse(JSON.stringify(c)), what);
  }
});

test('a record written before the compact form (JSON, seq and ts inside) decodes as it always did', () => {
  // verbatim from a journal written by the server before this encoding
  const old =
    '{"t":"place","userId":85,"side":0,"instrument":"BTC-4DEC26-106000-C","price":50,"advanced":null,"advPrice":null,"lots":10000000,"type":"limit","tif":"good_til_cancelled","postOnly":false,"rejectPostOnly":false,"reduceOnly":false,"label":"","clientOrderId":null,"ts":1795544834604,"seq":30000}';
  assertSame(decodeCommand(old, 30_000, 1_795_544_834_604), place());
  assert.equal(encodeCommand(place()), encodeCompact(place()), 'new records of the same command are compact');
});

test('an unknown tag is refused, not guessed at', () => {
  assert.throws(() => decodeCommand('Z|1|2', 1, 1), /neither JSON nor a known compact command/);
  assert.throws(() => decodeCommand('C|1', 1, 1), /neither JSON nor a known compact command/, 'a field short');
  assert.throws(() => decodeCommand('C|1|2|3', 1, 1), /neither JSON nor a known compact command/, 'a field too many');
  const placed = encodeCompact(place())!;
  assert.throws(() => decodeCommand(placed.slice(0, placed.lastIndexOf('|')), 1, 1), /neither JSON nor a known compact command/, 'a place a field short');
  assert.throws(() => decodeCommand(`${placed}|1|`, 1, 1), /neither JSON nor a known compact command/, 'a place two fields too many');
  assert.throws(() => decodeCommand(`PX${placed.slice(1)}`, 1, 1), /neither JSON nor a known compact command/, 'a tag of two letters');
  assert.throws(() => decodeCommand('C', 1, 1), /neither JSON nor a known compact command/, 'a tag alone');
});

test('numbers read back as + reads their text, whether digits only or not', () => {
  // the decoder computes plain digit runs itself and hands the rest to +: both must agree with +
  const texts = ['0', '7', '10000000', '999999999999999', '1000000000000000', '12345678901234567', '61.25', '-5', '1e+21', '5e-324', '0.1'];
  for (const n of texts) {
    const got = decodeCommand(`C|${n}|${n}`, 1, 1) as Extract<Sequenced, { t: 'cancel' }>;
    assert.ok(Object.is(got.userId, +n) && Object.is(got.orderId, +n), n);
  }
});

test('any place command reads back from its record exactly as the engine applies it live', () => {
  // live, the sequencer applies a compact-encodable command as is; anything else as parsed from its JSON
  const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
  const num = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -0, Number.NaN, 1e21, 5e-324));
  const str = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', '|', 'a|', '{'));
  const cmd = fc
    .record({
      userId: num, side: fc.constantFrom(0, 1), instrument: str, price: maybe(num), advanced: maybe(fc.constantFrom('usd', 'implv')), advPrice: maybe(num),
      lots: num, type: fc.constantFrom('limit', 'market'), tif: str, postOnly: fc.boolean(), rejectPostOnly: fc.boolean(), reduceOnly: fc.boolean(),
      label: str, clientOrderId: maybe(str), mmp: fc.option(fc.boolean(), { nil: undefined }), cod: fc.option(fc.boolean(), { nil: undefined }),
    })
    .map((r) => {
      const { mmp, cod, ...rest } = r;
      return { t: 'place', ...rest, ...(mmp !== undefined ? { mmp } : {}), ...(cod !== undefined ? { cod } : {}), ts: 1, seq: 2 } as unknown as Sequenced;
    });
  fc.assert(
    fc.property(cmd, (c) => {
      const text = encodeCommand(c);
      const compact = encodeCompact(c);
      if (compact !== null) {
        // stored as UTF-8 text by SQLite and PostgreSQL: it must survive that unchanged (no lone
        // surrogate) and hold no NUL (PostgreSQL text refuses it)
        assert.equal(Buffer.from(compact, 'utf8').toString('utf8'), compact);
        assert.ok(!compact.includes('\0'));
      }
      const applied = compact !== null ? c : JSON.parse(JSON.stringify(c));
      assertSame(decodeCommand(text, c.seq, c.ts), applied);
    }),
    { numRuns: 500 },
  );
});

test('cancel-on-disconnect\'s mark is one trailing field, only when set: other records are as long as before, and old ones decode without it', () => {
  // the compact record of an ordinary order, as every journal before the mark holds it
  const before = 'P|85|0|BTC-4DEC26-106000-C|50|||10000000|limit|good_til_cancelled|0|0|0|||';
  assert.equal(encodeCompact(place()), before, 'an unmarked order is written exactly as before');
  assertSame(decodeCommand(before, 30_000, 1_795_544_834_604), place(), 'an old record decodes with no cod key');
  assert.ok(!('cod' in decodeCommand(before, 1, 1)));
  assert.equal(encodeCompact(place({ cod: true })), `${before}|1`);
  const edit = (over: Record<string, unknown>) => ({ t: 'edit', userId: 3, orderId: 7, lots: 1, price: null, postOnly: null, rejectPostOnly: null, ...over, ts: 5, seq: 10 }) as unknown as Sequenced;
  const marked = [place({ cod: true }), place({ mmp: true, cod: true }), place({ mmp: false, cod: true }), edit({ cod: true }), edit({ mmp: true, cod: true })];
  for (const c of marked) {
    const text = encodeCompact(c);
    assert.ok(text !== null && text.endsWith('|1'), `compact: ${text}`);
    assertSame(roundTrip(c), c, text);
  }
  assert.equal(encodeCompact(edit({})), 'E|3|7|1||||', 'an unmarked edit as before');
  // the edge sets only `cod: true`; anything else is not the mark and stays JSON (read back as is)
  for (const c of [place({ cod: false }), place({ cod: 1 }), edit({ cod: false })]) {
    assert.equal(encodeCompact(c), null);
    assertSame(roundTrip(c), JSON.parse(JSON.stringify(c)));
  }
  assert.throws(() => decodeCommand(`${before}|0`, 1, 1), /neither JSON nor a known compact command/, 'a mark other than 1');
  assert.throws(() => decodeCommand(`${before}|1|1`, 1, 1), /neither JSON nor a known compact command/, 'a field after the mark');
});
