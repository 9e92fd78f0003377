// Whether a trigger order placement or a new trigger level is accepted (triggers.ts places and
// edits them): reads only, so a refusal here is known before anything changes.
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import { isOnTick, type Instrument } from '../domain/instrument.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { UNIT, refPrice } from './triggerIndex.ts';
import { TriggerOrder, firedCmd, type TriggerSpec } from './triggerOrder.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;

export interface TriggerLevels {
  level: number;
  offset: number;
  peak: number;
}

/** What the check needs of the trigger orders held: the per-user limit and each user's count. */
export interface UntriggeredLimit {
  untriggeredCount(userId: number): number;
  readonly maxPerUser: number;
}

/**
 * Whether a trigger placement is accepted, and at which levels; reads only. A refusal here is the
 * answer place() would give to a request without client_order_id (Exchange.refusalOf: such a
 * placement is answered without being journaled; a later time can only refuse more, an expiry
 * having passed). With a client_order_id a retry may be answered with the first order instead.
 */
export function checkTriggerPlace(ex: Exchange, held: UntriggeredLimit, c: PlaceCmd & { trig: TriggerSpec }): { inst: Instrument; levels: TriggerLevels } | Reject {
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.UNAUTHORIZED);
  if (c.advanced !== null) return reject(ERR.INVALID_ARGUMENTS, 'advanced_not_supported_for_trigger_orders', 'advanced');
  // market-maker protection is for resting quotes; a stop that becomes one would escape the group's limits
  if (c.mmp === true) return reject(ERR.INVALID_ARGUMENTS, 'mmp_not_supported_for_trigger_orders', 'mmp');
  const inst = ex.instruments.get(c.instrument);
  if (!inst || inst.state === 'delivered') return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
  if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open');
  if (!(c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  if (c.lots < inst.lotScaled) return reject(ERR.QTY_TOO_LOW, 'below_min_trade_amount', 'amount');
  if (c.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
  const limitType = c.trig.type === 'stop_limit' || c.trig.type === 'take_limit';
  if (limitType !== (c.type === 'limit')) return reject(ERR.INVALID_ARGUMENTS, 'order_type_mismatch', 'type');
  if (limitType) {
    // the price band moves with the mark: it is checked when the order fires, not now
    if (c.price === null) return reject(ERR.INVALID_PRICE, 'price_required', 'price');
    if (!(c.price > 0)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
    if (!isOnTick(inst, c.price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
  }
  if (held.untriggeredCount(user.id) >= held.maxPerUser) return reject(ERR.INVALID_ARGUMENTS, 'no_more_triggers', undefined, String(held.maxPerUser));

  const probe = new TriggerOrder(0, user.id, inst, firedCmd(c), c.trig.type, c.trig.source, 0, 0, 0, ex.now);
  const levels = triggerLevels(ex, probe, inst, c.trig);
  if (isReject(levels)) return levels;
  return { inst, levels };
}

/**
 * The level (and for trailing stops offset and peak) of a trigger from its spec, refused when it
 * would fire at once (Deribit refuses those too: a stop buy must be above the current price).
 */
export function triggerLevels(ex: Exchange, t: TriggerOrder, inst: Instrument, spec: { price: number | null; offset: number | null }): TriggerLevels | Reject {
  const x = refPrice(ex, { source: t.source, currency: inst.currency, instId: inst.id });
  if (t.trailing) {
    if (spec.offset === null || !(spec.offset > 0) || !Number.isSafeInteger(spec.offset)) return reject(ERR.INVALID_ARGUMENTS, 'invalid_trigger_offset', 'trigger_offset');
    if (!Number.isFinite(x)) return reject(ERR.INVALID_ARGUMENTS, 'no_reference_price', 'trigger');
    const offset = spec.offset / UNIT;
    return { level: t.firesUp ? x + offset : x - offset, offset, peak: x };
  }
  if (spec.price === null || !(spec.price > 0) || !Number.isSafeInteger(spec.price)) return reject(ERR.INVALID_ARGUMENTS, 'invalid_trigger_price', 'trigger_price');
  if (t.source !== 'index_price' && !isOnTick(inst, spec.price)) return reject(ERR.PRICE_WRONG_TICK, 'trigger_price_wrong_tick', 'trigger_price');
  const level = spec.price / UNIT;
  // no last trade yet: a last-price trigger waits for the first one, whatever its level
  if (Number.isFinite(x)) {
    if (t.firesUp && x >= level) return reject(ERR.INVALID_ARGUMENTS, 'trigger_price_too_low', 'trigger_price', String(x));
    if (!t.firesUp && x <= level) return reject(ERR.INVALID_ARGUMENTS, 'trigger_price_too_high', 'trigger_price', String(x));
  }
  return { level, offset: 0, peak: 0 };
}
