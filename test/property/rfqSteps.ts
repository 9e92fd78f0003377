// The block RFQ part of the conservation stream (issue 34). Random RFQ commands alone rarely line up
// into a trade (13-27 fills in 250,000 commands, almost never across several quotes), so most of it
// is told as stories: a taker asks (legs, often a hedge leg, disclosed or anonymous), several makers
// quote the side it will take (all-or-none and any-part-of, some two-way, edited, expiring), and the
// taker accepts at the limit the quotes need. Each story picks one plot besides: a trigger waiting
// for quotes, a maker whose cash leaves between its quote and the acceptance (passed over), or a race
// with a quote's expiry, a cancel or the RFQ's own end. Steps come a few commands apart, other
// commands between them (the index moves, orders trade, time passes). The story's choices use their
// own PRNG so that the rest of the stream draws as before; every command is still chosen from the
// live engine only, so the journal replays to the same state.
import { roundToTick } from '../../src/domain/instrument.ts';
import type { CurrencyCode } from '../../src/domain/currency.ts';
import type { Command, InstrumentSpec } from '../../src/engine/commands.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import { MIN_ANONYMOUS_MAKERS } from '../../src/blockrfq/engine.ts';
import type { Rfq, RfqHedge, RfqQuote } from '../../src/blockrfq/types.ts';
import type { Rand } from './accountsSteps.ts';

const RULES = { bandPct: 50, minAmount: {} };
/** The chance, per command, that the story under way takes its next step. */
const STEP_CHANCE = 0.15;
/** The chance that an RFQ slot of the stream starts a story (else one random RFQ command). */
const STORY_CHANCE = 0.75;

export interface RfqWorld {
  /** the stream's clock (stream time of the command being made) */
  ts(): number;
  /** the series orders may name now */
  active(): readonly InstrumentSpec[];
  currencies: readonly CurrencyCode[];
  /** an ordinary or thin account, as the rest of the stream picks them */
  user(): number;
  thin: readonly number[];
  /** the accounts marked as RFQ makers in the setup */
  makers: readonly number[];
}

type Plot = 'multi' | 'trigger' | 'short' | 'race';
type Step = (ex: Exchange, s: Story) => Command | null;

interface Story {
  rfqId: number;
  taker: number;
  created: number;
  /** the taker's side of the structure; the makers quote the other */
  side: 0 | 1;
  /** the makers that may quote it (the RFQ's makers, or every maker but the taker) */
  makers: number[];
  steps: Step[];
  /** the maker whose cash leaves before the acceptance (plot `short`) */
  short?: number;
  /** the makers that quoted so far (the next quote comes from another while there is one) */
  quoted: Set<number>;
}

const other = (s: 0 | 1): 0 | 1 => (s === 0 ? 1 : 0);

export class RfqStories {
  private story: Story | null = null;
  /** the cash a story's maker withdrew, deposited back once the story is over */
  private refill: Command | null = null;

  constructor(
    private readonly g: Rand,
    private readonly w: RfqWorld,
  ) {}

  /** The story's next step, now and then; null: none this command (the stream draws as usual). */
  step(ex: Exchange): Command | null {
    if (!this.g.chance(STEP_CHANCE)) return null;
    const s = this.story;
    if (s === null) {
      const c = this.refill;
      this.refill = null;
      return c;
    }
    const r = ex.blockRfqs.rfqs.get(s.rfqId);
    // the create was refused (or another RFQ took the id): the story ends
    if (r === undefined || r.taker !== s.taker || r.created !== s.created) {
      this.story = null;
      return null;
    }
    while (s.steps.length > 0) {
      const next = s.steps.shift()!;
      // once the RFQ is closed only one more step comes (a late acceptance or quote: the race)
      if (r.state !== 'open') s.steps.length = 0;
      const cmd = next(ex, s);
      if (cmd !== null) {
        if (s.steps.length === 0) this.story = null;
        return cmd;
      }
    }
    this.story = null;
    return null;
  }

  /** An RFQ slot of the stream: a new story's create, or one random RFQ command. */
  slot(ex: Exchange): Command {
    if (this.story === null && this.g.chance(STORY_CHANCE)) {
      const c = this.begin(ex);
      if (c !== null) return c;
    }
    return this.randomCommand(ex);
  }

  // ---- the stories ----------------------------------------------------------------------------

