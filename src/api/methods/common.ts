// Schema pieces and helpers shared by the method groups.
import { Type } from '@sinclair/typebox';
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../../domain/errors.ts';
import { pmWarmup } from '../../risk/portfolio/warmup.ts';
import type { CallContext, Caller } from '../rpc/registry.ts';
import { SAFE_TEXT_PATTERN } from '../rpc/validate.ts';

export const CurrencyParam = Type.Union(CURRENCY_CODES.map((c) => Type.Literal(c)));
export const CurrencyOrAny = Type.Union([...CURRENCY_CODES.map((c) => Type.Literal(c)), Type.Literal('any')]);
export const InstrumentName = Type.String({ minLength: 1, maxLength: 64 });
/** Deribit's instrument kinds: every one is valid; only options are listed here, so the others select nothing. */
export const DERIBIT_KINDS = ['future', 'option', 'spot', 'future_combo', 'option_combo', 'combo', 'any'] as const;
export const KindParam = Type.Optional(Type.Union(DERIBIT_KINDS.map((k) => Type.Literal(k))));
/** Deribit's open-order `type` filters. */
export const OpenOrderTypeParam = Type.Optional(
  Type.Union(['all', 'limit', 'trigger_all', 'stop_all', 'stop_limit', 'stop_market', 'take_all', 'take_limit', 'take_market', 'trailing_all', 'trailing_stop'].map((k) => Type.Literal(k))),
);
export const Count = (def: number) => Type.Integer({ minimum: 1, maximum: 1000, default: def });
export const Timestamp = Type.Integer({ minimum: 0, maximum: 8.64e15 });
export const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$' });
// No lone UTF-16 surrogates (valid JSON escapes, but not text): hashPassword refuses them, and two
// different passwords would otherwise encode alike. `\P{Cs}` needs Ajv's unicode regexps (its default).
export const Password = Type.String({ minLength: 8, maxLength: 128, pattern: '^\\P{Cs}*$' });

/** Free text a client stores and others may display: see SAFE_TEXT_PATTERN. */
export const SafeText = (opts: { minLength?: number; maxLength: number; default?: string }) => Type.String({ ...opts, pattern: SAFE_TEXT_PATTERN });

/** The authenticated caller; the registry guarantees it for non-public scopes. */
export function caller(ctx: CallContext): Caller {
  if (!ctx.caller) throw reject(ERR.AUTHORIZATION_REQUIRED);
  return ctx.caller;
}

/** Throws a Reject so handlers can write straight-line code; the dispatcher renders it. */
export function unwrap<T>(result: T | Reject): T {
  if (isReject(result)) throw result;
  return result;
}

export function currencyFilter(c: string | undefined): CurrencyCode | null {
  return c === undefined || c === 'any' ? null : (c as CurrencyCode);
}

const STALE = Symbol('stale');

/**
 * `seq.read` for a call that reads the caller's margin figures: `fn` runs on durable state with the
 * caller's portfolio-margin sums complete, rebuilt in slices first when stale (src/risk/portfolio/
 * warmup.ts), so the read never rebuilds them in its own turn. A tick can land while the read waits
 * for the open batch to be durable: it waits again, and a third time runs as things stand.
 */
export async function readMargins<R>(ctx: CallContext, fn: () => R): Promise<R> {
  const s = ctx.services;
  const id = ctx.caller?.userId;
  if (id === undefined || s.ex.pm.models.size === 0) return s.seq.read(fn);
  const warm = pmWarmup(s.ex);
  for (let attempt = 0; ; attempt++) {
    const last = attempt >= 2;
    if (!last) await warm.readyAll([id]);
    const r = await s.seq.read(() => (!last && warm.needs(id) ? STALE : fn()));
    if (r !== STALE) return r;
  }
}
