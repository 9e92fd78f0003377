// Subaccounts and transfers between the accounts of one main account (issue 32; docs/api-notes.md
// "Subaccounts and transfers"). The engine side is src/accounts/: every change is one command, and
// the engine checks who may act on which account, so these handlers only parse and render. A
// subaccount's session comes from its main account's (private/exchange_token).
import { Type } from '@sinclair/typebox';
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { sha256Hex } from '../../auth/crypto.ts';
import { DEFAULT_MAX_SUBACCOUNTS } from '../../accounts/subaccounts.ts';
import type { SubaccountRecord, TransferRecord, UserTransferRecord } from '../../accounts/types.ts';
import { money, renderOrder } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { balanceFields, renderPosition } from './account.ts';
import { issueTokens, narrowScope, roleScope } from './auth.ts';
import { CurrencyParam, caller, unwrap } from './common.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 });
const Nonce = Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' }));
/** Deribit's usernames: letters, digits and `_`. */
const Name = Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_]+$' });

/** The caller, which must be a main account (Deribit's `mainaccount` scope). */
export function mainCaller(ctx: CallContext): number {
  const c = caller(ctx);
  if (ctx.services.ex.subaccounts.isSubaccount(c.userId)) throw reject(ERR.FORBIDDEN, 'main_account_only');
  return c.userId;
}

/** Per currency, lower-case keys (Deribit's `portfolio`). */
function portfolio(ex: Exchange, user: User): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of CURRENCY_CODES) {
    // a cross account's pooled figures, as get_account_summary shows them
    out[c.toLowerCase()] = { ...balanceFields(ex, user, c), spot_reserve: 0, additional_reserve: 0 };
  }
  return out;
}

/** One account of the family as Deribit's get_subaccounts lists it. */
function renderAccount(ex: Exchange, user: User, sub: SubaccountRecord | undefined, withPortfolio: boolean): Record<string, unknown> {
  // a subaccount's notifications go to its main account's email
  const email = sub === undefined ? user.email : (sub.email ?? ex.users.get(sub.mainId)?.email ?? '');
  const username = sub?.username ?? user.email;
  const out: Record<string, unknown> = {
    username,
    type: sub === undefined ? 'main' : 'subaccount',
    id: user.id,
    email,
    not_confirmed_email: '',
    security_keys_enabled: false,
    security_keys_assignments: [],
    system_name: username,
    receive_notifications: sub?.notifications ?? false,
    is_password: sub === undefined,
    margin_model: ex.pm.model(user.id),
    proof_id: '',
    proof_id_signature: '',
    login_enabled: sub?.loginEnabled ?? true,
  };
  if (withPortfolio) out.portfolio = portfolio(ex, user);
  return out;
}

/** A transfer as seen from one of its two accounts. */
export function renderTransfer(t: TransferRecord, viewer: number): Record<string, unknown> {
  const out = t.from === viewer;
  return {
    id: t.id,
    created_timestamp: t.ts,
    updated_timestamp: t.ts,
    type: 'subaccount',
    currency: t.currency,
    amount: money(t.amount, t.currency),
    other_side: out ? t.toName : t.fromName,
    direction: out ? 'payment' : 'income',
    state: 'confirmed',
    nonce: t.nonce ?? '',
  };
}

/** A transfer to or from another user, as seen from one of its two accounts (Deribit's `type: "user"`). */
export function renderUserTransfer(t: UserTransferRecord, viewer: number): Record<string, unknown> {
  const out = t.from === viewer;
  return {
    id: t.id,
    created_timestamp: t.ts,
    updated_timestamp: t.updated,
    type: 'user',
    currency: t.currency,
    amount: money(t.amount, t.currency),
    other_side: out ? t.toName : t.fromName,
    direction: out ? 'payment' : 'income',
    state: t.state,
    nonce: t.nonce ?? '',
  };
}

export function amountOf(currency: string, amount: number): { code: CurrencyCode; minor: number } {
  const cur = CURRENCIES[currency as CurrencyCode];
  const minor = parseScaled(amount, cur.decimals);
  if (minor === null) throw reject(ERR.INVALID_PARAMS, `at most ${cur.decimals} decimals`, 'amount');
  if (minor <= 0) throw reject(ERR.INVALID_PARAMS, 'must be positive', 'amount');
  return { code: cur.code, minor };
}

