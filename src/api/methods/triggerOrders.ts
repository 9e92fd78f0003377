// private/get_trigger_order_history (issue 17): what happened to the caller's trigger orders, newest
// first: placed, edited, fired (with the order each became, or the reason it was refused), cancelled.
// The log is engine state (src/engine/triggers.ts), bounded per user, so it survives restarts.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { priceToNumber } from '../../domain/instrument.ts';
import { BUY } from '../../engine/orderBook.ts';
import { TRIGGER_HISTORY_KEPT, type TriggerHistoryEntry } from '../../engine/triggers.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, caller } from './common.ts';
import { currencyOfName, idOf } from '../render.ts';

/** A level as given: coin for mark/last price, USD for the index. */
function level(x: number): number {
  return Number(x.toFixed(8));
}

function renderEntry(e: TriggerHistoryEntry): Record<string, unknown> {
  const out: Record<string, unknown> = {
    timestamp: e.ts,
    last_update_timestamp: e.ts,
    trigger: e.source,
    trigger_price: level(e.level),
    trigger_order_id: idOf(currencyOfName(e.instrument), e.triggerOrderId),
    order_id: e.orderId === null ? null : idOf(currencyOfName(e.instrument), e.orderId),
    order_state: e.state,
    request: e.request,
    instrument_name: e.instrument,
    direction: e.side === BUY ? 'buy' : 'sell',
    order_type: e.type,
    price: e.price === null ? 'market_price' : priceToNumber(e.price),
    amount: e.lots / 1e8,
    label: e.label,
    reduce_only: e.reduceOnly,
    post_only: e.postOnly,
  };
  if (e.type === 'trailing_stop') out.trigger_offset = level(e.offset);
  // Strikebook: why a fired order was refused, or why the trigger was cancelled
  if (e.reason !== null) out.reason = e.reason;
  return out;
}

export const triggerOrderMethods = [
  defineMethod({
    name: 'private/get_trigger_order_history',
    scope: 'trade:read',
    summary: `The caller's trigger order events, newest first: placed (\`request\` order, \`untriggered\`), edited (edit), fired (trigger:order: \`triggered\` with the new \`order_id\`, or \`rejected\` with \`reason\`), cancelled (cancel). \`{entries, continuation}\`: pass \`continuation\` back for the next page; null when there is none. The last ${TRIGGER_HISTORY_KEPT} to ${2 * TRIGGER_HISTORY_KEPT} events per user are kept.`,
    params: Type.Object({
      currency: CurrencyParam,
      instrument_name: Type.Optional(InstrumentName),
      count: Count(20),
      continuation: Type.Optional(Type.String({ maxLength: 20 })),
    }),
    handler(ctx, p) {
      const userId = caller(ctx).userId;
      let before = Number.MAX_SAFE_INTEGER;
      if (p.continuation !== undefined) {
        if (!/^\d{1,15}$/.test(p.continuation)) throw reject(ERR.INVALID_PARAMS, 'invalid continuation', 'continuation');
        before = Number(p.continuation);
      }
      return ctx.services.seq.read(() => {
        const log = ctx.services.ex.triggers.history.get(userId) ?? [];
        const entries: TriggerHistoryEntry[] = [];
        let more = false;
        for (let i = log.length - 1; i >= 0; i--) {
          const e = log[i];
          if (e.id >= before || e.currency !== p.currency) continue;
          if (p.instrument_name !== undefined && e.instrument !== p.instrument_name) continue;
          if (entries.length === p.count) {
            more = true;
            break;
          }
          entries.push(e);
        }
        return { entries: entries.map(renderEntry), continuation: more ? String(entries[entries.length - 1].id) : null };
      });
    },
  }),
];
