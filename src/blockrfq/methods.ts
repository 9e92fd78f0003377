// The block RFQ methods (issue 34; docs/api-notes.md "Block RFQ"): params parsed to exact integers
// at the edge, every change one journaled engine command (src/blockrfq/engine.ts).
import { Type, type Static } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { parseScaled } from '../domain/decimal.ts';
import { ERR, reject } from '../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE } from '../domain/instrument.ts';
import type { Services } from '../app/services.ts';
import type { Exchange } from '../engine/exchange.ts';
import { blockRules } from '../api/methods/blockTrades.ts';
import { Count, CurrencyOrAny, InstrumentName, caller, unwrap } from '../api/methods/common.ts';
import { defineMethod } from '../api/rpc/registry.ts';
import type { BlockRules } from '../blocktrades/types.ts';
import { MAX_RFQ_LEGS, MIN_ANONYMOUS_MAKERS, visibleTo } from './engine.ts';
import { identityOf, renderPublicTrade, renderQuote, renderRfq, renderRfqBlockTrade } from './render.ts';
import type { Rfq, RfqFill, RfqHedge, RfqLeg, RfqQuote } from './types.ts';
import { pmWarmup } from '../risk/portfolio/warmup.ts';

/** Lifetime of an RFQ when the setting is absent (Deribit: 5 minutes). */
export const RFQ_TTL_DEFAULT_MS = 300_000;
const Direction = Type.Union([Type.Literal('buy'), Type.Literal('sell')]);
const Label = Type.String({ maxLength: 64 });
const RfqId = Type.Integer({ minimum: 1, maximum: 2 ** 52 });
const Amount = Type.Number({ exclusiveMinimum: 0, maximum: 1e9 });
const Price = Type.Number({ minimum: -1e9, maximum: 1e9 });
const CreateLegs = Type.Array(Type.Object({ instrument_name: InstrumentName, amount: Amount, direction: Direction }), { minItems: 1, maxItems: MAX_RFQ_LEGS });
const PricedLegs = Type.Array(
  Type.Object({ instrument_name: InstrumentName, price: Price, direction: Type.Optional(Direction), ratio: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }),
  { minItems: 1, maxItems: MAX_RFQ_LEGS },
);
const HedgeObject = Type.Object({ instrument_name: InstrumentName, direction: Type.Optional(Direction), price: Type.Optional(Price), amount: Type.Optional(Amount) });
/** Deribit lists `hedge` as a string (its GET form: the object as JSON) and documents an object. */
const Hedge = Type.Union([HedgeObject, Type.String({ maxLength: 512 })]);
type HedgeParam = Static<typeof Hedge>;
type HedgeGiven = Static<typeof HedgeObject>;
const side = (d: 'buy' | 'sell'): 0 | 1 => (d === 'buy' ? 0 : 1);

/** The block rules of RFQ trades: the block band; any leg from one lot of its instrument. */
function rfqRules(s: Services): BlockRules {
  return { bandPct: blockRules(s).bandPct, minAmount: {} };
}

function lotsOf(amount: number, param = 'amount'): number {
  const lots = parseScaled(amount, AMOUNT_SCALE);
  if (lots === null || lots <= 0) throw reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', param);
  return lots;
}

