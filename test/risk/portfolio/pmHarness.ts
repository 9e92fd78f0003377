// Engine-level helpers of the portfolio-margin tests: trades at the mark between an account and a
// well-funded counterparty, and the account's margin figures.
import assert from 'node:assert/strict';
import { isReject } from '../../../src/domain/errors.ts';
import { roundToTick } from '../../../src/domain/instrument.ts';
import type { AccountRisk } from '../../../src/risk/accountRisk.ts';
import type { MarginModel } from '../../../src/risk/portfolio/state.ts';
import { EXP_MAR, Harness, spec } from '../../helpers/engine.ts';

/** A grid price (text) at the instrument's mark, rounded up. */
export function markPrice(h: Harness, name: string): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return (roundToTick(inst, m.markCoin * 1e4, 'up') / 1e4).toFixed(4);
}

/** `account` takes `size` (contracts, negative: sells) of `name` from `cp`'s resting order at the mark. */
export function trade(h: Harness, account: number, cp: number, name: string, size: number): void {
  const price = markPrice(h, name);
  const amount = String(Math.abs(size));
  h.ok(cp, size > 0 ? 'sell' : 'buy', name, price, amount);
  const r = h.ok(account, size > 0 ? 'buy' : 'sell', name, price, amount);
  assert.equal(r.order.filled, h.u(account).orders.get(r.order.id)!.amount, `${name} filled in full`);
}

export function risk(h: Harness, userId: number): AccountRisk {
  return h.ex.trading.risk.account(h.u(userId), 'BTC');
}

export function switchModel(h: Harness, userId: number, model: MarginModel): unknown {
  return h.apply({ t: 'change_margin_model', userId, model });
}

export function switched(h: Harness, userId: number, model: MarginModel): void {
  const r = switchModel(h, userId, model);
  if (isReject(r)) throw new Error(`switch refused: ${r.code} ${r.reason ?? ''}`);
}

/** 30 strikes x call/put: 60 series (the sliced-recompute tests' desk). */
export const DESK_SPECS = Array.from({ length: 30 }, (_, i) => 70_000 + 2000 * i).flatMap((k) => [spec('BTC', EXP_MAR, k, 'call'), spec('BTC', EXP_MAR, k, 'put')]);

/** A desk on `model` holding every series of DESK_SPECS (short the inner strikes, long the outer), and
 *  the table at its largest (41 buckets: 139 scenarios), so that one account's rebuild is several
 *  budgets' work (PM_STEP_UNITS). */
export function bigDesk(model: MarginModel): { h: Harness; desk: number; cp: number } {
  const h = Harness.market(DESK_SPECS);
  const boss = (h.apply({ t: 'create_user', email: 'admin@pm.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as { id: number }).id;
  assert.ok(!('code' in (h.apply({ t: 'set_pm_params', params: { priceBuckets: 41 }, by: boss }) as object)));
  const cp = h.user('100000');
  const d = h.user('5000');
  if (model !== 'segregated_sm') switched(h, d, model);
  for (const s of DESK_SPECS) trade(h, d, cp, s.name, Math.abs(s.strike - 100_000) <= 10_000 ? -1 : 1);
  return { h, desk: d, cp };
}
