// Conservation with the wallet (DESIGN.md rule 5), as a fast-check property over random command
// streams: users deposit (self-service and credited to deposit addresses, ids repeated), withdraw
// (pending, reserved at once), cancel, get completed or rejected by an operator or by the sandbox's
// timer, transfer to a subaccount and trade. After every command deposits - completed withdrawals =
// balances + fees + insurance + pending withdrawals; no balance goes below zero; the pending total is
// the sum of the pending records; a deposit id is credited once; replay and a snapshot hash equal.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import type { User } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { isPending } from '../../src/wallet/wallet.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';
import { conserved } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

type Step =
  | { k: 'deposit'; acct: number; amount: number }
  | { k: 'credit'; acct: number; amount: number; tx: number }
  | { k: 'withdraw'; acct: number; amount: number; auto: boolean; nonce: number | null }
  | { k: 'cancel'; acct: number; pick: number }
  | { k: 'settle'; pick: number; complete: boolean }
  | { k: 'due'; advance: number }
  | { k: 'transfer'; acct: number; amount: number }
  | { k: 'order'; acct: number; side: 0 | 1; ticks: number; lots: number };

const acct = fc.nat({ max: 3 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ k: fc.constant('deposit' as const), acct, amount: fc.integer({ min: 1, max: 300_000_000 }) }),
  fc.record({ k: fc.constant('credit' as const), acct, amount: fc.integer({ min: 1, max: 300_000_000 }), tx: fc.nat({ max: 6 }) }),
  fc.record({ k: fc.constant('withdraw' as const), acct, amount: fc.integer({ min: 1, max: 400_000_000 }), auto: fc.boolean(), nonce: fc.option(fc.nat({ max: 3 })) }),
  fc.record({ k: fc.constant('cancel' as const), acct, pick: fc.nat({ max: 20 }) }),
  fc.record({ k: fc.constant('settle' as const), pick: fc.nat({ max: 40 }), complete: fc.boolean() }),
  fc.record({ k: fc.constant('due' as const), advance: fc.integer({ min: 0, max: 120_000 }) }),
  fc.record({ k: fc.constant('transfer' as const), acct, amount: fc.integer({ min: 1, max: 400_000_000 }) }),
  fc.record({ k: fc.constant('order' as const), acct, side: fc.constantFrom(0 as const, 1 as const), ticks: fc.integer({ min: -20, max: 20 }), lots: fc.integer({ min: 1, max: 30 }) }),
);

function setup(): { h: Harness; op: number; users: number[]; subs: number[] } {
  const h = Harness.market([CALL]);
  const op = (h.apply({ t: 'create_user', email: 'op@test.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as User).id;
  const users = [h.user('2'), h.user('2'), h.user('1'), h.user()];
  const subs = users.map((u) => (h.apply({ t: 'create_subaccount', mainId: u, max: 2 }) as User).id);
  h.apply({ t: 'wallet_add_addresses', currency: 'BTC', addresses: users.map((_, i) => `addr${i}`), by: op });
  for (const u of users) h.apply({ t: 'wallet_new_address', userId: u, currency: 'BTC', fallback: null, max: 2 });
  return { h, op, users, subs };
}

function command(s: Step, h: Harness, op: number, users: number[], subs: number[]): { cmd: Command; ts?: number } {
  const ids = [...h.ex.wallet.withdrawals.keys()];
  switch (s.k) {
    case 'deposit':
      return { cmd: { t: 'deposit', userId: users[s.acct]!, currency: 'BTC', amount: s.amount, depositId: null, by: users[s.acct]! } };
    case 'credit':
      return { cmd: { t: 'wallet_credit_deposit', currency: 'BTC', address: `addr${s.acct}`, amount: s.amount, txid: `tx${s.tx}`, by: op } };
    case 'withdraw':
      return { cmd: { t: 'wallet_withdraw', userId: users[s.acct]!, currency: 'BTC', amount: s.amount, address: 'out', priority: 'high', nonce: s.nonce === null ? null : `n${s.nonce}`, rules: { bookOnly: false, maxPending: 3, autoCompleteMs: s.auto ? 60_000 : null } } };
    case 'cancel':
      return { cmd: { t: 'wallet_cancel_withdrawal', userId: users[s.acct]!, id: ids.length === 0 ? 1 : ids[s.pick % ids.length]! } };
    case 'settle':
      return { cmd: { t: 'wallet_settle_withdrawal', id: ids.length === 0 ? 1 : ids[s.pick % ids.length]!, by: op, outcome: s.complete ? 'completed' : 'rejected', txid: s.complete ? 'sent' : null } };
    case 'due':
      return { cmd: { t: 'wallet_complete_due' }, ts: h.ts + s.advance };
    case 'transfer':
      return { cmd: { t: 'transfer', by: users[s.acct]!, from: users[s.acct]!, to: subs[s.acct]!, currency: 'BTC', amount: s.amount, nonce: null } };
    case 'order': {
      const inst = h.inst(CALL.name);
      const mark = h.ex.markets.get(inst.id)!.markCoin * 1e4;
      const price = Math.max(1, roundToTick(inst, mark + s.ticks * 5, 'nearest'));
      return { cmd: { t: 'place', userId: users[s.acct]!, side: s.side, instrument: CALL.name, price, advanced: null, advPrice: null, lots: amt('0.1') * s.lots, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null } };
    }
  }
}

describe('conservation with the wallet', () => {
  it('keeps deposits - completed withdrawals equal to balances + fees + insurance + pending withdrawals after every command, and replays to the same state', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 200 }), (steps) => {
        const { h, op, users, subs } = setup();
        const applied: { cmd: Command; ts: number }[] = [];
        const credited = new Map<string, number>();
        for (const s of steps) {
          const { cmd, ts } = command(s, h, op, users, subs);
          const r = h.apply(cmd, ts);
          applied.push({ cmd, ts: h.ts });
          conserved(h);
          for (const id of users) assert.ok(h.ex.users.get(id)!.accounts.BTC.balance >= 0, `user ${id} below zero after ${cmd.t}`);
          let pending = 0;
          for (const w of h.ex.wallet.withdrawals.values()) if (isPending(w)) pending += w.amount;
          assert.equal(h.ex.wallet.pending.BTC, pending, 'the pending total is the sum of the pending withdrawals');
          if (cmd.t === 'wallet_credit_deposit' && !isReject(r)) credited.set(cmd.txid, 1);
        }
        // a transaction id is credited once: one deposit record per id
        for (const tx of credited.keys()) {
          let n = 0;
          for (const list of h.ex.wallet.deposits.values()) n += list.filter((d) => d.txid === tx && d.address !== '').length;
          assert.equal(n, 1, `deposit ${tx} credited ${n} times`);
        }
        const replay = setup();
        for (const a of applied) replay.h.apply(a.cmd, a.ts);
        assert.equal(stateHash(replay.h.ex), stateHash(h.ex));
        assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
      }),
      { numRuns: 60, seed: 3232 },
    );
  });
});
