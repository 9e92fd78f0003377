// The wallet's client methods (issue 32; docs/api-notes.md "Wallet"): withdrawals, deposits, deposit
// addresses and the address book, with Deribit's params and result fields. The engine side is
// src/wallet/: every change is one command carrying the settings it is decided under, so these
// handlers only parse, pick the settings and render.
import { Type } from '@sinclair/typebox';
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { randomToken } from '../../auth/crypto.ts';
import type { Services } from '../../app/services.ts';
import type { WalletConfig } from '../../app/config.ts';
import { DEFAULT_MAX_DEPOSIT_ADDRESSES, type Wallet } from '../../wallet/wallet.ts';
import { PRIORITIES, type AddressBookEntry, type AddressBookType, type BeneficiaryInfo, type DepositAddress, type Priority, type WalletDeposit, type WithdrawalRecord } from '../../wallet/types.ts';
import { money } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, SafeText, caller, unwrap } from './common.ts';

/** The settings when the server's config has none (the schema's defaults). */
export const WALLET_DEFAULTS: WalletConfig = {
  addressBookOnly: true,
  addressBookWaitMs: 86_400_000,
  addressBookMax: 100,
  maxPendingWithdrawals: 10,
  maxDepositAddresses: DEFAULT_MAX_DEPOSIT_ADDRESSES,
  autoCompleteMs: 60_000,
};
export const walletConfig = (s: Services): WalletConfig => s.config.wallet ?? WALLET_DEFAULTS;

/** A chain address or transaction id: visible ASCII, no spaces. */
export const Address = Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]+$' });
const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 });
const Nonce = Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' }));
const Page = { count: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }), offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }) };
const BookType = Type.Union([Type.Literal('transfer'), Type.Literal('withdrawal'), Type.Literal('deposit_source')]);
const Text = (max: number) => Type.Optional(SafeText({ maxLength: max }));
/** Deribit's beneficiary (travel-rule) fields; kept as given, none checked against anything. */
const Beneficiary = {
  beneficiary_vasp_name: Text(128),
  beneficiary_vasp_did: Text(128),
  beneficiary_vasp_website: Text(256),
  beneficiary_first_name: Text(128),
  beneficiary_last_name: Text(128),
  beneficiary_company_name: Text(128),
  beneficiary_address: Text(256),
  agreed: Type.Optional(Type.Boolean()),
  personal: Type.Optional(Type.Boolean()),
};

function beneficiary(p: Partial<Record<keyof BeneficiaryInfo, unknown>>): BeneficiaryInfo {
  const t = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    beneficiary_vasp_name: t(p.beneficiary_vasp_name),
    beneficiary_vasp_did: t(p.beneficiary_vasp_did),
    beneficiary_vasp_website: t(p.beneficiary_vasp_website),
    beneficiary_first_name: t(p.beneficiary_first_name),
    beneficiary_last_name: t(p.beneficiary_last_name),
    beneficiary_company_name: t(p.beneficiary_company_name),
    beneficiary_address: t(p.beneficiary_address),
    agreed: p.agreed === true,
    personal: p.personal === true,
  };
}

export function minorAmount(currency: string, amount: number): { code: CurrencyCode; minor: number } {
  const cur = CURRENCIES[currency as CurrencyCode];
  const minor = parseScaled(amount, cur.decimals);
  if (minor === null) throw reject(ERR.INVALID_PARAMS, `at most ${cur.decimals} decimals`, 'amount');
  if (minor <= 0) throw reject(ERR.INVALID_PARAMS, 'must be positive', 'amount');
  return { code: cur.code, minor };
}

export function renderWithdrawal(w: WithdrawalRecord): Record<string, unknown> {
  return {
    address: w.address,
    amount: money(w.amount, w.currency),
    confirmed_timestamp: w.confirmed,
    created_timestamp: w.created,
    currency: w.currency,
    fee: 0,
    id: w.id,
    // the rank of Deribit's priority names, 1 (very_low) to 7 (insane): there is no network fee here
    priority: PRIORITIES.indexOf(w.priority) + 1,
    state: w.state,
    transaction_id: w.txid,
    updated_timestamp: w.updated,
    nonce: w.nonce ?? '',
  };
}