  private begin(ex: Exchange): Command | null {
    const g = this.g;
    const currency = g.pick(this.w.currencies);
    const choices = this.w.active().filter((sp) => {
      const inst = ex.instruments.get(sp.name);
      return sp.currency === currency && inst !== undefined && inst.state === 'open' && !inst.halted;
    });
    if (choices.length < 2) return null;
    const names = new Set<string>();
    for (let i = 1 + g.int(3); i > 0; i--) names.add(g.pick(choices).name);
    const legs = [...names].map((instrument) => ({ instrument, side: g.pick([0, 1] as const), ratio: 1 + g.int(3) }));
    const lot = ex.instruments.get(legs[0]!.instrument)!.lotScaled;
    const lots = g.pick([2, 3, 4, 6]) * lot;
    const plot: Plot = g.pick(['multi', 'multi', 'multi', 'trigger', 'short', 'race', 'race'] as const);
    const taker = g.chance(0.85) ? 1 + g.int(20) : g.pick(this.w.thin);
    const others = this.w.makers.filter((m) => m !== taker);
    // to every maker, or to a few named ones (an anonymous RFQ to fewer than 5 is refused: coverage)
    let named: number[] | null = null;
    if (g.chance(0.45)) {
      named = others.filter(() => g.chance(0.75));
      if (named.length < 2) named = others.slice(0, 2 + g.int(others.length - 1));
    }
    const makers = named ?? others;
    const spare = choices.find((sp) => !names.has(sp.name));
    let hedge: RfqHedge | null = null;
    if (spare !== undefined && g.chance(0.5)) {
      const hi = ex.instruments.get(spare.name)!;
      hedge = { instrument: hi.name, side: g.pick([0, 1] as const), lots: (1 + g.int(7)) * hi.lotScaled, price: this.near(ex, hi.name, 0.9, 0.2) };
    }
    const story: Story = { rfqId: ex.blockRfqs.nextRfqId, taker, created: this.w.ts(), side: g.pick([0, 1] as const), makers, steps: [], quoted: new Set() };
    if (plot === 'short') story.short = g.pick(makers);
    story.steps = this.plot(plot, story);
    this.story = story;
    return {
      t: 'rfq_create', userId: taker, legs, lots, makers: named, disclosed: g.chance(0.7), label: '', minAnonymousMakers: MIN_ANONYMOUS_MAKERS,
      // some end soon, for the races with the RFQ's own expiry
      ttlMs: plot === 'race' && g.chance(0.5) ? 10_000 + g.int(30_000) : 120_000 + g.int(480_000),
      ...(hedge !== null ? { hedge, rules: RULES } : {}),
    };
  }

  /** The steps of a plot after the create. */
  private plot(plot: Plot, s: Story): Step[] {
    const g = this.g;
    const quotes = (n: number, o: QuoteStyle = {}): Step[] => Array.from({ length: n }, () => (ex: Exchange, st: Story) => this.quote(ex, st, o));
    const steps: Step[] = [];
    if (plot === 'multi') {
      steps.push(...quotes(2 + g.int(3)));
      // now and then a two-way maker (its other side may cross its own: 13910), an edit, a cancel
      if (g.chance(0.3)) steps.splice(1, 0, (ex, st) => this.quote(ex, st, { side: st.side, again: true }));
      if (g.chance(0.25)) steps.push((ex, st) => this.edit(ex, st));
      if (g.chance(0.2)) steps.push((ex, st) => this.cancelOne(ex, st));
      steps.push((ex, st) => this.accept(ex, st, false));
    } else if (plot === 'trigger') {
      // a good-til-cancelled acceptance waits; the quotes after it fill it when they suffice
      steps.push(...quotes(1), (ex, st) => this.accept(ex, st, true, true), ...quotes(1 + g.int(3)));
      if (g.chance(0.2)) steps.push((ex, st) => ({ t: 'rfq_trigger_cancel', userId: st.taker, rfqId: st.rfqId }));
      steps.push((ex, st) => ({ t: 'rfq_cancel', userId: st.taker, rfqId: st.rfqId }));
    } else if (plot === 'short') {
      // one maker quotes best (one lot); the others cover the amount at worse prices; the first's
      // cash leaves; the acceptance passes it over (or, when its margin still carries it, fills it first)
      steps.push(
        (ex, st) => this.quote(ex, st, { maker: st.short, better: true, lots: 1 }),
        ...quotes(2 + g.int(2), { notMaker: s.short }),
        (ex, st) => this.drain(ex, st),
        // the taker's limit: what the others' quotes need (most of the time)
        (ex, st) => this.accept(ex, st, false, false, g.chance(0.7) ? st.short : undefined),
      );
    } else {
      // races: quotes that expire in a few seconds, cancels, the RFQ's end, a late acceptance
      steps.push(...quotes(2 + g.int(2), { expiresIn: 1_000 + g.int(8_000) }));
      const y = g.r();
      if (y < 0.3) steps.push((ex, st) => ({ t: 'rfq_quote_cancel', userId: g.pick(st.makers), quoteId: null, rfqId: st.rfqId, label: null, all: true }));
      else if (y < 0.5) steps.push((ex, st) => ({ t: 'rfq_cancel', userId: st.taker, rfqId: st.rfqId }));
      else if (y < 0.7) steps.push(() => ({ t: 'rfq_expire' }));
      steps.push((ex, st) => this.accept(ex, st, false));
    }
    return steps;
  }

