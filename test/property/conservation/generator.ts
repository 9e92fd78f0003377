// The conservation stream's command generator: a seeded PRNG's orders, cancels, edits, deposits,
// withdrawals, index moves, expiries and the rest, looking at the live engine for prices and ids.
import type { CurrencyCode } from '../../../src/domain/currency.ts';
import { roundToTick } from '../../../src/domain/instrument.ts';
import type { Command, InstrumentSpec, Sequenced } from '../../../src/engine/commands.ts';
import type { Exchange } from '../../../src/engine/exchange.ts';
import { liquidationCandidates } from '../../../src/engine/liquidation.ts';
import { BUY, SELL } from '../../../src/engine/orderBook.ts';
import { mulberry32 as prng } from '../../../src/market/indexFeed.ts';
import { MARGIN_MODELS } from '../../../src/risk/portfolio/state.ts';
import { T0, spec } from '../../helpers/engine.ts';
import { accountsCommand, type Rand } from '../accountsSteps.ts';
import { RfqStories } from '../rfqSteps.ts';
import { blockTrade, comboCommand, mmpCommand, mmpConfig, type StreamPicks } from './mmpBlockComboSteps.ts';
import { ADMIN, CURRENCIES, PM_ACCOUNTS, RFQ_MAKERS, SERIES_EVERY_MS, SHORT_OF_CASH, SPECS, THIN, TIFS, USERS } from './streamParams.ts';

/** Generates the stream; it may look at the live engine (prices near the mark, ids that exist). */
export class Generator implements StreamPicks {
  private readonly r: () => number;
  ts = T0;
  seq = 0;
  private index: Record<CurrencyCode, number> = { BTC: 100_000, ETH: 4_000, USDC: 1 };
  /** Commands of a scenario started earlier, sent before anything random. */
  private readonly queued: Command[] = [];
  /** What orders may name: the fixed series and the short-lived ones still open. */
  active: InstrumentSpec[] = [...SPECS];
  /** Short-lived series not yet settled, by expiry. */
  private readonly expiring: { currency: CurrencyCode; expiry: number }[] = [];
  private seriesCount = 0;

  readonly rand: Rand = { r: () => this.r(), int: (n) => this.int(n), pick: (a) => this.pick(a), chance: (p) => this.chance(p) };
  /** Block RFQ stories (rfqSteps.ts), on a PRNG of their own. */
  private readonly rfq: RfqStories;

  constructor(seed: number) {
    this.r = prng(seed);
    const r2 = prng(seed ^ 0x5f0c);
    const g: Rand = { r: r2, int: (n) => Math.floor(r2() * n), pick: (a) => a[Math.floor(r2() * a.length)], chance: (p) => r2() < p };
    this.rfq = new RfqStories(g, {
      ts: () => this.ts,
      active: () => this.active,
      currencies: CURRENCIES,
      user: () => (g.chance(0.15) ? g.pick(THIN) : 1 + g.int(USERS)),
      thin: THIN,
      makers: RFQ_MAKERS,
    });
  }

  private int(n: number): number {
    return Math.floor(this.r() * n);
  }
  private pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  private chance(p: number): boolean {
    return this.r() < p;
  }

  setup(): Command[] {
    const out: Command[] = [
      { t: 'index', currency: 'BTC', price: this.index.BTC, manual: false, by: null },
      { t: 'index', currency: 'ETH', price: this.index.ETH, manual: true, by: null },
      { t: 'list', instruments: SPECS },
    ];
    for (let i = 1; i <= USERS; i++) {
      out.push({ t: 'create_user', email: `p${i}@prop.io`, passwordHash: 'h', role: 'user', inviteCode: null, by: null });
      out.push({ t: 'deposit', userId: i, currency: 'BTC', amount: 50e8, depositId: null, by: i });
      out.push({ t: 'deposit', userId: i, currency: 'ETH', amount: 1000e8, depositId: null, by: i });
    }
    out.push({ t: 'create_user', email: 'short-of-cash@prop.io', passwordHash: 'h', role: 'user', inviteCode: null, by: null });
    out.push({ t: 'deposit', userId: SHORT_OF_CASH, currency: 'BTC', amount: 0.01e8, depositId: null, by: SHORT_OF_CASH });
    out.push({ t: 'deposit', userId: SHORT_OF_CASH, currency: 'ETH', amount: 0.2e8, depositId: null, by: SHORT_OF_CASH });
    for (const id of THIN) {
      out.push({ t: 'create_user', email: `thin${id}@prop.io`, passwordHash: 'h', role: 'user', inviteCode: null, by: null });
      out.push({ t: 'deposit', userId: id, currency: 'BTC', amount: 0.3e8 + this.int(0.5e8), depositId: null, by: id });
      out.push({ t: 'deposit', userId: id, currency: 'ETH', amount: 3e8 + this.int(10e8), depositId: null, by: id });
    }
    // portfolio margin (issue 35): an administrator lowers the minimum equity to switch, and some
    // ordinary and some thin accounts trade on portfolio margin (the thin ones into liquidation and
    // default on the +-50% jumps); others switch back and forth at random below
    out.push({ t: 'create_user', email: 'admin@prop.io', passwordHash: 'h', role: 'admin', inviteCode: null, by: null });
    out.push({ t: 'set_pm_params', params: { minSwitchEquityBtc: 0.1 }, by: ADMIN });
    for (const [id, model] of PM_ACCOUNTS) out.push({ t: 'change_margin_model', userId: id, model });
    // block RFQ makers (issue 34): ordinary, portfolio-margin and thin accounts
    for (const id of RFQ_MAKERS) out.push({ t: 'rfq_set_maker', by: ADMIN, userId: id, maker: true });
    for (const c of CURRENCIES) for (const k of [1, 2]) out.push(this.listSeries(c, T0 + k * SERIES_EVERY_MS));
    // market-maker protection for everyone: ordinary mmp orders and mass quotes of group g trigger now and then
    for (let id = 1; id <= THIN[THIN.length - 1]!; id++) for (const indexName of ['btc_usd', 'eth_usd']) for (const group of [null, 'g']) out.push(mmpConfig(this.rand, id, indexName, group));
    return out;
  }

