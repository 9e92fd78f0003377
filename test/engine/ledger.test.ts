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
  assert.deepEqual(old.at(0), { id: 1, ts: 2, type: 'deposit', currency: 'BTC', amount: 100, balance: 100, instrument: null, userId: null, size: null, price: null, fee: 0, ref: null });
});
