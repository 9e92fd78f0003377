// Sandbox demo market: a market that looks like a real one, for a quant testing a bot or a person
// learning the app. Maker accounts quote every listed BTC and ETH series with several levels a side
// (prices from the smile, spreads and sizes widening away from the money and with time: see
// demoQuotes.ts), requote as the index moves, and a taker account trades against them as a
// Poisson stream at a configured rate, some small, some in size, some against quotes the index
// has just made stale. All are ordinary accounts acting only through commands, like any client;
// they cannot log in (their password hash is unusable). Off in production mode (config.ts).
//
// Engine cost (and journal size: every command is a journal record): each level of each currency
// is one maker account quoting with mass_quote, 100 series per command, so a full requote of
// ~1,650 series at 3 levels is ~50 commands. A currency is repriced only when its index has moved
// REQUOTE_MOVE since the last repricing (or five minutes passed); a tick compares the wanted ladders
// with the makers' open quotes and sends only the sides that differ (repriced, or traded), never an
// unchanged quote. At most one tick runs per STRIKEBOOK_DEMO_REQUOTE_MS.
import type { CurrencyCode } from '../domain/currency.ts';
import { isReject } from '../domain/errors.ts';
import { stepTick, type Instrument } from '../domain/instrument.ts';
import { yearFraction } from '../domain/pricing.ts';
import type { Command, QuoteItem, QuoteSide } from '../engine/commands.ts';
import { MAX_QUOTES_PER_MESSAGE } from '../engine/massQuote.ts';
import { indexNameOf } from '../engine/mmp.ts';
import { BUY, SELL, type Side } from '../engine/orderBook.ts';
import type { Order, User } from '../engine/types.ts';
import { mulberry32 } from '../market/indexFeed.ts';
import { poissonGapMs, quoteLadder, type Ladder } from './demoQuotes.ts';
import type { Services } from './services.ts';

/** The account of the first maker level of BTC before issue 33 (one account quoted everything). */
export const DEMO_MAKER_EMAIL = 'demo-maker@strikebook.invalid';
export const DEMO_TAKER_EMAIL = 'demo-taker@strikebook.invalid';
const CURRENCIES: CurrencyCode[] = ['BTC', 'ETH'];
const GROUP = 'demo';
/** Takers fired in one tick at most: after a stall the stream skips ahead instead of bursting. */
const MAX_TAKERS_PER_TICK = 50;
/**
 * The makers reprice a currency's ladders when its index has moved more than this fraction since
 * they last did (5 bp: about 2 ticks of an at-the-money option, well inside its spread), or
 * REPRICE_MS has passed (time decay, a new smile); in between they only refill what was traded.
 * A repriced quote within REQUOTE_TICKS of where it rests is left alone.
 */
export const REQUOTE_MOVE = 0.0005;
const REPRICE_MS = 300_000;
/** An open quote within this many ticks of its repriced price stays (with its time priority). */
const REQUOTE_TICKS = 2;
const TOP_UP_TICKS = 10;
const COIN = 1e8;

/** The maker account of one currency and level (1 = best). */
export function demoMakerEmail(currency: CurrencyCode, level: number): string {
  return `demo-maker-${currency.toLowerCase()}-${level}@strikebook.invalid`;
}

export interface DemoSettings {
  /** Price levels quoted on each side of every series. */
  levels: number;
  /** Mean taker orders per minute (a Poisson stream on the exchange's clock); 0: none. */
  takersPerMinute: number;
  /** Shortest time between two requotes, ms. */
  requoteMs: number;
}

export const DEFAULT_DEMO: DemoSettings = { levels: 3, takersPerMinute: 30, requoteMs: 1000 };

export interface DemoStats {
  /** Taker orders sent, and arrivals of the stream skipped after a stall. */
  takers: number;
  /** Taker orders the engine refused (e.g. a position the taker's margin cannot carry). */
  takersRefused: number;
  skipped: number;
  /** Mass-quote commands sent, and sides they carried that the engine refused. */
  quoteCommands: number;
  quoteErrors: number;
  /** Series quoted in the last requote. */
  series: number;
}

export interface DemoMaker {
  ready: Promise<void>;
  stats: DemoStats;
  stop(): void;
}

/** A maker's open mass quote on one side of a series (the slot a mass quote replaces). */
function openQuote(user: User, inst: Instrument, side: Side): Order | undefined {
  const e = user.exposures.get(inst.id);
  if (e === undefined || e.openOrders.size === 0) return undefined;
  for (const o of e.openOrders) if (o.side === side && o.mmp !== null && o.mmp.quoteId !== null && o.mmp.group === GROUP) return o;
  return undefined;
}

