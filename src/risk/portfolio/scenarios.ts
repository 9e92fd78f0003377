// The portfolio-margin scenario engine (issue 35): the maintenance margin of an account in one
// settlement currency is the worst loss of its options over a table of stressed markets, plus
// contingencies. Pure and deterministic: the same portfolio gives the same figures bit for bit,
// whatever order its legs come in (they are netted per series and summed in name order).
//
// Money: the revaluation is Black-76 in floats (DESIGN rule 6: a model); each scenario's P&L becomes
// integer minor units once, at the end (losses rounded up, gains down: the exchange's favour).
//
// Inverse options: a BTC option's price and P&L are in BTC. A leg's P&L in a scenario is its coin
// price at the shocked forward and vol less its coin price now (`coinPrice` = USD price / forward),
// so a rally that lifts a call's USD value less than the forward shows the coin loss it is.
import { CURRENCIES } from '../../domain/currency.ts';
import { ceilDiv } from '../../domain/decimal.ts';
import { black76Greeks, coinPrice, yearFraction } from '../../domain/pricing.ts';
import { toMinorDown, toMinorUp } from '../margin.ts';
import { DEFAULT_PM_PARAMS, priceMoves, volShock, type PortfolioMarginParams } from './params.ts';
import type { PmCombo, PmLeg, PmPortfolio, PortfolioMargin, ScenarioPnl, VolScenario } from './types.ts';

const MS_PER_DAY = 24 * 3600 * 1000;

/** A series with everything the account holds and quotes in it added up. */
interface NetLeg {
  leg: PmLeg;
  position: number;
  buyOpen: number;
  sellOpen: number;
}

/** Legs netted per instrument and sorted by name, so that input order never changes a sum. */
function netLegs(legs: readonly PmLeg[]): NetLeg[] {
  const byName = new Map<string, NetLeg>();
  // float sums depend on their order: legs of one instrument are added in a canonical order too
  const canonical = [...legs].sort(
    (a, b) => (a.instrument < b.instrument ? -1 : a.instrument > b.instrument ? 1 : a.position - b.position || a.buyOpen - b.buyOpen || a.sellOpen - b.sellOpen),
  );
  for (const leg of canonical) {
    if (!(Number.isFinite(leg.position) && leg.buyOpen >= 0 && leg.sellOpen >= 0)) throw new RangeError(`bad leg ${leg.instrument}`);
    const n = byName.get(leg.instrument);
    if (n === undefined) byName.set(leg.instrument, { leg, position: leg.position, buyOpen: leg.buyOpen, sellOpen: leg.sellOpen });
    else {
      n.position += leg.position;
      n.buyOpen += leg.buyOpen;
      n.sellOpen += leg.sellOpen;
    }
  }
  return [...byName.values()]
    .filter((n) => n.position !== 0 || n.buyOpen !== 0 || n.sellOpen !== 0)
    .sort((a, b) => (a.leg.instrument < b.leg.instrument ? -1 : a.leg.instrument > b.leg.instrument ? 1 : 0));
}

/** Coin P&L of one net leg when the contract's price moves by `du` coin: the position's, plus the
 * open orders' as if filled, the worse of the two sides. */
function legPnl(n: NetLeg, du: number): number {
  const pos = n.position * du;
  if (n.buyOpen === 0 && n.sellOpen === 0) return pos;
  return pos + Math.min(n.buyOpen * du, -n.sellOpen * du);
}

export function shockedVol(p: PortfolioMarginParams, iv: number, days: number, vol: VolScenario): number {
  if (vol === 'same') return iv;
  if (vol === 'up') return iv * (1 + volShock(p, p.volShockUp, days));
  return Math.max(iv * (1 - volShock(p, p.volShockDown, days)), Math.min(iv, p.minVol));
}

/** A far out-of-the-money option: beyond the standard table's reach (the extended table's subject). */
export function farOtm(p: PortfolioMarginParams, leg: PmLeg, F: number): boolean {
  return leg.optionType === 'call' ? leg.strike >= F * (1 + p.priceRange) : leg.strike <= F * (1 - p.priceRange);
}

