// Conservation across subaccounts and transfers (DESIGN.md rule 5), as a fast-check property over
// random command streams: two main accounts create and remove subaccounts, deposit, withdraw, trade
// an option, send money to each other (held, confirmed, cancelled), move positions, and move money
// between any two accounts (allowed or not, with and without nonces, some nonces repeated). After every command the sum of balances equals deposits minus withdrawals; a
// transfer never leaves its sender below zero; and a replay of the stream, and a snapshot of its
// end, hash equal to the live state.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import type { User } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';
import { conserved } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

/** A step of the stream, resolved against the live state (indices pick among the accounts that exist). */
type Step =
  | { k: 'sub'; main: number }
  | { k: 'remove'; main: number; pick: number }
  | { k: 'deposit'; acct: number; amount: number }
  | { k: 'withdraw'; acct: number; amount: number }
  | { k: 'transfer'; by: number; from: number; to: number; amount: number; cur: 0 | 1; nonce: number | null }
  | { k: 'order'; acct: number; side: 0 | 1; ticks: number; lots: number }
  | { k: 'index'; price: number }
  | { k: 'utransfer'; by: number; to: number; amount: number; hold: 0 | 1; nonce: number | null }
  | { k: 'ucancel'; by: number; back: number }
  | { k: 'confirm'; later: number }
  | { k: 'move'; by: number; from: number; to: number; lots: number; atMark: boolean };

const acct = fc.nat({ max: 30 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ k: fc.constant('sub' as const), main: fc.nat({ max: 1 }) }),
  fc.record({ k: fc.constant('remove' as const), main: fc.nat({ max: 1 }), pick: acct }),
  fc.record({ k: fc.constant('deposit' as const), acct, amount: fc.integer({ min: 1, max: 300_000_000 }) }),
  fc.record({ k: fc.constant('withdraw' as const), acct, amount: fc.integer({ min: 1, max: 300_000_000 }) }),
  fc.record({ k: fc.constant('transfer' as const), by: acct, from: acct, to: acct, amount: fc.integer({ min: 1, max: 400_000_000 }), cur: fc.constantFrom(0 as const, 1 as const), nonce: fc.option(fc.nat({ max: 5 })) }),
  fc.record({ k: fc.constant('order' as const), acct, side: fc.constantFrom(0 as const, 1 as const), ticks: fc.integer({ min: -20, max: 20 }), lots: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ k: fc.constant('index' as const), price: fc.integer({ min: 80_000, max: 125_000 }) }),
  fc.record({ k: fc.constant('utransfer' as const), by: acct, to: fc.nat({ max: 1 }), amount: fc.integer({ min: 1, max: 300_000_000 }), hold: fc.constantFrom(0 as const, 1 as const), nonce: fc.option(fc.nat({ max: 3 })) }),
  fc.record({ k: fc.constant('ucancel' as const), by: acct, back: fc.nat({ max: 4 }) }),
  fc.record({ k: fc.constant('confirm' as const), later: fc.integer({ min: 0, max: 120_000 }) }),
  fc.record({ k: fc.constant('move' as const), by: acct, from: acct, to: acct, lots: fc.integer({ min: 1, max: 40 }), atMark: fc.boolean() }),
);

/** Every account in id order (the mains and their live subaccounts). */
function accounts(h: Harness): number[] {
  return [...h.ex.users.keys()];
}