export function startDemoMaker(s: Services): DemoMaker {
  const { ex, seq, log } = s;
  const settings: DemoSettings = { ...DEFAULT_DEMO, ...s.config.demo };
  const seed = s.config.indexSeed ^ 0x5eed;
  const rnd = mulberry32(seed);
  const submit = <R>(cmd: Command) => seq.submit(cmd, (r) => r as R);
  const stats: DemoStats = { takers: 0, takersRefused: 0, skipped: 0, quoteCommands: 0, quoteErrors: 0, series: 0 };
  let stopped = false;
  const makers = new Map<string, number>(); // `${currency}:${level}` -> user id
  let takerId = 0;
  /**
   * The ladders the makers want, per instrument, worked out at a reference index per currency and
   * kept until the index moves past REQUOTE_MOVE of it (or REPRICE_MS passes): between those,
   * a tick sends nothing but refills of slots that trading (or anything else) changed.
   */
  const wanted = new Map<string, { inst: Instrument; ladder: Ladder }>();
  const reference = new Map<CurrencyCode, { F: number; at: number }>();
  /** Slots (`user instrument side`) the engine refused since the last repricing: not resent every tick. */
  const refused = new Set<string>();
  let ticks = 0;
  let quoteSeq = 0;
  let nextTaker = Number.POSITIVE_INFINITY;

  const ensureUser = async (email: string): Promise<number> => {
    const existing = ex.usersByEmail.get(email);
    if (existing) return existing.id;
    await submit({ t: 'create_user', email, passwordHash: 'disabled$demo-account', role: 'user', inviteCode: null, by: null });
    return ex.usersByEmail.get(email)!.id;
  };

  const topUp = async (userId: number, currencies: CurrencyCode[]) => {
    for (const currency of currencies) {
      const balance = ex.users.get(userId)!.accounts[currency].balance;
      if (balance < 5_000 * COIN) await submit({ t: 'deposit', userId, currency, amount: 10_000 * COIN - balance, depositId: null, by: 0 });
    }
  };

  const quotable = (inst: Instrument) => inst.state === 'open' && !inst.halted && inst.expiry > ex.now;

  /** Every open series of a currency, with its ladder at index F now. */
  const ladders = (currency: CurrencyCode, F: number): { inst: Instrument; ladder: Ladder }[] => {
    const out: { inst: Instrument; ladder: Ladder }[] = [];
    for (const inst of ex.instruments.values()) {
      if (inst.currency !== currency || !quotable(inst)) continue;
      const m = ex.markets.get(inst.id);
      const T = yearFraction(ex.now, inst.expiry);
      if (!m || !(m.markCoin > 0) || !Number.isFinite(m.markIv) || !(T > 0)) continue;
      // sizes jittered by the instrument's own seed: the same ladder while nothing moves
      const jitter = mulberry32(seed ^ Math.imul(inst.id, 0x9e3779b1));
      out.push({ inst, ladder: quoteLadder({ inst, F, T, iv: m.markIv, minPrice: m.minPrice, maxPrice: m.maxPrice, levels: settings.levels, jitter }) });
    }
    return out;
  };

  /** Reprices a currency's ladders when its index left the reference band, time passed, or a series is new. */
  const reprice = (currency: CurrencyCode) => {
    const F = ex.indexPrice(currency);
    if (!(F > 0)) return;
    const ref = reference.get(currency);
    const moved = ref === undefined || Math.abs(F / ref.F - 1) > REQUOTE_MOVE || ex.now - ref.at >= REPRICE_MS;
    if (!moved) {
      // a series listed since: priced at the reference, as its neighbours are
      for (const inst of ex.instruments.values()) {
        if (inst.currency === currency && quotable(inst) && !wanted.has(inst.name)) {
          for (const x of ladders(currency, ref.F)) if (!wanted.has(x.inst.name)) wanted.set(x.inst.name, x);
          break;
        }
      }
      return;
    }
    reference.set(currency, { F, at: ex.now });
    for (const key of refused) if (key.includes(` ${currency}-`)) refused.delete(key);
    for (const x of ladders(currency, F)) wanted.set(x.inst.name, x);
  };

  /**
   * Sends what differs between the wanted ladders and the makers' open quotes, slot by slot (a
   * slot is a maker level's side of one series): an unchanged quote is never sent again. Two
   * passes: first every side that moves away from the other (bids down, asks up), then those that
   * move toward it. A level account's new bid could otherwise meet another level's stale ask and
   * the makers would trade with each other.
   */
  const requote = async () => {
    for (const currency of CURRENCIES) reprice(currency);
    // drop what expired or was delisted (the engine cancels their orders)
    for (const [name, { inst }] of wanted) if (!quotable(inst) || ex.instruments.get(name) !== inst) wanted.delete(name);
    const passes: Map<number, QuoteItem[]>[] = [new Map(), new Map()]; // user id -> quotes
    const add = (pass: number, userId: number, q: QuoteItem) => {
      const m = passes[pass];
      if (!m.has(userId)) m.set(userId, []);
      m.get(userId)!.push(q);
    };
    type Slot = { userId: number; old: Order | undefined; q: QuoteSide; side: 'bid' | 'ask' };
    for (const { inst, ladder } of wanted.values()) {
      const slots: Slot[] = [];
      for (let level = 1; level <= settings.levels; level++) {
        const userId = makers.get(`${inst.currency}:${level}`)!;
        const user = ex.users.get(userId);
        if (user === undefined) continue;
        const b = ladder.bids[level - 1];
        const a = ladder.asks[level - 1];
        // lots 0 takes a side's quote away (a level the band no longer allows)
        slots.push({ userId, side: 'bid', old: openQuote(user, inst, BUY), q: { price: b?.price ?? inst.tick, lots: b?.lots ?? 0, postOnly: false, rejectPostOnly: false } });
        slots.push({ userId, side: 'ask', old: openQuote(user, inst, SELL), q: { price: a?.price ?? inst.tick, lots: a?.lots ?? 0, postOnly: false, rejectPostOnly: false } });
      }
      // an open quote is kept while it has its full size and lies within REQUOTE_TICKS of the price
      // wanted (as massQuote sees a quote: remaining in lots, unfilled), unless keeping it would
      // leave a bid at or above an ask of the series' ladder: then every side goes to its price
      const near = (o: Order, q: QuoteSide, ticks: number) => {
        let lo = q.price;
        let hi = q.price;
        for (let k = 0; k < ticks; k++) {
          lo = stepTick(inst, lo, -1);
          hi = stepTick(inst, hi, 1);
        }
        return o.price >= lo && o.price <= hi;
      };
      const keeps = (x: Slot, ticks: number) => (x.old === undefined ? x.q.lots === 0 : x.q.lots > 0 && x.old.remaining * inst.lotScaled === x.q.lots && x.old.filled === 0 && near(x.old, x.q, ticks));
      let keep = slots.map((x) => keeps(x, REQUOTE_TICKS));
      const priceOf = (x: Slot, i: number) => (keep[i] ? x.old?.price : x.q.lots > 0 ? x.q.price : undefined);
      let topBid = -Infinity;
      let lowAsk = Infinity;
      slots.forEach((x, i) => {
        const p = priceOf(x, i);
        if (p === undefined) return;
        if (x.side === 'bid') topBid = Math.max(topBid, p);
        else lowAsk = Math.min(lowAsk, p);
      });
      if (topBid >= lowAsk) keep = slots.map((x) => keeps(x, 0));
      for (let i = 0; i < slots.length; i += 2) {
        const [b, a] = [slots[i], slots[i + 1]];
        const sendBid = !keep[i] && !refused.has(`${b.userId} ${inst.name} bid`);
        const sendAsk = !keep[i + 1] && !refused.has(`${a.userId} ${inst.name} ask`);
        if (!sendBid && !sendAsk) continue;
        const bidAway = b.old === undefined || b.q.lots === 0 || b.q.price <= b.old.price;
        const askAway = a.old === undefined || a.q.lots === 0 || a.q.price >= a.old.price;
        const first = { bid: sendBid && bidAway ? b.q : null, ask: sendAsk && askAway ? a.q : null };
        const second = { bid: sendBid && !bidAway ? b.q : null, ask: sendAsk && !askAway ? a.q : null };
        if (first.bid || first.ask) add(0, b.userId, { instrument: inst.name, quoteSetId: null, ...first });
        if (second.bid || second.ask) add(1, b.userId, { instrument: inst.name, quoteSetId: null, ...second });
      }
    }
    stats.series = wanted.size;
    for (const pass of passes) {
      const pending: Promise<unknown>[] = [];
      for (const [userId, quotes] of pass) {
        for (let k = 0; k < quotes.length; k += MAX_QUOTES_PER_MESSAGE) {
          stats.quoteCommands++;
          pending.push(
            submit<{ errors?: { instrument: string; side: string }[] }>({ t: 'mass_quote', userId, quoteId: `demo-${++quoteSeq}`, group: GROUP, quotes: quotes.slice(k, k + MAX_QUOTES_PER_MESSAGE) }).then((r) => {
              const errors = r && Array.isArray(r.errors) ? r.errors : [];
              stats.quoteErrors += errors.length;
              for (const e of errors) refused.add(`${userId} ${e.instrument} ${e.side}`);
            }),
          );
        }
      }
      await Promise.all(pending);
    }
  };

  /** The takers whose arrival time (exchange clock) has come, before the requote: some hit stale quotes. */
  const takers = async () => {
    if (settings.takersPerMinute <= 0) return;
    const perSecond = settings.takersPerMinute / 60;
    const list = [...ex.instruments.values()].filter((i) => quotable(i) && CURRENCIES.includes(i.currency));
    const orders: Promise<unknown>[] = [];
    let fired = 0;
    // the exchange's clock as the sequencer reads it (ex.now moves only with commands)
    const now = s.clock.now();
    while (nextTaker <= now && list.length > 0) {
      if (fired >= MAX_TAKERS_PER_TICK) {
        stats.skipped++;
        nextTaker = now + poissonGapMs(rnd, perSecond);
        break;
      }
      fired++;
      nextTaker += poissonGapMs(rnd, perSecond);
      const inst = list[Math.floor(rnd() * list.length)];
      // most take a lot or two; one in six comes in size and walks the book
      const lots = inst.lotScaled * (rnd() < 1 / 6 ? 5 + Math.floor(rnd() * 15) : 1 + Math.floor(rnd() * 2));
      const side = rnd() < 0.5 ? BUY : SELL;
      stats.takers++;
      orders.push(
        submit({
          t: 'place', userId: takerId, side, instrument: inst.name, price: null, advanced: null, advPrice: null, lots,
          type: 'market', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'demo', clientOrderId: null,
        }).then((r) => {
          if (isReject(r)) {
            stats.takersRefused++;
            if (stats.takersRefused <= 3) log.warn({ instrument: inst.name, reason: r }, 'demo taker refused');
          }
        }),
      );
    }
    await Promise.all(orders);
  };

  let timer: NodeJS.Timeout | null = null;
  const loop = () => {
    if (stopped) return;
    const started = Date.now();
    ticks++;
    takers()
      .then(() => requote())
      .then(async () => {
        if (ticks % TOP_UP_TICKS === 0) {
          await topUp(takerId, CURRENCIES);
          for (const [key, id] of makers) await topUp(id, [key.split(':')[0] as CurrencyCode]);
        }
      })
      .catch((err) => log.warn({ err }, 'demo market cycle failed'))
      .finally(() => {
        // the next tick no sooner than requoteMs after this one started: bounded engine work
        if (!stopped) {
          timer = setTimeout(loop, Math.max(0, settings.requoteMs - (Date.now() - started)));
          timer.unref();
        }
      });
  };

  const ready = (async () => {
    // the single account of earlier versions leaves the books to the level accounts
    const legacy = ex.usersByEmail.get(DEMO_MAKER_EMAIL);
    if (legacy) await submit({ t: 'cancel_all', userId: legacy.id, currency: null, instrument: null, side: null, label: null });
    for (const currency of CURRENCIES) {
      for (let level = 1; level <= settings.levels; level++) {
        const id = await ensureUser(demoMakerEmail(currency, level));
        makers.set(`${currency}:${level}`, id);
        await topUp(id, [currency]);
        // mass quotes need a protection group; its limits are far beyond what the takers trade
        await submit({ t: 'set_mmp_config', userId: id, indexName: indexNameOf(currency), group: GROUP, interval: 1, frozenTime: 0, quantityLimit: 1e15, deltaLimit: 0, maxQuoteQuantity: 0 });
      }
    }
    takerId = await ensureUser(DEMO_TAKER_EMAIL);
    await topUp(takerId, CURRENCIES);
    await requote();
    nextTaker = s.clock.now() + (settings.takersPerMinute > 0 ? poissonGapMs(rnd, settings.takersPerMinute / 60) : 0);
    timer = setTimeout(loop, settings.requoteMs);
    timer.unref();
  })();

  return {
    ready,
    stats,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