function priceOf(p: number): number {
  const v = parseScaled(p, PRICE_SCALE);
  if (v === null) throw reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
  return v;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Leg amounts to ratios: the RFQ's amount is their greatest common divisor. */
function ratiosOf(legs: Static<typeof CreateLegs>): { legs: RfqLeg[]; lots: number } {
  const lots = legs.map((l) => lotsOf(l.amount));
  const g = lots.reduce(gcd);
  return { legs: legs.map((l, i) => ({ instrument: l.instrument_name, side: side(l.direction), ratio: lots[i]! / g })), lots: g };
}

/** The maker's leg prices in the RFQ's leg order; each leg named once, with the RFQ's ratio. */
function legPrices(r: Rfq, legs: Static<typeof PricedLegs>, quoteSide: 0 | 1): number[] {
  if (legs.length !== r.legs.length) throw reject(ERR.INVALID_ARGUMENTS, 'legs_mismatch', 'legs');
  return r.legs.map((l) => {
    const given = legs.find((x) => x.instrument_name === l.instrument);
    if (given === undefined) throw reject(ERR.INVALID_ARGUMENTS, 'legs_mismatch', 'legs');
    if (given.ratio !== undefined && given.ratio !== l.ratio) throw reject(ERR.INVALID_ARGUMENTS, 'ratio_mismatch', 'legs');
    // a leg's direction: the structure's, or the maker's own side of it
    const makerSide = quoteSide === 0 ? l.side : l.side === 0 ? 1 : 0;
    if (given.direction !== undefined && side(given.direction) !== l.side && side(given.direction) !== makerSide) throw reject(ERR.INVALID_ARGUMENTS, 'direction_mismatch', 'legs');
    return priceOf(given.price);
  });
}

function structurePriceOf(r: Rfq, prices: number[]): number {
  let p = 0;
  r.legs.forEach((l, i) => (p += (l.side === 0 ? 1 : -1) * l.ratio * prices[i]!));
  return p;
}

function rfqFor(ex: Exchange, id: number, userId: number): Rfq {
  const r = ex.blockRfqs.rfqs.get(id);
  if (r === undefined || !visibleTo(ex, r, userId)) throw reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  return r;
}

/**
 * The JSON form of a hedge is checked as the object form is (and keeps only its fields). Compiled at
 * its first use, not when the module loads: Ajv's first compile also compiles its meta-schema, ~50 ms
 * of every start on these machines for a check few servers ever run (src/api/rpc/validate.ts
 * compiles the methods' validators lazily for the same reason).
 */
let hedgeValidator: ValidateFunction<HedgeGiven> | null = null;
function hedgeCheck(v: unknown): v is HedgeGiven {
  hedgeValidator ??= new Ajv({ coerceTypes: false, removeAdditional: 'all', strict: false }).compile<HedgeGiven>(HedgeObject);
  return hedgeValidator(v);
}

/** The hedge object of a param (absent, an empty string: none); a string must be its JSON. */
function hedgeParam(h: HedgeParam | undefined): HedgeGiven | null {
  if (h === undefined || h === '') return null;
  if (typeof h !== 'string') return h;
  let v: unknown;
  try {
    v = JSON.parse(h);
  } catch {
    throw reject(ERR.INVALID_PARAMS, 'hedge_not_an_object', 'hedge');
  }
  if (!hedgeCheck(v)) throw reject(ERR.INVALID_PARAMS, 'hedge_not_an_object', 'hedge');
  return v;
}

/** The hedge leg of create_block_rfq: every field required there. */
function createHedge(h: HedgeParam | undefined): RfqHedge | null {
  const g = hedgeParam(h);
  if (g === null) return null;
  if (g.direction === undefined || g.price === undefined || g.amount === undefined) throw reject(ERR.INVALID_PARAMS, 'hedge_fields_required', 'hedge');
  return { instrument: g.instrument_name, side: side(g.direction), lots: lotsOf(g.amount, 'hedge'), price: priceOf(g.price) };
}

/**
 * A quote's hedge price. The hedge named must be the RFQ's (instrument, and amount if given; its
 * direction the RFQ's or the maker's own side of it), as legs are matched.
 */
function quoteHedgePrice(r: Rfq, h: HedgeParam | undefined, quoteSide: 0 | 1): number | null {
  const g = hedgeParam(h);
  if (g === null) return null;
  const rh = r.hedge;
  if (rh === undefined) throw reject(ERR.INVALID_ARGUMENTS, 'block_rfq_has_no_hedge', 'hedge');
  if (g.instrument_name !== rh.instrument) throw reject(ERR.INVALID_ARGUMENTS, 'hedge_mismatch', 'hedge');
  if (g.amount !== undefined && lotsOf(g.amount, 'hedge') !== rh.lots) throw reject(ERR.INVALID_ARGUMENTS, 'hedge_mismatch', 'hedge');
  const makerSide = quoteSide === 0 ? rh.side : rh.side === 0 ? 1 : 0;
  if (g.direction !== undefined && side(g.direction) !== rh.side && side(g.direction) !== makerSide) throw reject(ERR.INVALID_ARGUMENTS, 'direction_mismatch', 'hedge');
  if (g.price === undefined) throw reject(ERR.INVALID_PARAMS, 'hedge_price_required', 'hedge');
  return priceOf(g.price);
}

const QuoteParams = {
  block_rfq_id: RfqId,
  amount: Amount,
  legs: PricedLegs,
  label: Type.Optional(Label),
  hedge: Type.Optional(Hedge),
  price: Type.Optional(Price),
  expires_at: Type.Optional(Type.Integer({ minimum: 0, maximum: 8.64e15 })),
};

function submitQuote(s: Services, userId: number, r: Rfq, quoteId: number | null, dirn: 0 | 1, p: { amount: number; legs: Static<typeof PricedLegs>; price?: number; expires_at?: number; label?: string; hedge?: HedgeParam }, aon: boolean): Promise<unknown> {
  const hedgePrice = quoteHedgePrice(r, p.hedge, dirn);
  const prices = legPrices(r, p.legs, dirn);
  if (p.price !== undefined && priceOf(p.price) !== structurePriceOf(r, prices)) throw reject(ERR.INVALID_PRICE, 'price_not_sum_of_legs', 'price');
  return s.seq.submit(
    { t: 'rfq_quote', userId, rfqId: r.id, quoteId, side: dirn, lots: lotsOf(p.amount), legPrices: prices, aon, expiresAt: p.expires_at ?? null, label: p.label ?? '', rules: rfqRules(s), ...(hedgePrice !== null ? { hedgePrice } : {}) },
    (res) => renderQuote(s.ex, unwrap(res) as RfqQuote),
  );
}

export const blockRfqMethods = [
  defineMethod({
    name: 'private/set_block_rfq_maker',
    scope: 'admin',
    summary: 'Operator: marks an account as a block RFQ maker (it sees RFQs and may quote them), or unmarks it.',
    params: Type.Object({ user_id: Type.Integer({ minimum: 1, maximum: 2 ** 52 }), is_maker: Type.Boolean() }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'rfq_set_maker', by: caller(ctx).userId, userId: p.user_id, maker: p.is_maker }, (r) => ({ user_id: p.user_id, is_maker: unwrap(r) }));
    },
  }),
  defineMethod({
    name: 'private/create_block_rfq',
    scope: 'trade:read_write',
    summary: 'Requests quotes for a structure (legs with amounts; their ratios are the amounts over their greatest common divisor) from the named makers, or every maker; expires after STRIKEBOOK_BLOCK_RFQ_TTL_MS.',
    params: Type.Object({
      legs: CreateLegs,
      trade_allocations: Type.Optional(Type.Array(Type.Object({}), { maxItems: 0 })),
      hedge: Type.Optional(Hedge),
      label: Type.Optional(Label),
      makers: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 254 }), { maxItems: 100 })),
      disclosed: Type.Optional(Type.Boolean()),
    }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const hedge = createHedge(p.hedge);
      const { legs, lots } = ratiosOf(p.legs);
      let makers: number[] | null = null;
      if (p.makers !== undefined && p.makers.length > 0) {
        makers = await s.seq.read(() =>
          p.makers!.map((name) => {
            for (const m of s.ex.blockRfqs.makers) if (identityOf(s.ex, m) === name) return m;
            throw reject(ERR.INVALID_ARGUMENTS, 'not_a_block_rfq_maker', 'makers');
          }),
        );
      }
      return s.seq.submit(
        { t: 'rfq_create', userId: c.userId, legs, lots, makers, disclosed: p.disclosed ?? true, label: p.label ?? '', ttlMs: s.config.blockRfqTtlMs ?? RFQ_TTL_DEFAULT_MS, minAnonymousMakers: MIN_ANONYMOUS_MAKERS, ...(hedge !== null ? { hedge, rules: rfqRules(s) } : {}) },
        (r) => renderRfq(s.ex, unwrap(r) as Rfq, c.userId),
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_block_rfq',
    scope: 'trade:read_write',
    params: Type.Object({ block_rfq_id: RfqId }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.submit({ t: 'rfq_cancel', userId: c.userId, rfqId: p.block_rfq_id }, (r) => renderRfq(s.ex, unwrap(r) as Rfq, c.userId));
    },
  }),
  defineMethod({
    name: 'private/get_block_rfqs',
    scope: 'trade:read',
    summary: 'The RFQs the caller made (role taker) or was sent as a maker, newest first; `continuation` is the last id of the previous page.',
    params: Type.Object({
      count: Count(20),
      state: Type.Optional(Type.Union(['open', 'filled', 'traded', 'cancelled', 'expired', 'closed'].map((x) => Type.Literal(x)))),
      role: Type.Optional(Type.Union([Type.Literal('any'), Type.Literal('taker'), Type.Literal('maker')])),
      continuation: Type.Optional(Type.Integer({ minimum: 0 })),
      block_rfq_id: Type.Optional(RfqId),
      currency: Type.Optional(CurrencyOrAny),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        const all = [...s.ex.blockRfqs.rfqs.values()].sort((a, b) => b.id - a.id);
        const out: Record<string, unknown>[] = [];
        let last: number | null = null;
        for (const r of all) {
          if (out.length >= p.count) break;
          if (p.continuation !== undefined && p.continuation > 0 && r.id >= p.continuation) continue;
          if (p.block_rfq_id !== undefined && r.id !== p.block_rfq_id) continue;
          if (p.currency !== undefined && p.currency !== 'any' && r.currency !== p.currency) continue;
          const role = r.taker === c.userId ? 'taker' : visibleTo(s.ex, r, c.userId) ? 'maker' : null;
          if (role === null || (p.role !== undefined && p.role !== 'any' && p.role !== role)) continue;
          const st = p.state === 'traded' ? 'filled' : p.state;
          if (st !== undefined && (st === 'closed' ? r.state === 'open' : r.state !== st)) continue;
          out.push(renderRfq(s.ex, r, c.userId));
          last = r.id;
        }
        return { block_rfqs: out, continuation: out.length === p.count && last !== null ? String(last) : null };
      });
    },
  }),
  defineMethod({
    name: 'private/add_block_rfq_quote',
    scope: 'trade:read_write',
    summary: "A maker's quote on an RFQ: `direction` buy bids for the structure, sell offers it; leg prices in the RFQ's leg order, the structure price their ratio-weighted sum (`price`, if given, must equal it).",
    params: Type.Object({ ...QuoteParams, direction: Direction, execution_instruction: Type.Optional(Type.Union([Type.Literal('all_or_none'), Type.Literal('any_part_of')])) }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const r = await s.seq.read(() => rfqFor(s.ex, p.block_rfq_id, c.userId));
      return submitQuote(s, c.userId, r, null, side(p.direction), p, p.execution_instruction === 'all_or_none');
    },
  }),
  defineMethod({
    name: 'private/edit_block_rfq_quote',
    scope: 'trade:read_write',
    summary: 'Replaces the amount, leg prices, label or expiry of an open quote (by id, or by label on the RFQ); it keeps its id and direction.',
    params: Type.Object({ ...QuoteParams, block_rfq_id: Type.Optional(RfqId), block_rfq_quote_id: Type.Optional(RfqId) }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const q = await s.seq.read(() => {
        for (const x of s.ex.blockRfqs.quotes.values()) {
          if (x.maker !== c.userId || x.state !== 'open') continue;
          if (p.block_rfq_quote_id !== undefined ? x.id === p.block_rfq_quote_id : p.block_rfq_id !== undefined && p.label !== undefined && x.rfqId === p.block_rfq_id && x.label === p.label) return x;
        }
        throw reject(ERR.NOT_FOUND, 'block_rfq_quote_not_found', 'block_rfq_quote_id');
      });
      const r = await s.seq.read(() => rfqFor(s.ex, q.rfqId, c.userId));
      return submitQuote(s, c.userId, r, q.id, q.side, { ...p, label: p.label ?? q.label }, q.aon);
    },
  }),
  defineMethod({
    name: 'private/cancel_block_rfq_quote',
    scope: 'trade:read_write',
    params: Type.Object({ block_rfq_quote_id: Type.Optional(RfqId), label: Type.Optional(Label), block_rfq_id: Type.Optional(RfqId) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      if (p.block_rfq_quote_id === undefined && (p.label === undefined || p.block_rfq_id === undefined)) throw reject(ERR.INVALID_PARAMS, 'block_rfq_quote_id_or_label_required', 'block_rfq_quote_id');
      return s.seq.submit({ t: 'rfq_quote_cancel', userId: c.userId, quoteId: p.block_rfq_quote_id ?? null, rfqId: p.block_rfq_id ?? null, label: p.label ?? null, all: false }, (r) => renderQuote(s.ex, (unwrap(r) as RfqQuote[])[0]!));
    },
  }),
  defineMethod({
    name: 'private/cancel_all_block_rfq_quotes',
    scope: 'trade:read_write',
    summary: "Cancels the caller's open quotes (on one RFQ, or all); the answer is how many.",
    params: Type.Object({ block_rfq_id: Type.Optional(RfqId), detailed: Type.Optional(Type.Boolean()) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.submit({ t: 'rfq_quote_cancel', userId: c.userId, quoteId: null, rfqId: p.block_rfq_id ?? null, label: null, all: true }, (r) => {
        const list = unwrap(r) as RfqQuote[];
        return p.detailed === true ? list.map((q) => renderQuote(s.ex, q)) : list.length;
      });
    },
  }),
  defineMethod({
    name: 'private/get_block_rfq_quotes',
    scope: 'trade:read',
    summary: "The caller's open quotes, on one RFQ, by label or by id.",
    params: Type.Object({ block_rfq_id: Type.Optional(RfqId), label: Type.Optional(Label), block_rfq_quote_id: Type.Optional(RfqId) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        const out: Record<string, unknown>[] = [];
        for (const q of s.ex.blockRfqs.quotes.values()) {
          if (q.maker !== c.userId || q.state !== 'open') continue;
          if (q.expiresAt !== null && q.expiresAt <= s.ex.now) continue;
          if (p.block_rfq_id !== undefined && q.rfqId !== p.block_rfq_id) continue;
          if (p.block_rfq_quote_id !== undefined && q.id !== p.block_rfq_quote_id) continue;
          if (p.label !== undefined && q.label !== p.label) continue;
          out.push(renderQuote(s.ex, q));
        }
        return out;
      });
    },
  }),
  defineMethod({
    name: 'private/accept_block_rfq',
    scope: 'trade:read_write',
    summary:
      "The taker trades its RFQ: `direction` is its side of the structure, `price` its limit for the structure. fill_or_kill fills `amount` now from the quotes at the limit or better, best price first, across as many makers as it takes (every leg and the hedge leg of every part at once), or refuses (13907 not_fully_filled) and nothing trades; good_til_cancelled waits (a trigger) until quotes can.",
    params: Type.Object({
      block_rfq_id: RfqId,
      price: Price,
      amount: Amount,
      direction: Direction,
      hedge: Type.Optional(Hedge),
      legs: PricedLegs,
      time_in_force: Type.Union([Type.Literal('fill_or_kill'), Type.Literal('good_til_cancelled')]),
    }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const r = await s.seq.read(() => rfqFor(s.ex, p.block_rfq_id, c.userId));
      if (r.taker !== c.userId) throw reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
      // a hedge named here must be the RFQ's own (it trades at each quote's hedge price)
      const hedge = hedgeParam(p.hedge);
      if (hedge !== null && hedge.instrument_name !== r.hedge?.instrument) throw reject(ERR.INVALID_ARGUMENTS, 'hedge_mismatch', 'hedge');
      if (p.legs.length !== r.legs.length || r.legs.some((l) => !p.legs.some((x) => x.instrument_name === l.instrument))) throw reject(ERR.INVALID_ARGUMENTS, 'legs_mismatch', 'legs');
      // the makers' portfolio-margin sums (their checks read them) built in slices first (src/risk/portfolio/warmup.ts)
      const makers = new Set<number>();
      for (const q of s.ex.blockRfqs.quotes.values()) if (q.rfqId === r.id) makers.add(q.maker);
      await pmWarmup(s.ex).readyAll([c.userId, ...makers]);
      return s.seq.submit(
        { t: 'rfq_accept', userId: c.userId, rfqId: r.id, side: side(p.direction), lots: lotsOf(p.amount), price: priceOf(p.price), gtc: p.time_in_force === 'good_til_cancelled', rules: rfqRules(s) },
        (res) => {
          const { rfq, fills } = unwrap(res) as { rfq: Rfq; fills: RfqFill[] };
          if (fills.length === 0) {
            const t = rfq.trigger!;
            return { trade_trigger: { state: t.state, price: p.price, direction: p.direction } };
          }
          // one block trade per maker's quote that filled, best price first
          const out: Record<string, unknown>[] = [];
          for (const f of fills) {
            const rec = s.ex.blockTrades.byId.get(f.blockTradeId);
            if (rec !== undefined) out.push(renderRfqBlockTrade(s.ex, rec, c.userId, rfq.id, f.quoteId));
          }
          return { block_trades: out };
        },
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_block_rfq_trigger',
    scope: 'trade:read_write',
    summary: "Cancels the RFQ's waiting good-til-cancelled acceptance.",
    params: Type.Object({ block_rfq_id: RfqId }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.submit({ t: 'rfq_trigger_cancel', userId: c.userId, rfqId: p.block_rfq_id }, (r) => renderRfq(s.ex, unwrap(r) as Rfq, c.userId));
    },
  }),
  defineMethod({
    name: 'private/get_block_rfq_makers',
    scope: 'trade:read',
    summary: 'The names of the accounts marked as block RFQ makers (what `makers` of create_block_rfq takes).',
    params: Type.Object({}),
    handler(ctx) {
      caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => [...s.ex.blockRfqs.makers].sort((a, b) => a - b).map((m) => identityOf(s.ex, m)));
    },
  }),
  defineMethod({
    name: 'private/get_block_rfq_user_info',
    scope: 'trade:read',
    summary: "The caller's block RFQ identity, whether it is a maker, and its taker rating (percent of its quoted RFQs it traded; docs/api-notes.md).",
    params: Type.Object({}),
    handler(ctx) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        const ex = s.ex;
        const main = ex.subaccounts.subs.get(c.userId)?.mainId ?? c.userId;
        const ids = [main, ...[...ex.subaccounts.subs.values()].filter((x) => x.mainId === main).map((x) => x.id)];
        return {
          parent: { identity: identityOf(ex, main), is_maker: ex.blockRfqs.makers.has(main) },
          users: ids.map((u) => ({ user_id: u, taker_rating: ex.blockRfqs.rating(u), identity: identityOf(ex, u), is_maker: ex.blockRfqs.makers.has(u) })),
        };
      });
    },
  }),
  defineMethod({
    name: 'public/get_block_rfq_trades',
    scope: 'none',
    summary: 'Traded block RFQs, newest first; `continuation` is the last id of the previous page.',
    params: Type.Object({ currency: CurrencyOrAny, continuation: Type.Optional(Type.String({ maxLength: 20, pattern: '^[0-9]*$' })), count: Count(20) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const before = p.continuation === undefined || p.continuation === '' ? Infinity : Number(p.continuation);
        const list = s.ex.blockRfqs.trades;
        const out: Record<string, unknown>[] = [];
        let last: number | null = null;
        for (let i = list.length - 1; i >= 0 && out.length < p.count; i--) {
          const t = list[i]!;
          if (t.id >= before || (p.currency !== 'any' && t.currency !== p.currency)) continue;
          out.push(renderPublicTrade(t));
          last = t.id;
        }
        return { block_rfqs: out, continuation: out.length === p.count && last !== null ? String(last) : null };
      });
    },
  }),
];