function command(h: Harness, mains: number[], s: Step): Command {
  const ids = accounts(h);
  const at = (i: number) => ids[i % ids.length]!;
  switch (s.k) {
    case 'sub':
      return { t: 'create_subaccount', mainId: mains[s.main]!, max: 4 };
    case 'remove': {
      const kids = h.ex.subaccounts.childrenOf(mains[s.main]!);
      return { t: 'remove_subaccount', mainId: mains[s.main]!, subId: kids.length === 0 ? 999 : kids[s.pick % kids.length]! };
    }
    case 'deposit':
      return { t: 'deposit', userId: at(s.acct), currency: 'BTC', amount: s.amount, depositId: null, by: at(s.acct) };
    case 'withdraw':
      return { t: 'withdraw', userId: at(s.acct), currency: 'BTC', amount: s.amount };
    case 'transfer':
      return { t: 'transfer', by: at(s.by), from: at(s.from), to: at(s.to), currency: s.cur === 0 ? 'BTC' : 'ETH', amount: s.amount, nonce: s.nonce === null ? null : `n${s.nonce}` };
    case 'order': {
      const inst = h.inst(CALL.name);
      const mark = h.ex.markets.get(inst.id)!.markCoin * 1e4;
      const price = Math.max(1, roundToTick(inst, mark + s.ticks * 5, 'nearest'));
      return { t: 'place', userId: at(s.acct), side: s.side, instrument: CALL.name, price, advanced: null, advPrice: null, lots: amt('0.1') * s.lots, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null };
    }
    case 'index':
      return { t: 'index', currency: 'BTC', price: s.price, manual: true, by: null };
    case 'utransfer':
      return { t: 'user_transfer', by: at(s.by), destination: `u${s.to + 1}@test.io`, currency: 'BTC', amount: s.amount, nonce: s.nonce === null ? null : `u${s.nonce}`, holdMs: s.hold * 60_000 };
    case 'ucancel':
      return { t: 'cancel_transfer', by: at(s.by), id: Math.max(1, h.ex.subaccounts.nextTransferId - 1 - s.back), currency: 'BTC' };
    case 'confirm':
      return { t: 'confirm_transfers' };
    case 'move': {
      const inst = h.inst(CALL.name);
      const mark = roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
      return { t: 'move_positions', by: at(s.by), from: at(s.from), to: at(s.to), legs: [{ instrument: CALL.name, lots: amt('0.1') * s.lots, price: s.atMark ? null : mark + 5 }] };
    }
  }
}

describe('conservation with subaccounts and transfers', () => {
  it('keeps the sum of balances equal to deposits minus withdrawals after every command, and replays to the same state', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 300 }), (steps) => {
        const h = Harness.market([CALL]);
        const mains = [h.user('2', '10'), h.user('2', '10')];
        const applied: Command[] = [];
        const stamps: number[] = [];
        for (const s of steps) {
          const cmd = command(h, mains, s);
          const senderBefore = cmd.t === 'transfer' ? h.ex.users.get(cmd.from)?.accounts[cmd.currency].balance : undefined;
          const r = s.k === 'confirm' ? h.apply(cmd, h.ts + s.later) : h.apply(cmd);
          applied.push(cmd);
          stamps.push(h.ts);
          conserved(h);
          if (cmd.t === 'transfer' && !isReject(r) && senderBefore !== undefined) {
            const after = h.ex.users.get(cmd.from)!.accounts[cmd.currency].balance;
            assert.ok(after >= 0, `a transfer left account ${cmd.from} at ${after}`);
            // a retried nonce moves nothing; a new transfer moves exactly its amount
            assert.ok(after === senderBefore || after === senderBefore - cmd.amount);
          }
          if (cmd.t === 'create_subaccount' && !isReject(r)) assert.equal(h.ex.subaccounts.mainOf((r as User).id), cmd.mainId);
          // no account below zero, and positions sum to zero, whatever moved
          for (const u of h.ex.users.values()) assert.ok(u.accounts.BTC.balance >= 0, `account ${u.id} below zero after ${cmd.t}`);
          let held = 0;
          for (const u of h.ex.users.values()) held += u.positions.get(h.inst(CALL.name).id)?.size ?? 0;
          assert.equal(held + (h.ex.insurance.positions.get(h.inst(CALL.name).id)?.size ?? 0), 0, 'positions sum to zero');
        }
        const replay = new Harness();
        replay.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
        replay.apply({ t: 'index', currency: 'ETH', price: 4_000, manual: true, by: null });
        replay.apply({ t: 'list', instruments: [CALL] });
        replay.user('2', '10');
        replay.user('2', '10');
        applied.forEach((c, i) => replay.apply(c, stamps[i]));
        assert.equal(stateHash(replay.ex), stateHash(h.ex));
        assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
      }),
      { numRuns: 60, seed: 32 },
    );
  });
});
