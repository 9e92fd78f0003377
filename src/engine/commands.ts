// Commands: the only way exchange state changes. Each is journaled as compact JSON and replayed
// verbatim, so everything non-deterministic (time, random codes, password hashes) is decided
// before a command is created and travels inside it.
import type { CurrencyCode } from '../domain/currency.ts';
import type { OptionType, SettlementPeriod } from '../domain/instrument.ts';
import type { TimeInForce } from './types.ts';

export interface InstrumentSpec {
  currency: CurrencyCode;
  name: string;
  optionType: OptionType;
  strike: number;
  expiry: number;
  settlementPeriod: SettlementPeriod;
  tick: number;
  tickSteps: { abovePrice: number; tick: number }[];
  lotScaled: number;
  makerCommission: number;
  takerCommission: number;
  contractSize: number;
}

export type Command =
  | { t: 'create_user'; email: string; passwordHash: string; role: 'admin' | 'user'; inviteCode: string | null; by: number | null }
  | { t: 'issue_token'; userId: number; access: string; refresh: string; scope: string; accessTtl: number; refreshTtl: number; replaces: string | null }
  | { t: 'revoke_token'; access: string }
  | { t: 'create_invite'; code: string; maxUses: number; expiresIn: number; note: string | null; by: number }
  | { t: 'revoke_invite'; code: string; by: number }
  | { t: 'deposit'; userId: number; currency: CurrencyCode; amount: number; depositId: string | null; by: number }
  | { t: 'withdraw'; userId: number; currency: CurrencyCode; amount: number }
  | {
      t: 'place';
      userId: number;
      side: 0 | 1;
      instrument: string;
      /** price units; NaN-free: null for market orders or when `advPrice` is used */
      price: number | null;
      advanced: 'usd' | 'implv' | null;
      advPrice: number | null;
      lots: number;
      type: 'limit' | 'market';
      tif: TimeInForce;
      postOnly: boolean;
      rejectPostOnly: boolean;
      reduceOnly: boolean;
      label: string;
      clientOrderId: string | null;
    }
  | { t: 'cancel'; userId: number; orderId: number }
  | {
      t: 'cancel_all';
      userId: number;
      currency: CurrencyCode | null;
      instrument: string | null;
      side: 0 | 1 | null;
      label: string | null;
    }
  | { t: 'index'; currency: CurrencyCode; price: number; manual: boolean; by: number | null }
  | { t: 'set_vol'; currency: CurrencyCode; atmVol: number; skew: number; curvature: number; by: number }
  | { t: 'halt'; instrument: string; halted: boolean; by: number }
  | { t: 'list'; instruments: InstrumentSpec[] }
  | { t: 'expire_orders' };

export type CommandType = Command['t'];
/** A command with the time the sequencer assigned to it. */
export type Sequenced = Command & { ts: number; seq: number };
