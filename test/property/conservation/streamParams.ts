// What the conservation streams are made of: the seeds and their split between the two test files,
// the stream length, the accounts and the listed series (generator.ts and stream.ts read them).
import type { CurrencyCode } from '../../../src/domain/currency.ts';
import { DEFAULT_LIMITS, type ExchangeLimits } from '../../../src/engine/exchange.ts';
import type { TimeInForce } from '../../../src/engine/types.ts';
import type { MarginModel } from '../../../src/risk/portfolio/state.ts';
import { EXP_MAR, spec } from '../../helpers/engine.ts';

// four seeds of 250,000 commands: a million per run, liquidations, expiries and index jumps of up
// to +-50% mixed in (issue 13). Two seeds per test file (conservation.test.ts,
// conservationMoreSeeds.test.ts): test:all runs two files at a time, so the two halves run on both
// cores instead of one file for a quarter of an hour.
export const FIRST_SEEDS = [20260105, 7];
export const MORE_SEEDS = [9001, 424242];
/** STRIKEBOOK_PROP_SEED: that one seed runs alone, with the default limits, in conservation.test.ts
 *  (conservationMoreSeeds.test.ts then runs nothing). */
export const SEED_OVERRIDE = process.env.STRIKEBOOK_PROP_SEED ? Number(process.env.STRIKEBOOK_PROP_SEED) : null;
/** The last default seed runs with small limits, so that pruning of closed orders and the open-order
 *  limits are exercised too. */
export const SMALL_LIMITS: ExchangeLimits = { ...DEFAULT_LIMITS, closedOrdersKept: 300, userTradesKept: 200, maxOpenOrdersPerInstrument: 3, maxOpenOrdersPerUser: 12 };
export const COMMANDS = Number(process.env.STRIKEBOOK_PROP_COMMANDS ?? 250_000);
export const BATCH = 1_000;
/** Every this many batches: snapshot -> restore, run one batch on both, continue on the copy. */
export const SNAPSHOT_EVERY = 10;
export const USERS = 20;
/** One more account, with little cash, that only buys at market in reduceOnlyBehindOrdinary. */
export const SHORT_OF_CASH = USERS + 1;
/** Accounts with little collateral that trade like the others: they go below maintenance margin,
 *  into liquidation and into default when the index jumps. */
export const THIN = [USERS + 2, USERS + 3, USERS + 4, USERS + 5];
/** The administrator (made after the thin accounts). */
export const ADMIN = THIN[THIN.length - 1]! + 1;
/** Accounts on another model than segregated_sm from the start: ordinary ones and thin ones, on
 *  portfolio margin and on cross standard margin (collateral pooled across currencies). */
export const PM_ACCOUNTS: [number, MarginModel][] = [[1, 'segregated_pm'], [2, 'cross_pm'], [3, 'segregated_pm'], [4, 'cross_sm'], [THIN[0]!, 'segregated_pm'], [THIN[1]!, 'cross_pm'], [THIN[2]!, 'cross_sm']];
/** Short-lived series: one per currency expires every this often (stream time), is settled and is replaced. */
export const SERIES_EVERY_MS = 2 * 3600_000;
/** Block RFQ makers (issue 34). */
export const RFQ_MAKERS = [1, 2, 4, 5, 6, THIN[0]!, THIN[2]!];


const DAILY = Date.UTC(2026, 0, 6, 8); // expires during the run
export const SPECS = [
  spec('BTC', EXP_MAR, 90000, 'put'),
  spec('BTC', EXP_MAR, 100000, 'call'),
  spec('BTC', EXP_MAR, 100000, 'put'),
  spec('BTC', EXP_MAR, 110000, 'call'),
  spec('BTC', EXP_MAR, 150000, 'call'), // cheap: prices around the 0.005 tick step, capped fees
  spec('BTC', DAILY, 100000, 'call'),
  spec('ETH', EXP_MAR, 3000, 'put'),
  spec('ETH', EXP_MAR, 4000, 'call'),
  spec('ETH', EXP_MAR, 4000, 'put'),
  spec('ETH', EXP_MAR, 6000, 'call'),
];
export const CURRENCIES: CurrencyCode[] = ['BTC', 'ETH'];
export const TIFS: TimeInForce[] = ['good_til_cancelled', 'good_til_day', 'immediate_or_cancel', 'fill_or_kill'];