  /** A price around the mark of an instrument, on its grid: mark x (lo .. lo + span). */
  private near(ex: Exchange, name: string, lo: number, span: number): number {
    const inst = ex.instruments.get(name)!;
    const mark = ex.markets.get(inst.id)!.markCoin;
    return Math.max(inst.tick, roundToTick(inst, (Number.isFinite(mark) ? mark * 1e4 : 100) * (lo + span * this.g.r()), 'nearest'));
  }

  private open(ex: Exchange, s: Story): Rfq | null {
    const r = ex.blockRfqs.rfqs.get(s.rfqId);
    return r !== undefined && r.state === 'open' ? r : null;
  }

  private quote(ex: Exchange, s: Story, o: QuoteStyle): Command | null {
    const g = this.g;
    const r = this.open(ex, s);
    if (r === null) return null;
    const eligible = s.makers.filter((m) => m !== o.notMaker);
    // a maker that has not quoted yet (several makers fill one acceptance), or one that has (two-way)
    const fresh = eligible.filter((m) => o.again === true ? s.quoted.has(m) : !s.quoted.has(m));
    const maker = o.maker ?? g.pick(fresh.length > 0 ? fresh : eligible);
    if (maker === undefined) return null;
    s.quoted.add(maker);
    const side = o.side ?? other(s.side);
    // leg prices inside the 50% block band; the maker's side of each leg decides what "better" is
    const legPrices = r.legs.map((l) => {
      if (!o.better) return this.near(ex, l.instrument, 0.9, 0.2);
      // better for the taker: a cheaper ask of a leg the structure buys, a dearer one it sells
      const cheap = (side === 1) === (l.side === 0);
      return this.near(ex, l.instrument, cheap ? 0.8 : 1.1, 0.05);
    });
    const lot = ex.instruments.get(r.legs[0]!.instrument)!.lotScaled;
    const k = r.lots / lot;
    // mostly up to about half the amount, so that an acceptance takes several quotes
    const lots = o.lots !== undefined ? o.lots * lot : g.chance(0.15) ? r.lots : (1 + g.int(Math.ceil(k / 2))) * lot;
    let hedgePrice: number | undefined;
    if (r.hedge !== undefined && g.chance(0.5)) {
      const hi = ex.instruments.get(r.hedge.instrument)!;
      hedgePrice = Math.max(hi.tick, roundToTick(hi, r.hedge.price + (g.int(5) - 2) * hi.tick, 'nearest'));
    }
    const expiresAt = o.expiresIn !== undefined ? this.w.ts() + o.expiresIn : g.chance(0.3) ? this.w.ts() + 20_000 + g.int(100_000) : null;
    return {
      t: 'rfq_quote', userId: maker, rfqId: r.id, quoteId: null, side, lots, legPrices, aon: g.chance(0.45), expiresAt, label: '', rules: RULES,
      ...(hedgePrice !== undefined ? { hedgePrice } : {}),
    };
  }

  private liveQuotes(ex: Exchange, r: Rfq, side: 0 | 1): RfqQuote[] {
    return ex.blockRfqs.quotesOf(r.id).filter((q) => q.state === 'open' && q.side === side && (q.expiresAt === null || q.expiresAt > ex.now));
  }

