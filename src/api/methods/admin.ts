// Administration (API.md 3.6). Every action is a journaled command carrying the acting admin's id.
import { Type } from '@sinclair/typebox';
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { stateHash } from '../../engine/snapshot.ts';
import { money, renderInstrument } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { InstrumentName, caller, unwrap } from './common.ts';

const INDEX_CURRENCY: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };

export const adminMethods = [
  defineMethod({
    name: 'private/set_index_price',
    scope: 'admin',
    params: Type.Object({
      index_name: Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]),
      price: Type.Number({ exclusiveMinimum: 0, maximum: 1e9 }),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      if (s.config.indexFeed !== 'manual') throw reject(ERR.INVALID_ARGUMENTS, 'index_feed_not_manual', 'index_name');
      const currency = INDEX_CURRENCY[p.index_name];
      return s.seq.submit({ t: 'index', currency, price: p.price, manual: true, by: caller(ctx).userId }, () => ({
        index_name: p.index_name,
        price: p.price,
        timestamp: s.ex.now,
      }));
    },
  }),
  defineMethod({
    name: 'private/set_volatility',
    scope: 'admin',
    params: Type.Object({
      currency: Type.Union([Type.Literal('BTC'), Type.Literal('ETH')]),
      atm_vol: Type.Number({ minimum: 0.01, maximum: 10 }),
      skew: Type.Number({ minimum: -10, maximum: 10, default: -0.1 }),
      curvature: Type.Number({ minimum: -10, maximum: 10, default: 0.5 }),
    }),
    handler(ctx, p) {
      return ctx.services.seq.submit(
        { t: 'set_vol', currency: p.currency as CurrencyCode, atmVol: p.atm_vol, skew: p.skew, curvature: p.curvature, by: caller(ctx).userId },
        () => ({ currency: p.currency, atm_vol: p.atm_vol, skew: p.skew, curvature: p.curvature }),
      );
    },
  }),
  defineMethod({
    name: 'private/halt_instrument',
    scope: 'admin',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'halt', instrument: p.instrument_name, halted: true, by: caller(ctx).userId }, (r) =>
        renderInstrument(unwrap(r) as Instrument),
      );
    },
  }),
  defineMethod({
    name: 'private/resume_instrument',
    scope: 'admin',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'halt', instrument: p.instrument_name, halted: false, by: caller(ctx).userId }, (r) =>
        renderInstrument(unwrap(r) as Instrument),
      );
    },
  }),
  defineMethod({
    name: 'private/get_state_hash',
    scope: 'admin',
    params: Type.Object({}),
    handler(ctx) {
      const ex = ctx.services.ex;
      // operators (and the recovery tests) compare this with a clean replay of the journal
      return ctx.services.seq.read(() => ({ seq: ex.seq, state_hash: stateHash(ex) }));
    },
  }),
  defineMethod({
    name: 'private/list_users',
    scope: 'admin',
    params: Type.Object({
      count: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
      offset: Type.Integer({ minimum: 0, maximum: 1e9, default: 0 }),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => ({
        // balances per currency (exact decimals) and the credit tier: the admin console's users table
        users: [...ex.users.values()].slice(p.offset, p.offset + p.count).map((u) => ({
          user_id: u.id,
          email: u.email,
          role: u.role,
          creation_timestamp: u.created,
          disabled: ex.disabledUsers.has(u.id),
          tier: ctx.services.credits.limitsOf(u.id).tier,
          balances: Object.fromEntries(CURRENCY_CODES.map((c) => [c, money(u.accounts[c].balance, c)])),
        })),
        total: ex.users.size,
      }));
    },
  }),
];