/** Coin -> minor units rounded up, never -0 (toMinorUp(0) is ceil(-1e-6) = -0). */
export function up(coin: number, decimals: number): number {
  return toMinorUp(coin, decimals) + 0;
}

/** Coin P&L -> minor units: a loss rounded up (larger), a gain down. */
export function pnlMinor(coin: number, decimals: number): number {
  return coin >= 0 ? toMinorDown(coin, decimals) : -up(-coin, decimals) + 0;
}

export function portfolioMargin(pf: PmPortfolio, params: PortfolioMarginParams = DEFAULT_PM_PARAMS): PortfolioMargin {
  const F = pf.forward;
  if (!(Number.isFinite(F) && F > 0)) throw new RangeError(`forward must be a finite positive number: ${F}`);
  const decimals = CURRENCIES[pf.currency].decimals;
  const legs = netLegs(pf.legs);
  const priced = legs.map((n) => {
    const T = Math.max(yearFraction(pf.now, n.leg.expiry), 0);
    return { n, T, days: Math.max((n.leg.expiry - pf.now) / MS_PER_DAY, 0), base: coinPrice(n.leg.optionType, F, n.leg.strike, T, n.leg.iv) };
  });

  const combos = pricedCombos(pf, params);

  // P&L of the legs in `subset` at forward F(1+move) under one vol scenario, then of the combo
  // orders (`farOnly`: their far out-of-the-money legs alone, the extended table's subject)
  const scenario = (move: number, vol: VolScenario, subset: typeof priced, farOnly: boolean): number => {
    const Fs = F * (1 + move);
    let sum = 0;
    for (const x of subset) {
      const iv = shockedVol(params, x.n.leg.iv, x.days, vol);
      sum += legPnl(x.n, coinPrice(x.n.leg.optionType, Fs, x.n.leg.strike, x.T, iv) - x.base);
    }
    for (const c of combos) {
      // one combo lot's P&L; the combo's open lots as if filled, the worse side (a unit of its own)
      let lot = 0;
      for (const l of c.legs) {
        if (farOnly && !l.far) continue;
        lot += l.perLot * (coinPrice(l.series.optionType, Fs, l.series.strike, l.T, shockedVol(params, l.series.iv, l.days, vol)) - l.base);
      }
      sum += Math.min(c.bid * lot, -c.ask * lot);
    }
    return sum;
  };

  const scenarios: ScenarioPnl[] = [];
  for (const move of priceMoves(params)) {
    for (const vol of ['up', 'same', 'down'] as const) {
      // the unmoved market is the one everything is valued at now: exactly no P&L, not float noise
      const pnl = move === 0 && vol === 'same' ? 0 : pnlMinor(scenario(move, vol, priced, false), decimals);
      scenarios.push({ table: 'standard', move, vol, pnl, counted: Math.max(0, -pnl) + 0 });
    }
  }
  const far = priced.filter((x) => farOtm(params, x.n.leg, F));
  if (far.length > 0 || combos.some((c) => c.legs.some((l) => l.far))) {
    for (const move of params.extendedMoves) {
      const pnl = pnlMinor(scenario(move, 'up', far, true), decimals);
      scenarios.push({ table: 'extended', move, vol: 'up', pnl, counted: ceilDiv(Math.max(0, -pnl) * params.extendedLossPercent, 100) + 0 });
    }
  }

  let worst = scenarios.find((s) => s.table === 'standard' && s.move === 0 && s.vol === 'same')!;
  for (const s of scenarios) if (s.counted > worst.counted) worst = s;

  const contingencies = contingenciesOf(params, priced, combos, F, decimals);
  const maintenanceMargin = worst.counted + contingencies.total;
  return {
    currency: pf.currency,
    scenarios,
    worst,
    worstLoss: worst.counted,
    contingencies,
    maintenanceMargin,
    initialMargin: ceilDiv(maintenanceMargin * params.imFactorPercent, 100),
  };
}

