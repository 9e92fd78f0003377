// Where money went outside trading: a user's account log (`private/get_transaction_log`), and for
// administrators the insurance account (balances, shortfalls, positions it took over, its log) and
// the accounts with a balance below zero (src/engine/defaults.ts, src/engine/ledger.ts).
import { Type } from '@sinclair/typebox';
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { lotsToAmount, priceToNumber, premiumFactor } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Ledger, LedgerEntry } from '../../engine/ledger.ts';
import type { Position, User } from '../../engine/types.ts';
import { coin, money, orderIdOf, tradeIdOf } from '../render.ts';
import { intrinsicCoin } from '../../domain/pricing.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyOrAny, CurrencyParam, Timestamp, currencyFilter } from './common.ts';
import { SubaccountId, readFor } from './actingFor.ts';

/** Whose log an entry is in: Deribit's `user_id` and `username` (null for the insurance account). */
interface LogOwner {
  id: number;
  username: string;
}

function ownerOf(ex: Exchange, user: User): LogOwner {
  // a subaccount goes by its name, a main account by its email (as get_account_summary's username)
  return { id: user.id, username: ex.subaccounts.subs.get(user.id)?.username ?? user.email };
}

/**
 * One entry of an account log, with every field of Deribit's transaction log: the trade's order,
 * roles, price and the position, equity, mark and index after it for fills; the settled size and
 * delivery value for deliveries; null where Deribit sends null for that kind of entry (order and
 * trade fields outside trades, futures' session and interest figures, which options do not have).
 */
function renderEntry(e: LedgerEntry, ex: Exchange, owner: LogOwner | null = null): Record<string, unknown> {
  const change = money(e.amount, e.currency);
  const inst = e.instrument === null ? undefined : ex.instruments.get(e.instrument);
  const out: Record<string, unknown> = {
    id: e.id,
    user_seq: e.userSeq ?? null,
    user_id: owner?.id ?? null,
    username: owner?.username ?? null,
    timestamp: e.ts,
    type: e.type,
    currency: e.currency,
    change,
    cashflow: change,
    balance: money(e.balance, e.currency),
    equity: e.equity === null || e.equity === undefined ? null : money(e.equity, e.currency),
    instrument_name: e.instrument,
    commission: money(e.fee, e.currency),
    side: '-',
    amount: null,
    contracts: null,
    price: null,
    price_currency: null,
    position: null,
    order_id: null,
    trade_id: null,
    user_role: null,
    fee_role: null,
    mark_price: e.mark === null || e.mark === undefined ? null : coin(e.mark),
    index_price: e.index ?? null,
    settlement_price: null,
    session_rpl: null,
    session_upl: null,
    interest_pl: null,
    total_interest_pl: null,
    // option premiums and deliveries are paid in cash at once, not kept as unrealized profit
    profit_as_cashflow: inst !== undefined ? true : null,
    info: e.userId !== null ? { other_user_id: e.userId } : inst !== undefined && e.size !== null && e.price !== null ? {} : null,
    ip: null,
    ...(e.userId !== null ? { counterparty_user_id: e.userId } : {}),
  };
  if (inst && e.size !== null) {
    const amount = lotsToAmount(inst, Math.abs(e.size));
    out.amount = amount;
    out.contracts = amount / inst.contractSize;
    if (e.price !== null) {
      // trades: the fill
      out.side = e.size > 0 ? 'buy' : 'sell';
      out.price = priceToNumber(e.price);
      out.price_currency = inst.currency;
      out.trade_id = e.ref === null ? null : tradeIdOf(inst.currency, e.ref);
      out.order_id = e.orderId === null || e.orderId === undefined ? null : orderIdOf(inst.currency, e.orderId);
      out.user_role = e.role ?? null;
      out.fee_role = e.role ?? null;
      out.position = e.position === null || e.position === undefined ? null : lotsToAmount(inst, e.position);
    } else {
      // deliveries and takeovers: the position settled or handed over, and for a delivery what
      // each contract was worth at the delivery price
      out.side = e.size > 0 ? 'long' : 'short';
      out.position = lotsToAmount(inst, e.size);
      if (e.type === 'delivery' && inst.deliveryPrice !== null) out.settlement_price = coin(intrinsicCoin(inst.optionType, inst.deliveryPrice, inst.strike));
    }
  }
  return out;
}

/** Entry types a `query` may name (Deribit filters the log by such words). */
const LOG_TYPES = ['trade', 'liquidation', 'deposit', 'withdrawal', 'delivery', 'takeover', 'liquidation_fee', 'conversion', 'insurance_cover', 'socialized_loss', 'socialized_loss_compensation', 'transfer', 'position_move'] as const;

