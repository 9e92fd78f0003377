// The operator's side of the wallet (issue 32; docs/api-notes.md "Wallet"): the queue of pending
// withdrawals, completing one with its chain transaction id or rejecting it, crediting a deposit sent
// to a deposit address (once per transaction id), and loading the deposit-address pool. Every action
// is a journaled command carrying the acting administrator's id.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { MAX_ADDRESSES_PER_CALL, isPending } from '../../wallet/wallet.ts';
import type { WalletDeposit, WithdrawalRecord } from '../../wallet/types.ts';
import { money } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, caller, unwrap } from './common.ts';
import { Address, minorAmount, renderWithdrawal } from './wallet.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 });

export const walletAdminMethods = [
  defineMethod({
    name: 'private/get_pending_withdrawals',
    scope: 'admin',
    summary: "The operator's queue: every pending withdrawal (optionally of one currency), oldest first, with its owner's `user_id`.",
    params: Type.Object({ currency: Type.Optional(CurrencyParam), count: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const out: Record<string, unknown>[] = [];
        for (const w of s.ex.wallet.withdrawals.values()) {
          if (!isPending(w) || (p.currency !== undefined && w.currency !== p.currency)) continue;
          out.push({ ...renderWithdrawal(w), user_id: w.userId });
        }
        out.sort((a, b) => (a.id as number) - (b.id as number));
        return out.slice(0, p.count);
      });
    },
  }),
  defineMethod({
    name: 'private/complete_withdrawal',
    scope: 'admin',
    summary: 'Marks a pending withdrawal sent, with its chain transaction id: its amount leaves the venue.',
    params: Type.Object({ id: Id, transaction_id: Address }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'wallet_settle_withdrawal', id: p.id, by: caller(ctx).userId, outcome: 'completed', txid: p.transaction_id }, (r) =>
        renderWithdrawal(unwrap(r) as WithdrawalRecord),
      );
    },
  }),
  defineMethod({
    name: 'private/reject_withdrawal',
    scope: 'admin',
    summary: 'Rejects a pending withdrawal: its amount returns to the owner\'s balance.',
    params: Type.Object({ id: Id }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'wallet_settle_withdrawal', id: p.id, by: caller(ctx).userId, outcome: 'rejected', txid: null }, (r) =>
        renderWithdrawal(unwrap(r) as WithdrawalRecord),
      );
    },
  }),
  defineMethod({
    name: 'private/credit_deposit',
    scope: 'admin',
    summary:
      'Credits a deposit received on a deposit address to its owner. Once per (currency, transaction_id): the same id again answers the first deposit and credits nothing (with another address or amount it is refused).',
    params: Type.Object({ currency: CurrencyParam, address: Address, amount: Type.Number(), transaction_id: Address }),
    handler(ctx, p) {
      const a = minorAmount(p.currency, p.amount);
      return ctx.services.seq.submit({ t: 'wallet_credit_deposit', currency: a.code, address: p.address, amount: a.minor, txid: p.transaction_id, by: caller(ctx).userId }, (r) => {
        const d = unwrap(r) as WalletDeposit;
        return { user_id: d.userId, currency: d.currency, address: d.address, amount: money(d.amount, d.currency), transaction_id: d.txid, state: d.state, received_timestamp: d.received };
      });
    },
  }),
  defineMethod({
    name: 'private/add_deposit_addresses',
    scope: 'admin',
    summary: 'Loads deposit addresses into the pool create_deposit_address hands out from (an address already known is skipped).',
    params: Type.Object({ currency: CurrencyParam, addresses: Type.Array(Address, { minItems: 1, maxItems: MAX_ADDRESSES_PER_CALL }) }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'wallet_add_addresses', currency: p.currency as CurrencyCode, addresses: p.addresses, by: caller(ctx).userId }, (r) => unwrap(r));
    },
  }),
];