/**
 * Contingencies, added to the worst loss: per (expiry, strike), shortOptionContingency coin per
 * contract of net short options (calls and puts of a strike net, as in Deribit's example, with open
 * sells as if filled); and deltaContingency of the absolute net delta in coin, the worse of all
 * buys or all sells filled. The coin delta of an inverse option is its Black-76 delta less its coin
 * price: what its coin value gains per unit of relative move of the forward.
 */
function contingenciesOf(
  p: PortfolioMarginParams,
  priced: { n: NetLeg; T: number; base: number }[],
  combos: readonly PricedCombo[],
  F: number,
  decimals: number,
): PortfolioMargin['contingencies'] {
  const netShort = new Map<string, number>();
  let delta = 0;
  let buysDelta = 0;
  let sellsDelta = 0;
  for (const x of priced) {
    const key = `${x.n.leg.expiry}:${x.n.leg.strike}`;
    netShort.set(key, (netShort.get(key) ?? 0) + x.n.position - x.n.sellOpen);
    const d = black76Greeks(x.n.leg.optionType, F, x.n.leg.strike, x.T, x.n.leg.iv, 0).delta - x.base;
    delta += x.n.position * d;
    buysDelta += x.n.buyOpen * d;
    sellsDelta -= x.n.sellOpen * d;
  }
  // combo orders: the legs either side sells count as open sells; the delta of each combo, the
  // worse of its sides in absolute value, on top (as the engine counts them, pmRisk.ts)
  let comboDelta = 0;
  for (const c of combos) {
    let lotDelta = 0;
    for (const l of c.legs) {
      const key = `${l.series.expiry}:${l.series.strike}`;
      const sells = l.perLot < 0 ? -l.perLot * c.bid : l.perLot * c.ask;
      if (sells > 0) netShort.set(key, (netShort.get(key) ?? 0) - sells);
      lotDelta += l.perLot * (black76Greeks(l.series.optionType, F, l.series.strike, l.T, l.series.iv, 0).delta - l.base);
    }
    comboDelta += Math.max(c.bid, c.ask) * Math.abs(lotDelta);
  }
  let shortContracts = 0;
  for (const net of netShort.values()) if (net < 0) shortContracts -= net;
  const shortOption = up(shortContracts * p.shortOptionContingency, decimals);
  const exposure = Math.max(Math.abs(delta + buysDelta), Math.abs(delta + sellsDelta)) + comboDelta;
  const deltaC = up(exposure * p.deltaContingency, decimals);
  return { shortOption, delta: deltaC, total: shortOption + deltaC };
}

/** A combo's open orders with each leg's valuation now (time to expiry, base price, far or not). */
interface PricedCombo {
  bid: number;
  ask: number;
  legs: { series: PmLeg; perLot: number; T: number; days: number; base: number; far: boolean }[];
}

/** The portfolio's combo orders with open lots, in combo id order (float sums depend on their order). */
function pricedCombos(pf: PmPortfolio, params: PortfolioMarginParams): PricedCombo[] {
  const F = pf.forward;
  const combos = [...(pf.combos ?? [])].sort((a: PmCombo, b: PmCombo) => (a.combo < b.combo ? -1 : a.combo > b.combo ? 1 : 0));
  const out: PricedCombo[] = [];
  for (const c of combos) {
    if (!(c.bid >= 0 && c.ask >= 0 && Number.isFinite(c.bid + c.ask))) throw new RangeError(`bad combo ${c.combo}`);
    if (c.bid === 0 && c.ask === 0) continue;
    const legs = c.legs.map((l) => {
      const T = Math.max(yearFraction(pf.now, l.series.expiry), 0);
      const days = Math.max((l.series.expiry - pf.now) / MS_PER_DAY, 0);
      return { series: l.series, perLot: l.perLot, T, days, base: coinPrice(l.series.optionType, F, l.series.strike, T, l.series.iv), far: farOtm(params, l.series, F) };
    });
    out.push({ bid: c.bid, ask: c.ask, legs });
  }
  return out;
}
