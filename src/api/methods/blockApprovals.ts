// Block trade approvals (issue 34; docs/api-notes.md "Block trades: approvals"): the per-account
// setting, the requests waiting for an approval and the answers to them (src/blocktrades/approval.ts).
import { Type } from '@sinclair/typebox';
import { AMOUNT_SCALE } from '../../domain/instrument.ts';
import { toDecimalNumber } from '../../domain/decimal.ts';
import { priceToNumber } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { partiesOf, requestsOf } from '../../blocktrades/approval.ts';
import type { BlockTradeRequest } from '../../blocktrades/types.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Timestamp, caller, unwrap } from './common.ts';

const Role = Type.Union([Type.Literal('maker'), Type.Literal('taker')]);
const Nonce = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' });

/**
 * A request as `viewer` sees it (Deribit's get_block_trade_requests entry and block_trade_confirmations
 * data): its role and state, the counterparty's id, username and state; legs with the maker's direction.
 */
export function renderBlockRequest(ex: Exchange, r: BlockTradeRequest, viewer: number): Record<string, unknown> {
  const { maker, taker } = partiesOf(r);
  const role = maker === viewer ? 'maker' : 'taker';
  const other = role === 'maker' ? taker : maker;
  const mine = role === 'maker' ? r.maker : r.taker;
  const theirs = role === 'maker' ? r.taker : r.maker;
  return {
    nonce: r.nonce,
    timestamp: r.timestamp,
    trades: r.legs.map((l) => ({ instrument_name: l.instrument, direction: l.side === 0 ? 'buy' : 'sell', price: priceToNumber(l.price), amount: toDecimalNumber(l.lots, AMOUNT_SCALE) })),
    app_name: '',
    username: ex.users.has(other) ? ex.subaccounts.username(other) : '',
    role,
    user_id: other,
    state: { value: mine.value, timestamp: mine.timestamp },
    counterparty_state: { value: theirs.value, timestamp: theirs.timestamp },
    ...(r.blockTradeId !== null ? { block_trade_id: String(r.blockTradeId) } : {}),
  };
}

const Answer = Type.Object({ timestamp: Timestamp, nonce: Nonce, role: Role });

export const blockApprovalMethods = [
  defineMethod({
    name: 'private/approve_block_trade',
    scope: 'trade:read_write',
    summary:
      "Approves the caller's side (in `role`) of the block trade request of `timestamp` and `nonce`; once both sides are accepted it executes at once, every check made again (expiry, once only, both sides' margin), or the approval is refused.",
    params: Answer,
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'block_approve', userId: c.userId, timestamp: p.timestamp, nonce: p.nonce, role: p.role }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/reject_block_trade',
    scope: 'trade:read_write',
    summary: 'Rejects the block trade request of `timestamp` and `nonce` where the caller is `role`: it never executes.',
    params: Answer,
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'block_reject', userId: c.userId, timestamp: p.timestamp, nonce: p.nonce, role: p.role }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/get_block_trade_requests',
    scope: 'trade:read',
    summary: "The block trade requests the caller is a party of (waiting for an approval, or rejected or executed in the last 24 h), newest first.",
    params: Type.Object({ broker_code: Type.Optional(Type.String({ maxLength: 64 })) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        // broker trades do not exist here
        if (p.broker_code !== undefined) return [];
        return requestsOf(s.ex, c.userId).reverse().map((r) => renderBlockRequest(s.ex, r, c.userId));
      });
    },
  }),
  defineMethod({
    name: 'private/set_block_trade_approval',
    scope: 'account:read_write',
    summary:
      "Strikebook: whether the caller's block trades wait for its approval (Deribit's `block_trade_approval` feature, per account here). Requests already waiting keep their states.",
    params: Type.Object({ enabled: Type.Boolean() }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'block_approval', userId: c.userId, required: p.enabled }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/get_block_trade_approval',
    scope: 'account:read',
    summary: "Strikebook: whether the caller's block trades wait for its approval.",
    params: Type.Object({}),
    handler(ctx) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => ({ enabled: s.ex.blockTrades.approvalRequired.has(c.userId) }));
    },
  }),
];