  /** Lists a short-lived series around the current index (strikes made unique per series: names carry only the date). */
  private listSeries(currency: CurrencyCode, expiry: number): Command {
    const n = ++this.seriesCount;
    const base = currency === 'BTC' ? 1000 : 50;
    const atm = Math.round(this.index[currency] / base) * base;
    const specs = [0.85, 1, 1.15].flatMap((f) => {
      const strike = Math.round((atm * f) / base) * base + n;
      return [spec(currency, expiry, strike, 'call'), spec(currency, expiry, strike, 'put')];
    });
    this.active.push(...specs);
    this.expiring.push({ currency, expiry });
    return { t: 'list', instruments: specs };
  }

  /** The next command and its time (time moves forward by 0..2 s, sometimes by 40 s). */
  next(ex: Exchange): Sequenced {
    this.ts += this.chance(0.005) ? 40_000 : this.int(2000);
    const cmd = this.command(ex);
    return { ...cmd, ts: this.ts, seq: ++this.seq } as Sequenced;
  }

  stamp(cmd: Command): Sequenced {
    return { ...cmd, ts: this.ts, seq: ++this.seq } as Sequenced;
  }

  user(): number {
    return this.chance(0.15) ? this.pick(THIN) : 1 + this.int(USERS);
  }

  private command(ex: Exchange): Command {
    const next = this.queued.shift();
    if (next !== undefined) return next;
    const due = this.expiring.findIndex((e) => e.expiry <= this.ts);
    if (due >= 0) {
      // the expiry passed: settle it, and list its replacement two periods out
      const { currency, expiry } = this.expiring.splice(due, 1)[0]!;
      this.active = this.active.filter((sp) => !(sp.currency === currency && sp.expiry === expiry));
      this.queued.push(this.listSeries(currency, expiry + 2 * SERIES_EVERY_MS));
      return { t: 'settle', currency, expiry };
    }
    // the block RFQ story under way takes its steps a few commands apart
    const told = this.rfq.step(ex);
    if (told !== null) return told;
    const x = this.r();
    if (x < 0.01) {
      const ladder = this.reduceOnlyBehindOrdinary(ex);
      if (ladder.length > 0) {
        this.queued.push(...ladder.slice(1));
        return ladder[0]!;
      }
    }
    if (x >= 0.54 && x < 0.55) return this.rfq.slot(ex);
    if (x >= 0.52 && x < 0.54) return comboCommand(this, ex);
    if (x >= 0.55 && x < 0.57) return blockTrade(this, ex);
    if (x >= 0.57 && x < 0.62) return mmpCommand(this, ex);
    if (x < 0.62) return this.order(ex);
    if (x < 0.77) {
      const userId = this.user();
      // half the time one of the user's own open orders, else a recent id of anyone's (foreign,
      // closed and not yet used ids included)
      if (this.chance(0.5)) {
        const own: number[] = [];
        for (const e of ex.users.get(userId)!.exposures.values()) for (const o of e.openOrders) own.push(o.id);
        if (own.length > 0 && x >= 0.74) {
          // private/edit: a new total amount (sometimes smaller, sometimes off the lot grid) and a
          // price a few units away (sometimes off the tick grid, sometimes unchanged)
          const o = ex.users.get(userId)!.orders.get(this.pick(own))!;
          const lots = this.chance(0.05) ? o.inst.lotScaled * (1 + this.int(6)) + 1 : o.inst.lotScaled * (o.filled + 1 + this.int(8));
          const price = this.chance(0.3) ? null : Math.max(1, o.price + (this.int(11) - 5) * (this.chance(0.8) ? 5 : 1));
          return { t: 'edit', userId, orderId: o.id, lots, price, postOnly: null, rejectPostOnly: null };
        }
        if (own.length > 0) return { t: 'cancel', userId, orderId: this.pick(own) };
      }
      return { t: 'cancel', userId, orderId: Math.max(1, ex.nextOrderId - this.int(200) + 5) };
    }
    if (x < 0.795) {
      const inst = this.pick(this.active);
      return {
        t: 'cancel_all',
        userId: this.user(),
        currency: this.chance(0.3) ? this.pick(CURRENCIES) : null,
        instrument: this.chance(0.3) ? inst.name : null,
        side: this.chance(0.3) ? this.pick([BUY, SELL] as const) : null,
        label: this.chance(0.3) ? this.pick(['', 'a', 'b']) : null,
      };
    }
    if (x < 0.825) {
      const userId = this.user();
      const currency = this.pick(CURRENCIES);
      return { t: 'deposit', userId, currency, amount: 1 + this.int(5e8), depositId: this.chance(0.4) ? `x${this.int(5)}` : null, by: userId };
    }
    if (x < 0.855) {
      const userId = this.user();
      const currency = this.pick(CURRENCIES);
      const avail = ex.trading.risk.account(ex.users.get(userId)!, currency).availableWithdrawal;
      if (this.chance(0.5)) return { t: 'withdraw', userId, currency, amount: 1 + Math.floor(avail * 1.2 * this.r()) };
      // the wallet (src/wallet/): a pending withdrawal (reserved at once; some complete by themselves
      // a while later), a cancel of one of the user's pending ones, or the completion of those due
      const y = this.r();
      if (y < 0.6) {
        const rules = { bookOnly: false, maxPending: 5, autoCompleteMs: this.chance(0.5) ? this.int(120_000) : null };
        return { t: 'wallet_withdraw', userId, currency, amount: 1 + Math.floor(avail * 1.2 * this.r()), address: 'addr', priority: 'high', nonce: this.chance(0.2) ? `w${this.int(4)}` : null, rules };
      }
      if (y < 0.85) {
        const pending = ex.wallet.withdrawalsOf(userId, currency).filter((w) => w.state === 'confirmed');
        return { t: 'wallet_cancel_withdrawal', userId, id: pending.length > 0 ? this.pick(pending).id : ex.wallet.nextWithdrawalId };
      }
      return { t: 'wallet_complete_due' };
    }
    if (x < 0.955) {
      // BTC's automatic feed updates more often than ETH's manual one; gaps of over 30 s (see
      // `next`) still make it stale now and then
      const currency = this.chance(0.75) ? 'BTC' : 'ETH';
      const base = currency === 'BTC' ? 100_000 : 4_000;
      if (this.chance(0.01)) {
        // a jump of up to +-50% (a manual print: the automatic feed refuses jumps over 10%)
        this.index[currency] = Math.round(this.index[currency] * (0.5 + this.r()) * 100) / 100;
        return { t: 'index', currency, price: this.index[currency], manual: true, by: null };
      }
      // a mean-reverting walk keeps the marks (and so the bands) in a useful range
      const drift = 0.02 * Math.log(base / this.index[currency]);
      const p = this.index[currency] * Math.exp(drift + 0.004 * (this.r() + this.r() + this.r() - 1.5));
      this.index[currency] = Math.round(p * 100) / 100;
      return { t: 'index', currency, price: this.index[currency], manual: currency === 'ETH', by: null };
    }
    if (x < 0.975) return { t: 'expire_orders' };
    if (x < 0.98) {
      // a liquidation step: for an account the background check would pick, else any (a no-op)
      const due = liquidationCandidates(ex);
      if (due.length > 0) return { t: 'liquidate', ...this.pick(due) };
      return { t: 'liquidate', userId: this.user(), currency: this.pick(CURRENCIES) };
    }
    if (x < 0.985) return { t: 'set_vol', currency: this.pick(CURRENCIES), atmVol: 0.4 + 0.5 * this.r(), skew: -0.1, curvature: 0.5, by: 0 };
    if (x < 0.9855) return { t: 'halt', instrument: this.pick(this.active).name, halted: true, by: 0 };
    // a margin model change at any moment (refused when the new model would not be covered)
    if (x < 0.988) return { t: 'change_margin_model', userId: this.user(), model: this.pick(MARGIN_MODELS) };
    if (x < 0.992) return { t: 'halt', instrument: this.pick(this.active).name, halted: false, by: 0 };
    // subaccounts, transfers (in a family and to other users) and position moves (issue 32)
    if (x < 0.997) return accountsCommand(ex, this.rand, USERS, CURRENCIES, (userId) => ({ ...this.order(ex), userId }));
    // orders for a user or instrument that does not exist
    return this.chance(0.5) ? { ...this.order(ex), userId: 999 } as Command : { ...this.order(ex), instrument: 'BTC-1JAN30-1-C' } as Command;
  }