function renderDeposit(d: WalletDeposit): Record<string, unknown> {
  return {
    currency: d.currency,
    address: d.address,
    amount: money(d.amount, d.currency),
    state: d.state,
    transaction_id: d.txid,
    source_address: '',
    received_timestamp: d.received,
    updated_timestamp: d.updated,
    note: '',
    clearance_state: 'success',
    refund_transaction_id: '',
  };
}

const renderAddress = (a: DepositAddress) => ({ creation_timestamp: a.created, currency: a.currency, address: a.address, type: 'deposit' });

function renderEntry(e: AddressBookEntry, now: number): Record<string, unknown> {
  const waiting = now < e.readyAt;
  return {
    currency: e.currency,
    address: e.address,
    creation_timestamp: e.created,
    type: e.type,
    label: e.label,
    ...e.info,
    info_required: false,
    status: waiting ? 'waiting' : 'confirmed',
    waiting_timestamp: waiting,
    requires_confirmation: false,
    requires_confirmation_change: false,
  };
}

/** get_withdrawals and get_deposits: the caller's records in one currency, newest first, one page rendered. */
function historyMethod<T>(name: string, summary: string, list: (w: Wallet, userId: number, currency: CurrencyCode) => T[], render: (r: T) => Record<string, unknown>) {
  return defineMethod({
    name,
    scope: 'wallet:read',
    summary,
    params: Type.Object({ currency: CurrencyParam, ...Page }),
    handler(ctx, p) {
      const s = ctx.services;
      const me = caller(ctx).userId;
      return s.seq.read(() => {
        const all = list(s.ex.wallet, me, p.currency as CurrencyCode);
        return { count: all.length, data: all.slice(p.offset, p.offset + p.count).map(render) };
      });
    },
  });
}

