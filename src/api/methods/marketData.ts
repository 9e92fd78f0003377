// The Market data group (API.md 3.5) beyond the basics in market.ts, and the test clock (API.md 8).
// The methods live by what they read: books, tickers and summaries in bookMethods.ts (the reads
// themselves, cached per engine seq, in bookReads.ts), public trades in tradeHistory.ts, instrument
// listing, expirations and delivery prices in instrumentListing.ts, mark history, trade volumes and
// candles in marketHistory.ts.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Timestamp } from './common.ts';
import { allOrderBooksMethod, bookSummaryPerCurrencyMethod, bookSummaryPerInstrumentMethod, contractSizeMethod, orderBookByInstrumentIdMethod, simplifiedOrderBookMethod, tickerMethod } from './bookMethods.ts';
import { allInstrumentsMethod, deliveryPricesMethod, expirationTimestampsMethod } from './instrumentListing.ts';
import { markPriceHistoryMethod, tradeVolumesMethod, tradingviewChartDataMethod } from './marketHistory.ts';
import { lastTradesByCurrencyAndTimeMethod, lastTradesByCurrencyMethod, lastTradesByInstrumentAndTimeMethod, lastTradesByInstrumentMethod } from './tradeHistory.ts';

// the channels and market.ts read books through here
export { orderBookOf, orderBookRead, quoteOf, tickerOf } from './bookReads.ts';

export const setTestTimeMethod = defineMethod({
  name: 'private/set_test_time',
  scope: 'admin',
  params: Type.Object({ timestamp: Timestamp }),
  async handler(ctx, p) {
    const s = ctx.services;
    // the test clock does not exist unless STRIKEBOOK_TEST_CLOCK=1 (never in production)
    if (!s.testClock) throw reject(ERR.METHOD_NOT_FOUND);
    if (!s.testClock.set(p.timestamp)) throw reject(ERR.INVALID_ARGUMENTS, 'time_goes_backwards', 'timestamp');
    // what became due at the new time happens before the reply: expiries settle, orders expire,
    // new series are listed
    await s.marketTick?.();
    return s.seq.read(() => ({ timestamp: s.clock.now() }));
  },
});

// In the order the docs page and the OpenAPI document list them.
export const marketDataMethods = [
  tickerMethod,
  allInstrumentsMethod,
  allOrderBooksMethod,
  bookSummaryPerCurrencyMethod,
  bookSummaryPerInstrumentMethod,
  contractSizeMethod,
  expirationTimestampsMethod,
  orderBookByInstrumentIdMethod,
  simplifiedOrderBookMethod,
  lastTradesByInstrumentMethod,
  lastTradesByInstrumentAndTimeMethod,
  lastTradesByCurrencyMethod,
  lastTradesByCurrencyAndTimeMethod,
  markPriceHistoryMethod,
  tradeVolumesMethod,
  tradingviewChartDataMethod,
  deliveryPricesMethod,
  setTestTimeMethod,
];