  /**
   * An account offers its position twice at one price, an ordinary order first and a reduce-only
   * one behind it, and another account sweeps both (any time in force, or a market order): the
   * case where the sweep must stop and cut the reduce-only order before it flips the position.
   */
  private reduceOnlyBehindOrdinary(ex: Exchange): Command[] {
    const owner = ex.users.get(this.user())!;
    const held = [...owner.positions.values()].filter((p) => p.size !== 0 && p.inst.state === 'open');
    if (held.length === 0) return [];
    const p = this.pick(held);
    const market = ex.markets.get(p.inst.id)!;
    if (!Number.isFinite(market.markCoin)) return [];
    const price = Math.min(Math.max(roundToTick(p.inst, market.markCoin * 1e4, 'nearest'), roundToTick(p.inst, market.minPrice, 'up')), roundToTick(p.inst, market.maxPrice, 'down'));
    const lots = Math.abs(p.size);
    const side = p.size > 0 ? SELL : BUY;
    const base = { t: 'place', instrument: p.inst.name, advanced: null, advPrice: null, postOnly: false, rejectPostOnly: false, label: 'ladder', clientOrderId: null } as const;
    const resting = { ...base, userId: owner.id, side, price, type: 'limit', tif: 'good_til_cancelled' } as const;
    let taker = this.user();
    if (taker === owner.id) taker = (taker % USERS) + 1;
    const type = this.chance(0.2) ? 'market' : 'limit';
    // a buy at market that the account can barely pay for: its cost estimate must not fall short
    if (type === 'market' && side === SELL && this.chance(0.5)) taker = SHORT_OF_CASH;
    return [
      { ...resting, lots: (1 + this.int(lots)) * p.inst.lotScaled, reduceOnly: false },
      { ...resting, lots: lots * p.inst.lotScaled, reduceOnly: true },
      { ...base, userId: taker, side: side === SELL ? BUY : SELL, price: type === 'market' ? null : price, type, tif: this.pick(TIFS), lots: (2 * lots + this.int(3)) * p.inst.lotScaled, reduceOnly: false },
    ];
  }