export const walletMethods = [
  defineMethod({
    name: 'private/withdraw',
    scope: 'wallet:read_write',
    summary:
      'A pending withdrawal (main account only): its amount leaves the balance at once (the cash rules apply) and is given back if it is cancelled or rejected; an operator completes it. With STRIKEBOOK_WITHDRAWAL_ADDRESS_BOOK_ONLY, only to a `withdrawal` address-book entry past its waiting period. Idempotent by `nonce`.',
    params: Type.Object({ currency: CurrencyParam, address: Address, amount: Type.Number(), priority: Type.Optional(Type.Union(PRIORITIES.map((x) => Type.Literal(x)))), nonce: Nonce }),
    handler(ctx, p) {
      const s = ctx.services;
      const w = walletConfig(s);
      const a = minorAmount(p.currency, p.amount);
      const autoCompleteMs = s.config.mode === 'sandbox' && w.autoCompleteMs > 0 ? w.autoCompleteMs : null;
      return s.seq.submit(
        {
          t: 'wallet_withdraw',
          userId: caller(ctx).userId,
          currency: a.code,
          amount: a.minor,
          address: p.address,
          priority: (p.priority ?? 'high') as Priority,
          nonce: p.nonce ?? null,
          rules: { bookOnly: w.addressBookOnly, maxPending: w.maxPendingWithdrawals, autoCompleteMs },
        },
        (r) => renderWithdrawal(unwrap(r) as WithdrawalRecord),
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_withdrawal',
    scope: 'wallet:read_write',
    summary: 'Cancels a pending withdrawal of the caller; its amount returns to the balance.',
    params: Type.Object({ currency: CurrencyParam, id: Id }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'wallet_cancel_withdrawal', userId: caller(ctx).userId, id: p.id }, (r) => {
        const w = unwrap(r) as WithdrawalRecord;
        return renderWithdrawal(w);
      });
    },
  }),
  historyMethod('private/get_withdrawals', "The caller's withdrawals in one currency, newest first.", (w, me, c) => w.withdrawalsOf(me, c), renderWithdrawal),
  historyMethod('private/get_deposits', "The caller's deposits in one currency, newest first (credited ones and the sandbox's self-service deposits).", (w, me, c) => w.depositsOf(me, c), renderDeposit),
  defineMethod({
    name: 'private/create_deposit_address',
    scope: 'wallet:read_write',
    summary: "A new deposit address from the pool an operator loads (private/add_deposit_addresses); an empty pool is `11030 deposit_address_pool_empty` (the sandbox generates one instead). At most STRIKEBOOK_MAX_DEPOSIT_ADDRESSES per currency.",
    params: Type.Object({ currency: CurrencyParam }),
    handler(ctx, p) {
      const s = ctx.services;
      // the sandbox's address is made here, at the edge (random), and used only when the pool is empty
      const fallback = s.config.mode === 'sandbox' ? `sandbox-${p.currency.toLowerCase()}-${randomToken(16)}` : null;
      return s.seq.submit({ t: 'wallet_new_address', userId: caller(ctx).userId, currency: p.currency as CurrencyCode, fallback, max: walletConfig(s).maxDepositAddresses }, (r) =>
        renderAddress(unwrap(r) as DepositAddress),
      );
    },
  }),
  defineMethod({
    name: 'private/get_current_deposit_address',
    scope: 'wallet:read',
    summary: "The caller's newest deposit address in the currency, or null before create_deposit_address.",
    params: Type.Object({ currency: CurrencyParam }),
    handler(ctx, p) {
      const s = ctx.services;
      const me = caller(ctx).userId;
      return s.seq.read(() => {
        const a = s.ex.wallet.currentAddress(me, p.currency as CurrencyCode);
        return a === null ? null : renderAddress(a);
      });
    },
  }),
  defineMethod({
    name: 'private/add_to_address_book',
    scope: 'wallet:read_write',
    summary: 'A withdrawal address can receive withdrawals STRIKEBOOK_ADDRESS_BOOK_WAIT_MS after it was added (`status` `waiting` until then); at most STRIKEBOOK_ADDRESS_BOOK_MAX entries.',
    params: Type.Object({ currency: CurrencyParam, type: BookType, address: Address, label: SafeText({ maxLength: 64, default: '' }), ...Beneficiary }),
    handler(ctx, p) {
      const s = ctx.services;
      const w = walletConfig(s);
      return s.seq.submit(
        { t: 'address_book_add', userId: caller(ctx).userId, currency: p.currency as CurrencyCode, type: p.type as AddressBookType, address: p.address, label: p.label, info: beneficiary(p), max: w.addressBookMax, waitMs: w.addressBookWaitMs },
        (r) => renderEntry(unwrap(r) as AddressBookEntry, s.ex.now),
      );
    },
  }),
  defineMethod({
    name: 'private/update_in_address_book',
    scope: 'wallet:read_write',
    summary: 'Changes the label and beneficiary of an entry (its waiting period runs on).',
    params: Type.Object({ currency: CurrencyParam, type: BookType, address: Address, label: SafeText({ maxLength: 64, default: '' }), ...Beneficiary }),
    handler(ctx, p) {
      return ctx.services.seq.submit(
        { t: 'address_book_update', userId: caller(ctx).userId, currency: p.currency as CurrencyCode, type: p.type as AddressBookType, address: p.address, label: p.label, info: beneficiary(p) },
        (r) => (unwrap(r), 'ok'),
      );
    },
  }),
  defineMethod({
    name: 'private/remove_from_address_book',
    scope: 'wallet:read_write',
    params: Type.Object({ currency: CurrencyParam, type: BookType, address: Address }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'address_book_remove', userId: caller(ctx).userId, currency: p.currency as CurrencyCode, type: p.type as AddressBookType, address: p.address }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/get_address_book',
    scope: 'wallet:read',
    params: Type.Object({ currency: CurrencyParam, type: BookType }),
    handler(ctx, p) {
      const s = ctx.services;
      const me = caller(ctx).userId;
      return s.seq.read(() => (s.ex.wallet.book.get(me) ?? []).filter((e) => e.currency === p.currency && e.type === p.type).map((e) => renderEntry(e, s.clock.now())));
    },
  }),
];
