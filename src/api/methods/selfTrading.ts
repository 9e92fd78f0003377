// private/set_self_trading_config (issue 31): the account's self-trade prevention mode, enforced by
// the engine (src/engine/selfTrade.ts). One journaled command.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { caller } from './common.ts';

export const selfTradingMethods = [
  defineMethod({
    name: 'private/set_self_trading_config',
    scope: 'account:read_write',
    summary: "Self-trade prevention: `reject_taker` (the default) refuses an order that would meet the account's own order (11030 self_trade); `cancel_maker` cancels the own orders it would meet (cancel_reason self_trade_prevention) and lets it trade with the others. `extended_to_subaccounts` is kept for when subaccounts exist (issue 32).",
    params: Type.Object({
      mode: Type.Union([Type.Literal('reject_taker'), Type.Literal('cancel_maker')]),
      extended_to_subaccounts: Type.Boolean(),
      block_rfq_self_match_prevention: Type.Optional(Type.Boolean()),
    }),
    handler(ctx, p) {
      // block RFQs arrive with issue 34: a setting for them would be silently meaningless
      if (p.block_rfq_self_match_prevention === true) throw reject(ERR.INVALID_ARGUMENTS, 'block_rfq_not_supported', 'block_rfq_self_match_prevention');
      return ctx.services.seq.submit({ t: 'set_self_trading_config', userId: caller(ctx).userId, mode: p.mode, extendedToSubaccounts: p.extended_to_subaccounts }, (r) => r);
    },
  }),
];