function submitTransfer(ctx: CallContext, from: number, to: number, currency: string, amount: number, nonce: string | undefined) {
  const by = caller(ctx).userId;
  const a = amountOf(currency, amount);
  return ctx.services.seq.submit({ t: 'transfer', by, from, to, currency: a.code, amount: a.minor, nonce: nonce ?? null }, (r) => renderTransfer(unwrap(r) as TransferRecord, from));
}

export const subaccountMethods = [
  defineMethod({
    name: 'private/create_subaccount',
    scope: 'account:read_write',
    summary: 'A new subaccount of the calling main account: a user of its own for trading and margin, up to STRIKEBOOK_MAX_SUBACCOUNTS per main account.',
    params: Type.Object({}),
    handler(ctx) {
      const s = ctx.services;
      const mainId = mainCaller(ctx);
      return s.seq.submit({ t: 'create_subaccount', mainId, max: s.config.maxSubaccounts ?? DEFAULT_MAX_SUBACCOUNTS }, (r) => {
        const u = unwrap(r) as User;
        return {
          ...renderAccount(s.ex, u, s.ex.subaccounts.subs.get(u.id), true),
          disabled_trading_products: [],
          trading_products_details: [],
          referrals_count: 0,
        };
      });
    },
  }),
  defineMethod({
    name: 'private/get_subaccounts',
    scope: 'account:read',
    summary: 'The main account and its subaccounts (main account only).',
    params: Type.Object({ with_portfolio: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const s = ctx.services;
      const mainId = mainCaller(ctx);
      return s.seq.read(() => {
        const ex = s.ex;
        const main = ex.users.get(mainId);
        if (!main) throw reject(ERR.UNAUTHORIZED);
        const out = [renderAccount(ex, main, undefined, p.with_portfolio)];
        for (const id of ex.subaccounts.childrenOf(mainId)) out.push(renderAccount(ex, ex.users.get(id)!, ex.subaccounts.subs.get(id), p.with_portfolio));
        return out;
      });
    },
  }),
  defineMethod({
    name: 'private/get_subaccounts_details',
    scope: 'account:read',
    summary: "Every subaccount's positions (and open orders) in one currency (main account only).",
    params: Type.Object({ currency: CurrencyParam, with_open_orders: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const s = ctx.services;
      const mainId = mainCaller(ctx);
      return s.seq.read(() => {
        const ex = s.ex;
        return ex.subaccounts.childrenOf(mainId).map((id) => {
          const u = ex.users.get(id)!;
          const positions = [...u.positions.values()].filter((pos) => pos.size !== 0 && pos.inst.currency === p.currency).map((pos) => renderPosition(ex, u, pos.inst));
          const out: Record<string, unknown> = { uid: id, positions };
          if (p.with_open_orders) {
            const orders = [];
            for (const e of u.exposures.values()) if (e.inst.currency === p.currency) for (const o of e.openOrders) orders.push(o);
            // and its orders on combos (src/combos/book.ts)
            for (const o of ex.comboBooks.openOf(id)) if (o.inst.currency === p.currency) orders.push(o);
            out.open_orders = orders.sort((a, b) => a.id - b.id).map(renderOrder);
          }
          return out;
        });
      });
    },
  }),
  defineMethod({
    name: 'private/change_subaccount_name',
    scope: 'account:read_write',
    params: Type.Object({ sid: Id, name: Name }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'rename_subaccount', mainId: mainCaller(ctx), subId: p.sid, name: p.name }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/toggle_subaccount_login',
    scope: 'account:read_write',
    summary: 'Disabling ends every session of the subaccount at once and refuses new ones.',
    params: Type.Object({ sid: Id, state: Type.Union([Type.Literal('enable'), Type.Literal('disable')]) }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'subaccount_login', mainId: mainCaller(ctx), subId: p.sid, on: p.state === 'enable' }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/remove_subaccount',
    scope: 'account:read_write',
    summary: 'Only an empty subaccount (no balance, position or open order); its sessions and API keys stop at once.',
    params: Type.Object({ subaccount_id: Id }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'remove_subaccount', mainId: mainCaller(ctx), subId: p.subaccount_id }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'public/exchange_token',
    scope: 'none',
    summary: "A session of a main account's subaccount (or of the main account), from a refresh token of one of the main account's sessions; never more than that session's grants. A subaccount's session cannot be exchanged.",
    params: Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 256 }), subject_id: Id, scope: Type.Optional(Type.String({ maxLength: 512 })) }),
    async handler(ctx, p) {
      const s = ctx.services;
      const hash = sha256Hex(p.refresh_token);
      const found = await s.seq.read(() => {
        const rec = s.ex.auth.refresh.get(hash);
        if (!rec || rec.expiresAt <= s.clock.now()) return null;
        const mainId = rec.userId;
        // a subaccount's session never reaches its main account or a sibling
        if (s.ex.subaccounts.isSubaccount(mainId)) return { rec, target: undefined };
        const own = p.subject_id === mainId || s.ex.subaccounts.subs.get(p.subject_id)?.mainId === mainId;
        return { rec, target: own ? s.ex.users.get(p.subject_id) : undefined };
      });
      if (found === null) throw reject(ERR.UNAUTHORIZED, 'invalid_refresh_token', 'refresh_token');
      if (found.target === undefined) throw reject(ERR.NOT_FOUND, 'subaccount_not_found', 'subject_id');
      const scope = narrowScope(narrowScope(roleScope('user'), found.rec.scope), p.scope);
      return issueTokens(ctx, found.target, scope, null, p.scope, 'exchange_token');
    },
  }),
  defineMethod({
    name: 'private/submit_transfer_to_subaccount',
    scope: 'account:read_write',
    summary: "From the caller's account to one of its subaccounts (or, from a subaccount, to its main account); the withdrawal's cash rules apply to the sender; idempotent by `nonce`.",
    params: Type.Object({ currency: CurrencyParam, amount: Type.Number(), destination: Id, nonce: Nonce }),
    handler(ctx, p) {
      return submitTransfer(ctx, caller(ctx).userId, p.destination, p.currency, p.amount, p.nonce);
    },
  }),
  defineMethod({
    name: 'private/submit_transfer_between_subaccounts',
    scope: 'account:read_write',
    summary: 'Between two accounts of one main account (`source` defaults to the caller); a subaccount may only send its own funds to its main account; idempotent by `nonce`.',
    params: Type.Object({ currency: CurrencyParam, amount: Type.Number(), destination: Id, source: Type.Optional(Id), nonce: Nonce }),
    handler(ctx, p) {
      return submitTransfer(ctx, p.source ?? caller(ctx).userId, p.destination, p.currency, p.amount, p.nonce);
    },
  }),
  defineMethod({
    name: 'private/get_transfers',
    scope: 'account:read',
    summary: "The caller's transfers in one currency, newest first, as seen from its account (payment or income).",
    params: Type.Object({ currency: CurrencyParam, count: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }), offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }) }),
    handler(ctx, p) {
      const s = ctx.services;
      const me = caller(ctx).userId;
      return s.seq.read(() => {
        const list = s.ex.subaccounts.transfers.get(s.ex.subaccounts.mainOf(me)) ?? [];
        const mine: TransferRecord[] = [];
        for (let i = list.length - 1; i >= 0; i--) {
          const t = list[i]!;
          if (t.currency === p.currency && (t.from === me || t.to === me)) mine.push(t);
        }
        // with the transfers to and from other users, newest first (one id sequence for both kinds)
        const users = s.ex.subaccounts.users.of(me, p.currency as CurrencyCode);
        const all: Array<{ id: number; render: () => Record<string, unknown> }> = [
          ...mine.map((t) => ({ id: t.id, render: () => renderTransfer(t, me) })),
          ...users.map((t) => ({ id: t.id, render: () => renderUserTransfer(t, me) })),
        ].sort((a, b) => b.id - a.id);
        return { count: all.length, data: all.slice(p.offset, p.offset + p.count).map((x) => x.render()) };
      });
    },
  }),
];