  private order(ex: Exchange): Extract<Command, { t: 'place' }> {
    const s = this.pick(this.active);
    const inst = ex.instruments.get(s.name)!;
    const market = ex.markets.get(inst.id)!;
    const type = this.chance(0.15) ? 'market' : 'limit';
    let price: number | null = null;
    if (type === 'limit') {
      const mark = Number.isFinite(market.markCoin) ? market.markCoin * 1e4 : 100;
      let p = mark * (0.8 + 0.4 * this.r());
      p = Math.min(Math.max(p, market.minPrice), market.maxPrice);
      p = roundToTick(inst, p, 'nearest');
      if (p > market.maxPrice) p = roundToTick(inst, market.maxPrice, 'down');
      if (p < market.minPrice) p = roundToTick(inst, market.minPrice, 'up');
      const y = this.r();
      if (y < 0.02) p = market.minPrice - 1; // below the band (or 0)
      else if (y < 0.04) p = market.maxPrice + 5; // above it
      else if (y < 0.05 && p >= 50) p += 1; // off the 0.0005 grid
      else if (y < 0.055) p = 0;
      price = p;
    }
    const postOnly = type === 'limit' && this.chance(0.15);
    let lots = (1 + this.int(this.chance(0.1) ? 60 : 8)) * inst.lotScaled;
    if (this.chance(0.02)) lots = this.chance(0.5) ? 0 : lots + inst.lotScaled / 2;
    const userId = this.user();
    return {
      t: 'place',
      userId,
      side: this.chance(0.5) ? BUY : SELL,
      instrument: inst.name,
      price,
      advanced: null,
      advPrice: null,
      lots,
      type,
      tif: this.pick(TIFS),
      postOnly,
      rejectPostOnly: postOnly && this.chance(0.5),
      reduceOnly: this.chance(0.1),
      label: this.pick(['', 'a', 'b']),
      clientOrderId: this.chance(0.08) ? `c${this.int(10)}` : null,
      ...(type === 'limit' && this.chance(0.2) ? { mmp: true } : {}),
    };
  }
}