function renderHeld(p: Position): Record<string, unknown> {
  const avg = p.size === 0 ? 0 : Math.abs(p.openCost) / (Math.abs(p.size) * premiumFactor(p.inst));
  return {
    instrument_name: p.inst.name,
    size: lotsToAmount(p.inst, p.size),
    direction: p.size > 0 ? 'buy' : 'sell',
    average_price: priceToNumber(Math.round(avg)),
    realized_profit_loss: money(p.realizedPnl, p.inst.currency),
  };
}

/** Newest first, `count` of them, within [start, end]. */
function newest(log: Ledger, currency: CurrencyCode | null, start: number, end: number, count: number, beforeId: number, type: string | null = null): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  for (let i = log.length - 1; i >= 0 && out.length < count; i--) {
    const ts = log.tsAt(i);
    if (log.idAt(i) >= beforeId || ts > end) continue;
    if (ts < start) break;
    if ((currency === null || log.currencyAt(i) === currency) && (type === null || log.typeAt(i) === type)) out.push(log.at(i));
  }
  return out;
}

export const fundsMethods = [
  defineMethod({
    name: 'private/get_transaction_log',
    scope: 'account:read',
    summary: 'Every balance movement (trades with their fee, liquidation trades and fees, deposits, withdrawals, deliveries at expiry, takeovers at mark, conversions, insurance covers, socialized losses), newest first, with the balance after each.',
    params: Type.Object({
      currency: CurrencyOrAny,
      /** only entries of this type */
      query: Type.Optional(Type.Union(LOG_TYPES.map((t) => Type.Literal(t)))),
      start_timestamp: Type.Optional(Timestamp),
      end_timestamp: Type.Optional(Timestamp),
      count: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
      /** the `continuation` of the previous page: entries older than it */
      continuation: Type.Optional(Type.Integer({ minimum: 1 })),
      /** the main account reads one of its subaccounts' logs (src/api/methods/actingFor.ts) */
      subaccount_id: SubaccountId,
    }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const user = readFor(ctx, p.subaccount_id);
        const page = newest(user.log, currencyFilter(p.currency), p.start_timestamp ?? 0, p.end_timestamp ?? Number.MAX_SAFE_INTEGER, p.count + 1, p.continuation ?? Number.MAX_SAFE_INTEGER, p.query ?? null);
        const more = page.length > p.count;
        if (more) page.pop();
        return { logs: page.map((e) => renderEntry(e, s.ex, ownerOf(s.ex, user))), continuation: more ? page[page.length - 1].id : null };
      });
    },
  }),
  defineMethod({
    name: 'private/get_insurance_fund',
    scope: 'admin',
    summary: 'The insurance account per currency: balance, shortfall (what it owes beyond its balance), the positions it took over from defaulting accounts, and its log, newest first.',
    params: Type.Object({
      currency: Type.Optional(CurrencyParam),
      count: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() =>
        CURRENCY_CODES.filter((c) => p.currency === undefined || c === p.currency).map((c) => {
          const balance = ex.insurance.accounts[c].balance;
          return {
            currency: c,
            balance: money(balance, c),
            shortfall: money(Math.max(0, -balance), c),
            positions: [...ex.insurance.positions.values()].filter((h) => h.inst.currency === c).map(renderHeld),
            history: newest(ex.insurance.log, c, 0, Number.MAX_SAFE_INTEGER, p.count, Number.MAX_SAFE_INTEGER).map((e) => renderEntry(e, ex)),
          };
        }),
      );
    },
  }),
  defineMethod({
    name: 'private/list_negative_balances',
    scope: 'admin',
    summary: 'Accounts with a balance below zero in some currency (none once every liquidation and settlement step has run), and insurance shortfalls.',
    params: Type.Object({}),
    handler(ctx) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const accounts: Record<string, unknown>[] = [];
        for (const u of ex.users.values()) {
          for (const c of CURRENCY_CODES) {
            const b = u.accounts[c].balance;
            if (b < 0) accounts.push({ user_id: u.id, email: u.email, currency: c, balance: money(b, c) });
          }
        }
        const shortfalls = CURRENCY_CODES.filter((c) => ex.insurance.accounts[c].balance < 0).map((c) => ({ currency: c, shortfall: money(-ex.insurance.accounts[c].balance, c) }));
        return { accounts, insurance_shortfalls: shortfalls };
      });
    },
  }),
];
