// Inputs and outputs of the portfolio-margin scenario engine (src/risk/portfolio/scenarios.ts).
import type { CurrencyCode } from '../../domain/currency.ts';
import type { OptionType } from '../../domain/instrument.ts';

/** One option series an account holds or quotes, in one settlement currency. */
export interface PmLeg {
  instrument: string;
  optionType: OptionType;
  /** USD. */
  strike: number;
  /** Expiry instant (ms). */
  expiry: number;
  /** The smile's vol at this strike now (decimal): the mark IV. */
  iv: number;
  /** Signed position in contracts (1 contract = 1 coin of underlying). */
  position: number;
  /** Contracts of open buy orders and of open sell orders (>= 0), counted as if filled. */
  buyOpen: number;
  sellOpen: number;
}

export interface PmPortfolio {
  currency: CurrencyCode;
  /** The forward (the index, USD) the options are valued at. */
  forward: number;
  /** Valuation instant (ms): a parameter, never read from a clock. */
  now: number;
  legs: readonly PmLeg[];
  /** The account's resting combo orders (issue 34), counted as the engine counts them
   *  (src/risk/portfolio/pmRisk.ts): each combo a unit of its own, as if filled, the worse side. */
  combos?: readonly PmCombo[];
}

/** One combo's open orders of an account: its bid and ask lots and what one combo lot holds. */
export interface PmCombo {
  combo: string;
  /** Each leg's series (its position and open fields unused) and its signed contracts per combo lot. */
  legs: readonly { series: PmLeg; perLot: number }[];
  /** Open combo lots: of buy orders (bid) and of sell orders (ask), >= 0. */
  bid: number;
  ask: number;
}

export type VolScenario = 'up' | 'same' | 'down';

/** One scenario's profit or loss of the whole portfolio, in minor units (losses rounded up). */
export interface ScenarioPnl {
  table: 'standard' | 'extended';
  /** Relative move of the forward (0.08 = +8%). */
  move: number;
  vol: VolScenario;
  pnl: number;
  /** The loss this scenario counts for (>= 0, minor units): the loss itself in the standard table,
   * extendedLossPercent of it (rounded up) in the extended one. */
  counted: number;
}

export interface PortfolioMargin {
  currency: CurrencyCode;
  /** Every standard scenario (moves ascending, each up/same/down), then the extended ones. */
  scenarios: ScenarioPnl[];
  /** The scenario whose (counted) loss is the largest; the 0-move same-vol one when nothing loses. */
  worst: ScenarioPnl;
  /** The largest counted loss (>= 0): the extended table's losses count at extendedLossPercent. */
  worstLoss: number;
  contingencies: { shortOption: number; delta: number; total: number };
  maintenanceMargin: number;
  initialMargin: number;
}
