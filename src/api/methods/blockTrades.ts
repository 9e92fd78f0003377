// Block trades (issue 34; docs/api-notes.md "Block trades"): two parties agree on legs off the book;
// one signs them (verify_block_trade), the other executes with that signature (execute_block_trade).
// The signature is checked here, at the edge (src/blocktrades/signature.ts); the engine applies every
// leg to both accounts in one command, once per agreement, before the signature's expiry and unless
// its signer invalidated it (src/blocktrades/execute.ts).
import { Type, type Static } from '@sinclair/typebox';
import { AMOUNT_SCALE, PRICE_SCALE } from '../../domain/instrument.ts';
import type { CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Trade } from '../../engine/types.ts';
import { simulateSide } from '../../blocktrades/execute.ts';
import { isWaiting, type BlockOutcome } from '../../blocktrades/approval.ts';
import { blockTradeKey, macMatches, parseSignature, signatureText } from '../../blocktrades/signature.ts';
import type { BlockLeg, BlockRole, BlockRules, BlockTradeRecord } from '../../blocktrades/types.ts';
import type { Services } from '../../app/services.ts';
import { renderUserTrade } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, Timestamp, caller, unwrap } from './common.ts';
import { pmWarmup } from '../../risk/portfolio/warmup.ts';

/** Legs one block trade may have. */
export const MAX_BLOCK_LEGS = 20;
/** Defaults of the settings (STRIKEBOOK_BLOCK_TRADE_*), for servers built without them. */
export const BLOCK_DEFAULTS = { minBtc: 25, minEth: 250, bandPct: 50, signatureTtlMs: 300_000 };

const Role = Type.Union([Type.Literal('maker'), Type.Literal('taker')]);
const Nonce = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$' });
const Trades = Type.Array(
  Type.Object({
    instrument_name: InstrumentName,
    price: Type.Number(),
    amount: Type.Number({ exclusiveMinimum: 0 }),
    direction: Type.Union([Type.Literal('buy'), Type.Literal('sell')]),
  }),
  { minItems: 1, maxItems: MAX_BLOCK_LEGS },
);
const Signature = Type.String({ minLength: 1, maxLength: 128 });
const Agreement = { timestamp: Timestamp, nonce: Nonce, role: Role, trades: Trades };

/** The venue's block rules now (settings), carried in each command so replay never reads config. */
export function blockRules(s: Services): BlockRules {
  const c = s.config;
  const min = (coin: number): number => parseScaled(coin, AMOUNT_SCALE) ?? 0;
  return {
    bandPct: c.blockTradeBandPct ?? BLOCK_DEFAULTS.bandPct,
    minAmount: { BTC: min(c.blockTradeMinBtc ?? BLOCK_DEFAULTS.minBtc), ETH: min(c.blockTradeMinEth ?? BLOCK_DEFAULTS.minEth) },
  };
}

/** The smallest block leg of a currency in coin (the instruments' `block_trade_min_trade_amount`). */
export function blockMinAmount(s: Services, currency: CurrencyCode): number {
  return currency === 'ETH' ? (s.config.blockTradeMinEth ?? BLOCK_DEFAULTS.minEth) : (s.config.blockTradeMinBtc ?? BLOCK_DEFAULTS.minBtc);
}

function ttl(s: Services): number {
  return s.config.blockTradeSignatureTtlMs ?? BLOCK_DEFAULTS.signatureTtlMs;
}

/** The legs as exact integers: price units and amount at 10^-8; off-grid text is refused. */
export function parseLegs(trades: Static<typeof Trades>): BlockLeg[] {
  return trades.map((t) => {
    const price = parseScaled(t.price, PRICE_SCALE);
    if (price === null) throw reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
    const lots = parseScaled(t.amount, AMOUNT_SCALE);
    if (lots === null) throw reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
    return { instrument: t.instrument_name, side: t.direction === 'buy' ? 0 : 1, price, lots };
  });
}

const opposite = (r: BlockRole): BlockRole => (r === 'maker' ? 'taker' : 'maker');

/** The caller's legs of a block trade, from the trades it kept (Deribit's `trades` of a block trade). */
function renderBlockTrade(ex: Exchange, rec: BlockTradeRecord, userId: number): Record<string, unknown> {
  const user = ex.users.get(userId);
  const ids = new Set(rec.tradeIds);
  const trades: Trade[] = user === undefined ? [] : user.trades.filter((t) => ids.has(t.id));
  return { id: String(rec.id), timestamp: rec.ts, trades: trades.map((t) => renderUserTrade(t, userId)) };
}

function keyOf(s: Services): Buffer {
  return blockTradeKey(s.serverKey);
}