  private edit(ex: Exchange, s: Story): Command | null {
    const r = this.open(ex, s);
    if (r === null) return null;
    const mine = this.liveQuotes(ex, r, other(s.side));
    if (mine.length === 0) return null;
    const q = this.g.pick(mine);
    return { t: 'rfq_quote', userId: q.maker, rfqId: r.id, quoteId: q.id, side: q.side, lots: q.lots, legPrices: r.legs.map((l) => this.near(ex, l.instrument, 0.9, 0.2)), aon: q.aon, expiresAt: q.expiresAt, label: '', rules: RULES };
  }

  private cancelOne(ex: Exchange, s: Story): Command | null {
    const r = this.open(ex, s);
    if (r === null) return null;
    const live = this.liveQuotes(ex, r, other(s.side));
    if (live.length === 0) return null;
    const q = this.g.pick(live);
    return { t: 'rfq_quote_cancel', userId: q.maker, quoteId: q.id, rfqId: null, label: null, all: false };
  }

  /**
   * The short maker's cash leaves: all it may withdraw now (its quote holds no margin); the same
   * amount comes back once the story is over, so that the maker trades on in the rest of the stream.
   */
  private drain(ex: Exchange, s: Story): Command | null {
    const r = this.open(ex, s);
    const u = s.short === undefined ? undefined : ex.users.get(s.short);
    if (r === null || u === undefined || this.refill !== null) return null;
    const amount = ex.trading.risk.account(u, r.currency).availableWithdrawal;
    if (amount < 1) return null;
    this.refill = { t: 'deposit', userId: u.id, currency: r.currency, amount, depositId: null, by: u.id };
    return { t: 'withdraw', userId: u.id, currency: r.currency, amount };
  }

  /**
   * The taker accepts the whole amount (now and then a part) at the limit the live quotes need, in
   * their fill order (now and then a tighter one, which refuses; or none at all).
   */
  private accept(ex: Exchange, s: Story, gtc: boolean, early = false, skip?: number): Command | null {
    const g = this.g;
    const r = ex.blockRfqs.rfqs.get(s.rfqId);
    if (r === undefined) return null;
    const lot = ex.instruments.get(r.legs[0]!.instrument)!.lotScaled;
    const sorted = this.liveQuotes(ex, r, other(s.side))
      .filter((q) => q.maker !== skip)
      .sort((a, b) => (s.side === 0 ? a.price - b.price : b.price - a.price));
    // the whole amount, or what the quotes offer when less (now and then half, or all regardless)
    const offered = sorted.reduce((a, q) => a + q.lots, 0);
    const y = g.r();
    const lots = y < 0.15 ? Math.max(lot, Math.floor(r.lots / 2 / lot) * lot) : y < 0.3 || early ? r.lots : Math.max(lot, Math.min(r.lots, offered));
    let limit = s.side === 0 ? 1e7 : -1e7;
    if (sorted.length > 0 && !g.chance(0.1)) {
      let sum = 0;
      let i = 0;
      while (i < sorted.length - 1 && sum + sorted[i]!.lots < lots) sum += sorted[i++]!.lots;
      if (g.chance(0.1) && i > 0) i--;
      limit = sorted[i]!.price;
    }
    // a trigger set before the quotes come: a limit around the quotes' likely prices
    if (early) {
      let p = 0;
      for (const l of r.legs) p += (l.side === 0 ? 1 : -1) * l.ratio * this.near(ex, l.instrument, 1, 0);
      // the structure price may be negative: the slack is taken on its size
      limit = p + (s.side === 0 ? 1 : -1) * Math.round(Math.abs(p) * 0.15);
    }
    return { t: 'rfq_accept', userId: s.taker, rfqId: r.id, side: s.side, lots, price: limit, gtc, rules: RULES };
  }

  // ---- one random RFQ command (as the stream made them before the stories) --------------------

