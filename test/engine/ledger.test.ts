// The account log's columnar storage (src/engine/ledger.ts): every field comes back as written,
// nulls included, money exact up to 2^53, and the trimming keeps exactly what the array it replaced
// kept (the last LEDGER_KEPT once 2 x LEDGER_KEPT are passed), so snapshots and state hashes agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LEDGER_KEPT, Ledger, ledgerFromJson, ledgerToJson, type LedgerEntry } from '../../src/engine/ledger.ts';

function entry(id: number): LedgerEntry {
  const fill = id % 2 === 0;
  return {
    id,
    ts: 1_773_144_000_000 + id,
    type: fill ? 'trade' : id % 3 === 0 ? 'socialized_loss_compensation' : 'deposit',
    currency: id % 5 === 0 ? 'USDC' : fill ? 'BTC' : 'ETH',
    amount: fill ? -(2 ** 53 - 1) + id : id * 1_000,
    balance: 2 ** 53 - 1 - id,
    instrument: fill ? 'BTC-27MAR26-80000-C' : null,
    userId: fill ? null : 7,
    size: fill ? -3 : null,
    price: fill ? 1250 : null,
    fee: fill ? 15 : 0,
    ref: fill ? id * 10 : null,
    orderId: fill ? id * 7 : null,
    role: fill ? (id % 4 === 0 ? 'maker' : 'taker') : null,
    position: fill ? -3 - id : null,
    index: fill ? 68_123.45 + id / 3 : id % 3 === 0 ? null : 3_012.5,
    mark: fill ? 0.0123456789 + id / 7 : null,
    equity: fill ? 2 ** 53 - 2 - id : id % 3 === 0 ? null : id * 1_000,
    userSeq: id,
  };
}

test('every field comes back as written, nulls and 2^53 - 1 included', () => {
  const log = new Ledger();
  const written = Array.from({ length: 40 }, (_, i) => entry(i + 1));
  for (const e of written) log.push(e);
  assert.equal(log.length, 40);
  assert.deepEqual(log.entries(), written);
  for (const [i, e] of written.entries()) {
    assert.equal(log.idAt(i), e.id);
    assert.equal(log.tsAt(i), e.ts);
    assert.equal(log.typeAt(i), e.type);
    assert.equal(log.currencyAt(i), e.currency);
  }
});

test('past 2 x LEDGER_KEPT entries the newest LEDGER_KEPT are kept, as the array did', () => {
  const log = new Ledger();
  const array: LedgerEntry[] = [];
  for (let id = 1; id <= 2 * LEDGER_KEPT + 1 + 500; id++) {
    log.push(entry(id));
    // the array kept before: push, and past 2 x KEPT cut back to the newest KEPT
    array.push(entry(id));
    if (array.length > LEDGER_KEPT * 2) array.splice(0, array.length - LEDGER_KEPT);
    if (id % 250 === 0 || id === 2 * LEDGER_KEPT + 1) assert.deepEqual(log.entries(), array, `after ${id} entries`);
  }
  assert.equal(log.length, LEDGER_KEPT + 500);
  assert.equal(log.idAt(0), LEDGER_KEPT + 2);
});

test('a snapshot round trip gives the same log and the same JSON', () => {
  const log = new Ledger();
  for (let id = 1; id <= 30; id++) log.push(entry(id));
  const json = ledgerToJson(log);
  const back = ledgerFromJson(JSON.parse(JSON.stringify(json)));
  assert.deepEqual(back.entries(), log.entries());
  assert.deepEqual(ledgerToJson(back), json);
  // snapshots from before trades were logged have 8 fields
  const old = ledgerFromJson([[1, 2, 'deposit', 'BTC', 100, 100, null, null]]);
  const none = { orderId: null, role: null, position: null, index: null, mark: null, equity: null };
  assert.deepEqual(old.at(0), { id: 1, ts: 2, type: 'deposit', currency: 'BTC', amount: 100, balance: 100, instrument: null, userId: null, size: null, price: null, fee: 0, ref: null, ...none, userSeq: 1 });
  // and from before issue 31's fields 12: numbered from 1 in their order
  const twelve = ledgerFromJson([[5, 2, 'deposit', 'BTC', 100, 100, null, null, null, null, 0, null], [9, 3, 'withdrawal', 'BTC', -50, 50, null, null, null, null, 0, null]]);
  assert.deepEqual(twelve.entries().map((e) => [e.id, e.userSeq, e.equity]), [[5, 1, null], [9, 2, null]]);
});

test('user_seq counts every entry ever logged: past the trimming and across a snapshot', () => {
  const log = new Ledger();
  const { userSeq: _drop, ...plain } = entry(1);
  for (let i = 0; i < 2 * LEDGER_KEPT + 1; i++) log.push({ ...plain, id: i + 1 });
  assert.equal(log.length, LEDGER_KEPT);
  assert.equal(log.at(0).userSeq, LEDGER_KEPT + 2, 'the oldest kept is still numbered as it was logged');
  const back = ledgerFromJson(JSON.parse(JSON.stringify(ledgerToJson(log))));
  back.push({ ...plain, id: 99_999 });
  assert.equal(back.at(back.length - 1).userSeq, 2 * LEDGER_KEPT + 2, 'a restored log numbers on from its newest entry');
});
