// Sandbox demo market: a market-maker account quoting two-sided markets around the mark in every
// active series, and a small taker account that now and then lifts a quote, so a newcomer sees live
// books, trades and moving marks within seconds of `npm start`. Both are ordinary user accounts and
// act only through commands, like any client; they cannot log in (their password hash is unusable).
import type { CurrencyCode } from '../domain/currency.ts';
import { PRICE_SCALE, roundToTick, type Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import { BUY, SELL } from '../engine/orderBook.ts';
import { mulberry32 } from '../market/indexFeed.ts';
import type { Services } from './services.ts';

export const DEMO_MAKER_EMAIL = 'demo-maker@strikebook.invalid';
export const DEMO_TAKER_EMAIL = 'demo-taker@strikebook.invalid';
/** Strikes quoted on each side of the money, per expiry and option type. */
const STRIKES_EACH_SIDE = 3;
const QUOTE_EVERY_MS = 2000;
/** Half-spread around the mark, as a fraction of it. */
const HALF_SPREAD = 0.04;
const UNIT = 10 ** PRICE_SCALE;

export interface DemoMaker {
  ready: Promise<void>;
  stop(): void;
}

export function startDemoMaker(s: Services): DemoMaker {
  const { ex, seq, log } = s;
  const rnd = mulberry32(s.config.indexSeed ^ 0x5eed);
  const submit = (cmd: Command) => seq.submit(cmd, (r) => r);
  let stopped = false;
  let makerId = 0;
  let takerId = 0;

  const ensureUser = async (email: string): Promise<number> => {
    const existing = ex.usersByEmail.get(email);
    if (existing) return existing.id;
    await submit({ t: 'create_user', email, passwordHash: 'disabled$demo-account', role: 'user', inviteCode: null, by: null });
    return ex.usersByEmail.get(email)!.id;
  };

  const topUp = async (userId: number) => {
    for (const currency of ['BTC', 'ETH'] as CurrencyCode[]) {
      const balance = ex.users.get(userId)!.accounts[currency].balance;
      if (balance < 5_000 * 1e8) await submit({ t: 'deposit', userId, currency, amount: 10_000 * 1e8 - balance, depositId: null, by: 0 });
    }
  };

  /** The instruments to quote: per currency and expiry, the strikes nearest the index. */
  const quoted = (): Instrument[] => {
    const byExpiry = new Map<string, Instrument[]>();
    for (const inst of ex.instruments.values()) {
      if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) continue;
      const key = `${inst.currency}:${inst.expiry}:${inst.optionType}`;
      let list = byExpiry.get(key);
      if (!list) byExpiry.set(key, (list = []));
      list.push(inst);
    }
    const out: Instrument[] = [];
    for (const list of byExpiry.values()) {
      const index = ex.indexPrice(list[0].currency);
      list.sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index));
      out.push(...list.slice(0, STRIKES_EACH_SIDE * 2));
    }
    return out;
  };

  const requote = async () => {
    await submit({ t: 'cancel_all', userId: makerId, currency: null, instrument: null, side: null, label: null });
    const pending: Promise<unknown>[] = [];
    for (const inst of quoted()) {
      const m = ex.markets.get(inst.id)!;
      if (!(m.markCoin > 0)) continue;
      const mark = m.markCoin * UNIT;
      const bid = Math.max(m.minPrice, roundToTick(inst, mark * (1 - HALF_SPREAD), 'down'));
      const ask = Math.min(m.maxPrice, roundToTick(inst, mark * (1 + HALF_SPREAD) + inst.tick, 'up'));
      const lots = inst.lotScaled * (1 + Math.floor(rnd() * 20));
      const base = { t: 'place', userId: makerId, instrument: inst.name, advanced: null, advPrice: null, lots, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'demo', clientOrderId: null } as const;
      if (bid > 0 && bid < ask) pending.push(submit({ ...base, side: BUY, price: bid }));
      pending.push(submit({ ...base, side: SELL, price: ask }));
    }
    await Promise.all(pending);
    // the taker lifts or hits one quote per currency, so trades and last prices appear in each
    const byCurrency = new Map<CurrencyCode, Instrument[]>();
    for (const inst of quoted()) {
      const list = byCurrency.get(inst.currency) ?? [];
      byCurrency.set(inst.currency, list);
      list.push(inst);
    }
    const takes: Promise<unknown>[] = [];
    for (const list of byCurrency.values()) {
      const inst = list[Math.floor(rnd() * list.length)];
      const side = rnd() < 0.5 ? BUY : SELL;
      takes.push(
        submit({
          t: 'place', userId: takerId, side, instrument: inst.name, price: null, advanced: null, advPrice: null, lots: inst.lotScaled,
          type: 'market', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'demo', clientOrderId: null,
        }),
      );
    }
    await Promise.all(takes);
  };

  let timer: NodeJS.Timeout | null = null;
  const loop = () => {
    if (stopped) return;
    requote()
      .then(() => topUp(takerId))
      .catch((err) => log.warn({ err }, 'demo maker cycle failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, QUOTE_EVERY_MS);
      });
  };

  const ready = (async () => {
    makerId = await ensureUser(DEMO_MAKER_EMAIL);
    takerId = await ensureUser(DEMO_TAKER_EMAIL);
    await topUp(makerId);
    await topUp(takerId);
    await requote();
    timer = setTimeout(loop, QUOTE_EVERY_MS);
    timer.unref();
  })();

  return {
    ready,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