export const blockTradeMethods = [
  defineMethod({
    name: 'private/verify_block_trade',
    scope: 'trade:read',
    summary:
      'Signs a block trade for the caller in `role` (directions are the maker\'s): the legs must pass the block rules and the caller\'s margin. The signature binds every field and executes once, until `timestamp` + STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS.',
    params: Type.Object(Agreement),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const life = ttl(s);
      const now = s.clock.now();
      if (p.timestamp > now + life || p.timestamp + life < now) throw reject(ERR.INVALID_ARGUMENTS, 'block_trade_timestamp_out_of_window', 'timestamp');
      const legs = parseLegs(p.trades);
      const rules = blockRules(s);
      const refused = await s.seq.read(() => simulateSide(s.ex, c.userId, p.role, legs, rules));
      if (refused !== null) throw refused;
      return { signature: signatureText(keyOf(s), { signer: c.userId, role: p.role, timestamp: p.timestamp, nonce: p.nonce, legs, expiry: p.timestamp + life }) };
    },
  }),
  defineMethod({
    name: 'private/execute_block_trade',
    scope: 'trade:read_write',
    summary:
      "Executes a block trade with the counterparty's signature over the same timestamp, nonce and trades (the caller takes the other role): every leg on both accounts at once, or nothing (each side's margin checked after all legs).",
    params: Type.Object({ ...Agreement, counterparty_signature: Signature }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const sig = parseSignature(p.counterparty_signature);
      if (sig === null) throw reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalid', 'counterparty_signature');
      const legs = parseLegs(p.trades);
      const fields = { signer: sig.signer, role: opposite(p.role), timestamp: p.timestamp, nonce: p.nonce, legs, expiry: sig.expiry };
      // any field other than what the counterparty signed (an amount, a price, an instrument, a
      // direction, the nonce, a role) gives another MAC
      if (!macMatches(keyOf(s), fields, sig.mac)) throw reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalid', 'counterparty_signature');
      // both sides' portfolio-margin sums (each side's check reads them) built in slices first (src/risk/portfolio/warmup.ts)
      await pmWarmup(s.ex).readyAll([c.userId, sig.signer]);
      return s.seq.submit(
        { t: 'block_trade', executor: c.userId, signer: sig.signer, role: p.role, timestamp: p.timestamp, nonce: p.nonce, expiry: sig.expiry, sig: sig.mac, legs, rules: blockRules(s) },
        (r) => {
          const out = unwrap(r) as BlockOutcome;
          // an account that requires approval: the trade waits in get_block_trade_requests
          if (isWaiting(out)) return { id: '', timestamp: out.request.created, trades: [], state: 'waiting_for_approval' };
          return renderBlockTrade(s.ex, out, c.userId);
        },
      );
    },
  }),
  defineMethod({
    name: 'private/simulate_block_trade',
    scope: 'trade:read',
    summary: "Whether the caller's side of a block trade (in `role`, maker by default) passes the block rules and its margin now: true or false.",
    params: Type.Object({ role: Type.Optional(Role), trades: Trades }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const legs = parseLegs(p.trades);
      const rules = blockRules(s);
      const refused = await s.seq.read(() => simulateSide(s.ex, c.userId, p.role ?? 'maker', legs, rules));
      // margin says no: false; a leg the venue would refuse whoever traded it stays an error
      if (refused !== null && refused.code !== ERR.NOT_ENOUGH_FUNDS) throw refused;
      return refused === null;
    },
  }),
  defineMethod({
    name: 'private/invalidate_block_trade_signature',
    scope: 'trade:read_write',
    summary: 'The caller\'s own signature executes nothing any more.',
    params: Type.Object({ signature: Signature }),
    handler(ctx, p) {
      const c = caller(ctx);
      const sig = parseSignature(p.signature);
      // another account's signature is simply not found
      if (sig === null || sig.signer !== c.userId) throw reject(ERR.NOT_FOUND, 'block_trade_signature_not_found', 'signature');
      return ctx.services.seq.submit({ t: 'block_invalidate', userId: c.userId, sig: sig.mac, expiry: sig.expiry }, (r) => (unwrap(r), 'ok'));
    },
  }),
  defineMethod({
    name: 'private/get_block_trade',
    scope: 'trade:read',
    params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 20, pattern: '^[0-9]+$' }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        const rec = s.ex.blockTrades.byId.get(Number(p.id));
        // another account's block trade is simply not found
        if (rec === undefined || (rec.maker !== c.userId && rec.taker !== c.userId)) throw reject(ERR.NOT_FOUND, 'block_trade_not_found', 'id');
        return renderBlockTrade(s.ex, rec, c.userId);
      });
    },
  }),
  defineMethod({
    name: 'private/get_block_trades',
    scope: 'trade:read',
    summary: "The caller's block trades, newest first; `start_id`/`end_id` bound the ids (inclusive).",
    params: Type.Object({
      currency: Type.Optional(CurrencyParam),
      count: Count(20),
      start_id: Type.Optional(Type.String({ maxLength: 20, pattern: '^[0-9]+$' })),
      end_id: Type.Optional(Type.String({ maxLength: 20, pattern: '^[0-9]+$' })),
      block_rfq_id: Type.Optional(Type.Integer({ minimum: 0 })),
      broker_code: Type.Optional(Type.String({ maxLength: 64 })),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      return s.seq.read(() => {
        // block RFQ and broker trades do not exist here: those filters select nothing
        if (p.block_rfq_id !== undefined || p.broker_code !== undefined) return [];
        const list = s.ex.blockTrades.byUser.get(c.userId) ?? [];
        const hi = p.start_id === undefined ? Infinity : Number(p.start_id);
        const lo = p.end_id === undefined ? 0 : Number(p.end_id);
        const out: Record<string, unknown>[] = [];
        for (let i = list.length - 1; i >= 0 && out.length < p.count; i--) {
          const r = list[i]!;
          if (r.id > hi || r.id < lo || (p.currency !== undefined && r.currency !== p.currency)) continue;
          out.push(renderBlockTrade(s.ex, r, c.userId));
        }
        return out;
      });
    },
  }),
];

