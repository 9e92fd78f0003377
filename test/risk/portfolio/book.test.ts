// The book the scenario engine reads from an account (src/risk/portfolio/book.ts), against the
// standard margin the risk module holds for the same account (src/risk/accountRisk.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { priceToNumber, roundToTick } from '../../../src/domain/instrument.ts';
import { bookOf } from '../../../src/risk/portfolio/book.ts';
import { portfolioMargin } from '../../../src/risk/portfolio/scenarios.ts';
import { EXP_MAR, Harness, spec } from '../../helpers/engine.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');

/** A market maker short 10 of the 100,000 call and long 10 of the 110,000 call: a call spread. */
function spreadBook() {
  const h = Harness.market([C100, C110]);
  const mm = h.user('20');
  const cp = h.user('20');
  const hi = top(h, C100.name);
  h.ok(mm, 'sell', C100.name, hi, '10');
  h.ok(cp, 'buy', C100.name, hi, '10');
  const lo = bottom(h, C110.name);
  h.ok(mm, 'buy', C110.name, lo, '10');
  h.ok(cp, 'sell', C110.name, lo, '10');
  return { h, mm };
}

/** The highest and lowest prices on the tick grid inside the order band, as text. */
function top(h: Harness, name: string): string {
  const inst = h.inst(name);
  return String(priceToNumber(roundToTick(inst, h.ex.markets.get(inst.id)!.maxPrice, 'down')));
}
function bottom(h: Harness, name: string): string {
  const inst = h.inst(name);
  return String(priceToNumber(roundToTick(inst, h.ex.markets.get(inst.id)!.minPrice, 'up')));
}

const none = { includeAccount: true, simulated: new Map() };

describe("an account's book under portfolio margin", () => {
  it('reads positions in contracts with their mark IV, at the index and the engine clock', () => {
    const { h, mm } = spreadBook();
    const book = bookOf(h.ex, h.u(mm), 'BTC', none)!;
    assert.equal(book.forward, 100000);
    assert.equal(book.now, h.ex.now);
    const byName = Object.fromEntries(book.legs.map((l) => [l.instrument, l]));
    assert.equal(byName[C100.name].position, -10);
    assert.equal(byName[C110.name].position, 10);
    assert.equal(byName[C100.name].iv, h.ex.markets.get(h.inst(C100.name).id)!.markIv);
  });

  it('margins a call spread at no more than a third of what standard margin holds for it', () => {
    const { h, mm } = spreadBook();
    const standard = h.ex.trading.risk.account(h.u(mm), 'BTC').maintenanceMargin;
    const pm = portfolioMargin(bookOf(h.ex, h.u(mm), 'BTC', none)!).maintenanceMargin;
    assert.ok(pm > 0 && pm * 3 <= standard, `PM ${pm} vs standard ${standard}`);
  });

  it('counts open sells as if filled, adds what-if positions, and changes nothing in the account', () => {
    const { h, mm } = spreadBook();
    const before = h.ex.trading.risk.account(h.u(mm), 'BTC');
    const base = portfolioMargin(bookOf(h.ex, h.u(mm), 'BTC', none)!).maintenanceMargin;
    h.ok(mm, 'sell', C110.name, top(h, C110.name), '10');
    const afterOrder = h.ex.trading.risk.account(h.u(mm), 'BTC');
    const positions = JSON.stringify([...h.u(mm).positions.values()].map((p) => [p.inst.name, p.size, p.openCost]));
    const quoting = portfolioMargin(bookOf(h.ex, h.u(mm), 'BTC', none)!).maintenanceMargin;
    assert.ok(quoting > base, 'selling the hedge away (if filled) leaves the naked short');
    // a what-if buy of 10 more 110,000 calls (100 lots of 0.1) covers the open sell again
    const covered = bookOf(h.ex, h.u(mm), 'BTC', { includeAccount: true, simulated: new Map([[h.inst(C110.name), 100]]) })!;
    assert.ok(portfolioMargin(covered).maintenanceMargin <= quoting);
    const onlyWhatIf = bookOf(h.ex, h.u(mm), 'BTC', { includeAccount: false, simulated: new Map([[h.inst(C110.name), 100]]) })!;
    assert.deepEqual(onlyWhatIf.legs.map((l) => [l.instrument, l.position, l.sellOpen]), [[C110.name, 10, 0]]);
    assert.equal(afterOrder.maintenanceMargin, before.maintenanceMargin, 'standard margin is still what holds');
    assert.deepEqual(h.ex.trading.risk.account(h.u(mm), 'BTC'), afterOrder, 'reading the book changed nothing');
    assert.equal(JSON.stringify([...h.u(mm).positions.values()].map((p) => [p.inst.name, p.size, p.openCost])), positions);
  });
});