  private randomCommand(ex: Exchange): Command {
    const g = this.g;
    const open = [...ex.blockRfqs.rfqs.values()].filter((r) => r.state === 'open');
    const y = g.r();
    if (open.length === 0 || y < 0.2) {
      const currency = g.pick(this.w.currencies);
      const choices = this.w.active().filter((sp) => sp.currency === currency);
      const names = new Set<string>();
      for (let i = 1 + g.int(3); i > 0; i--) names.add(g.pick(choices).name);
      const first = ex.instruments.get([...names][0]!)!;
      // a hedge leg now and then (another instrument: this venue lists options only), its amount
      // not a multiple of the RFQ's so that parts round down to its grid
      const spare = choices.find((sp) => !names.has(sp.name));
      let hedge: RfqHedge | null = null;
      if (spare !== undefined && g.chance(0.3)) hedge = { instrument: spare.name, side: g.pick([0, 1] as const), lots: (1 + g.int(7)) * ex.instruments.get(spare.name)!.lotScaled, price: this.near(ex, spare.name, 0.8, 0.4) };
      return {
        t: 'rfq_create', userId: g.chance(0.5) ? this.w.user() : g.pick(this.w.thin), legs: [...names].map((instrument) => ({ instrument, side: g.pick([0, 1] as const), ratio: 1 + g.int(3) })),
        lots: (2 + g.int(5)) * first.lotScaled, makers: g.chance(0.7) ? null : [g.pick(this.w.makers)], disclosed: g.chance(0.5), label: '', ttlMs: 600_000 + g.int(1_800_000), minAnonymousMakers: MIN_ANONYMOUS_MAKERS,
        ...(hedge !== null ? { hedge, rules: RULES } : {}),
      };
    }
    const r = g.pick(open);
    if (y < 0.6) {
      const maker = g.chance(0.05) ? this.w.user() : g.pick(this.w.makers);
      const legPrices = r.legs.map((l) => this.near(ex, l.instrument, 0.6, 0.8));
      const mine = ex.blockRfqs.quotesOf(r.id).filter((q) => q.maker === maker && q.state === 'open');
      const edit = mine.length > 0 && g.chance(0.3) ? g.pick(mine) : null;
      // part of the amount, all of it, or too much
      const lot = ex.instruments.get(r.legs[0]!.instrument)!.lotScaled;
      const y2 = g.r();
      const lots = y2 < 0.4 ? r.lots : y2 < 0.85 ? Math.max(lot, Math.floor(r.lots / 2 / lot) * lot) : r.lots * 2;
      let hedgePrice: number | undefined;
      if (r.hedge !== undefined && g.chance(0.5)) {
        const hi = ex.instruments.get(r.hedge.instrument)!;
        hedgePrice = Math.max(hi.tick, r.hedge.price + (g.int(5) - 2) * hi.tick);
      }
      return {
        t: 'rfq_quote', userId: maker, rfqId: r.id, quoteId: edit?.id ?? null, side: edit?.side ?? g.pick([0, 1] as const), lots,
        legPrices, aon: g.chance(0.5), expiresAt: g.chance(0.5) ? null : this.w.ts() + g.int(60_000), label: '', rules: RULES,
        ...(hedgePrice !== undefined ? { hedgePrice } : {}),
      };
    }
    if (y < 0.85) {
      const side = g.pick([0, 1] as const);
      const quotes = ex.blockRfqs.quotesOf(r.id).filter((q) => q.state === 'open' && q.side !== side);
      const limit = quotes.length > 0 && g.chance(0.7) ? g.pick(quotes).price : side === 0 ? 1e7 : -1e7;
      return { t: 'rfq_accept', userId: g.chance(0.95) ? r.taker : this.w.user(), rfqId: r.id, side, lots: g.chance(0.8) ? r.lots : Math.max(1, Math.floor(r.lots / 2)), price: limit, gtc: g.chance(0.2), rules: RULES };
    }
    if (y < 0.9) return { t: 'rfq_quote_cancel', userId: g.pick(this.w.makers), quoteId: null, rfqId: g.chance(0.5) ? r.id : null, label: null, all: true };
    if (y < 0.94) return { t: 'rfq_cancel', userId: r.taker, rfqId: r.id };
    if (y < 0.97) return { t: 'rfq_trigger_cancel', userId: r.taker, rfqId: r.id };
    return { t: 'rfq_expire' };
  }
}

interface QuoteStyle {
  maker?: number;
  notMaker?: number;
  side?: 0 | 1;
  /** by a maker that quoted this RFQ already */
  again?: boolean;
  /** priced better for the taker than the others (the mark -20% / +10% per leg) */
  better?: boolean;
  /** this many lots of the first leg's instrument */
  lots?: number;
  /** expires this many ms from now */
  expiresIn?: number;
}
