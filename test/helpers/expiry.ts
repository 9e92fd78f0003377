// A series taken through expiry with the test clock (STRIKEBOOK_TEST_CLOCK=1, manual index): one
// ITM call traded between two users, the index set at known times inside the TWAP window, and the
// settlement worked out by hand (API.md 7.3) for the tests to compare with.
import { market, nearMark } from './market.ts';
import { ok, userToken } from './server.ts';

const MIN = 60_000;

export interface ExpiryScenario {
  expiry: number;
  instrument: string;
  buyer: string;
  seller: string;
  buyerEmail: string;
  sellerEmail: string;
  /** The index prints inside the window: 100000 from E-40m, 104000 from E-20m, 99500 from E-10m. */
  deliveryPrice: number;
  /** Balance changes at settlement in satoshi: buyer (payout - fee), seller (-liability), fee. */
  buyerDelta: number;
  sellerDelta: number;
  deliveryFee: number;
  expiriesBefore: number[];
}

/** Trades 1 BTC of an ITM call expiring at the first expiry at least 45 minutes away and sets the index inside its window. */
export async function prepareExpiry(url: string, admin: string): Promise<ExpiryScenario> {
  const buyerEmail = 'buyer@example.com';
  const sellerEmail = 'seller@example.com';
  const buyer = await userToken(url, admin, buyerEmail, { currency: 'BTC', amount: 10 });
  const seller = await userToken(url, admin, sellerEmail, { currency: 'BTC', amount: 10 });
  const now = await ok(url, 'public/get_time');
  const listedNow: number[] = (await ok(url, 'public/get_expiration_timestamps', { currency: 'BTC' })).BTC;
  // the first expiry far enough out for the TWAP window; when the wall clock is within 45 minutes
  // of an earlier one, that one passes (and settles, empty) while the clock is moved below
  const expiry = listedNow.find((e) => e - 45 * MIN > now)!;
  const all = await ok(url, 'public/get_instruments', { currency: 'BTC', kind: 'option' });
  const inst = all.find((i: any) => i.expiration_timestamp === expiry && i.option_type === 'call' && i.strike === 90_000);
  const m = await market(url, inst);
  const price = nearMark(m);
  await ok(url, 'private/sell', { instrument_name: inst.instrument_name, amount: 1, price }, seller);
  await ok(url, 'private/buy', { instrument_name: inst.instrument_name, amount: 1, price }, buyer);

  for (const [offset, index] of [[40, 100_000], [20, 104_000], [10, 99_500]]) {
    await ok(url, 'private/set_test_time', { timestamp: expiry - offset * MIN }, admin);
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: index }, admin);
  }
  // what is listed just before the expiry: series listed from here on replace the expired one
  const expiriesBefore: number[] = (await ok(url, 'public/get_expiration_timestamps', { currency: 'BTC' })).BTC;
  // by hand: ten minutes at each level, rounded to the cent
  const S = Math.round(((100_000 + 104_000 + 99_500) / 3) * 100) / 100;
  const payoff = 1 - 90_000 / S;
  const payout = Math.floor(1e8 * payoff); // payouts round down
  const fee = Math.ceil(1e8 * Math.min(0.00015, 0.125 * payoff)); // fees round up
  return {
    expiry,
    instrument: inst.instrument_name,
    buyer,
    seller,
    buyerEmail,
    sellerEmail,
    deliveryPrice: S,
    buyerDelta: payout - fee,
    sellerDelta: -Math.ceil(1e8 * payoff), // liabilities round up
    deliveryFee: fee,
    expiriesBefore,
  };
}
