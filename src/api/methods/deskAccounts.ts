// Issue 32, second slice: a subaccount's contact email and notifications, transfers to another user
// of the venue (queued: prepared, then confirmed or cancelled) and position moves between the
// accounts of one main account (docs/api-notes.md "Subaccounts and transfers"). The engine side is
// src/accounts/ (userTransfers.ts, movePositions.ts); these handlers parse and render.
import { Type } from '@sinclair/typebox';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE, lotsToAmount, priceToNumber } from '../../domain/instrument.ts';
import { MAX_MOVE_LEGS } from '../../accounts/movePositions.ts';
import type { MoveLeg, MovedLeg, UserTransferRecord } from '../../accounts/types.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, Email, InstrumentName, caller, unwrap } from './common.ts';
import { amountOf, mainCaller, renderUserTransfer } from './subaccounts.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 });
const Nonce = Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' }));
/** Deribit sends amounts and prices as numbers or as decimal text. */
const Decimal = Type.Union([Type.Number(), Type.String({ minLength: 1, maxLength: 40 })]);
const DEFAULT_HOLD_SECONDS = 60;

export const deskAccountMethods = [
  defineMethod({
    name: 'private/set_email_for_subaccount',
    scope: 'account:read_write',
    summary: "A subaccount's own contact email (shown as its `email`; without one, its main account's). Main account only.",
    params: Type.Object({ sid: Id, email: Email }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'subaccount_email', mainId: mainCaller(ctx), subId: p.sid, email: p.email }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/toggle_notifications_from_subaccount',
    scope: 'account:read_write',
    summary: "Whether the subaccount's notifications are sent (its `receive_notifications`). Main account only.",
    params: Type.Object({ sid: Id, state: Type.Boolean() }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'subaccount_notifications', mainId: mainCaller(ctx), subId: p.sid, on: p.state }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/submit_transfer_to_user',
    scope: 'account:read_write',
    summary:
      "To another user of the venue: `destination` is an address of the caller's address book of type `transfer` (its waiting period over) that names the receiver by one of its deposit addresses or its username (its email). The amount leaves the sender at once and the transfer is `prepared` (cancellable) for STRIKEBOOK_USER_TRANSFER_HOLD_SECONDS, then `confirmed`. Main account only; the withdrawal's cash rules apply; idempotent by `nonce`.",
    params: Type.Object({ currency: CurrencyParam, amount: Type.Number(), destination: Type.String({ minLength: 1, maxLength: 254 }), nonce: Nonce }),
    handler(ctx, p) {
      const s = ctx.services;
      const by = mainCaller(ctx);
      const a = amountOf(p.currency, p.amount);
      const holdMs = (s.config.userTransferHoldSeconds ?? DEFAULT_HOLD_SECONDS) * 1000;
      return s.seq.submit({ t: 'user_transfer', by, destination: p.destination, currency: a.code, amount: a.minor, nonce: p.nonce ?? null, holdMs, book: true }, (r) => renderUserTransfer(unwrap(r) as UserTransferRecord, by));
    },
  }),
  defineMethod({
    name: 'private/cancel_transfer_by_id',
    scope: 'account:read_write',
    summary: "Cancels the caller's own `prepared` transfer to another user: the amount goes back to it. A confirmed or cancelled one is 11029.",
    params: Type.Object({ currency: CurrencyParam, id: Id }),
    handler(ctx, p) {
      const by = caller(ctx).userId;
      return ctx.services.seq.submit({ t: 'cancel_transfer', by, id: p.id, currency: p.currency }, (r) => renderUserTransfer(unwrap(r) as UserTransferRecord, by));
    },
  }),
  defineMethod({
    name: 'private/move_positions',
    scope: 'trade:read_write',
    summary:
      'Moves positions between two accounts of the calling main account at a price inside the band (default: the mark), every leg or none; refused when either account would be left below zero or below maintenance margin. No fee.',
    params: Type.Object({
      currency: Type.Optional(CurrencyParam),
      source_uid: Id,
      target_uid: Id,
      trades: Type.Array(Type.Object({ instrument_name: InstrumentName, amount: Decimal, price: Type.Optional(Decimal) }), { minItems: 1, maxItems: MAX_MOVE_LEGS }),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      const by = mainCaller(ctx);
      const legs: MoveLeg[] = p.trades.map((t, i) => {
        const lots = parseScaled(t.amount, AMOUNT_SCALE);
        if (lots === null || lots <= 0) throw reject(ERR.INVALID_PARAMS, 'amount must be a positive decimal', `trades[${i}].amount`);
        let price: number | null = null;
        if (t.price !== undefined) {
          price = parseScaled(t.price, PRICE_SCALE);
          if (price === null || price <= 0) throw reject(ERR.INVALID_PARAMS, 'price must be a positive decimal', `trades[${i}].price`);
        }
        // `currency`, when given, names the currency of every instrument moved
        if (p.currency !== undefined && !t.instrument_name.startsWith(`${p.currency}-`)) throw reject(ERR.INVALID_PARAMS, `not a ${p.currency} instrument`, `trades[${i}].instrument_name`);
        return { instrument: t.instrument_name, lots, price };
      });
      return s.seq.submit({ t: 'move_positions', by, from: p.source_uid, to: p.target_uid, legs }, (r) => ({
        trades: (unwrap(r) as MovedLeg[]).map((m) => {
          const inst = s.ex.instruments.get(m.instrument)!;
          return { source_uid: p.source_uid, target_uid: p.target_uid, instrument_name: m.instrument, direction: m.side, price: priceToNumber(m.price), amount: lotsToAmount(inst, m.lots) };
        }),
      }));
    },
  }),
];
