// Sample calls of the block RFQ methods for the Deribit conformance test (issue 34): each makes the
// RFQ or quote it answers about, so every answer is non-empty. `other` is marked a maker; `user` asks.
import { nearMark, type Market } from './market.ts';
import { ok } from './server.ts';

interface Fixture {
  url: string;
  admin: string;
  user: string;
  other: string;
  atm: Market;
  cheap: Market;
}
interface Call {
  params?: Record<string, unknown>;
  token?: string;
}

const legs = (f: Fixture) => [
  { instrument_name: f.atm.name, amount: 0.2, direction: 'buy' },
  { instrument_name: f.cheap.name, amount: 0.1, direction: 'sell' },
];
const priced = (f: Fixture) => [
  { instrument_name: f.atm.name, price: nearMark(f.atm), direction: 'buy' },
  { instrument_name: f.cheap.name, price: nearMark(f.cheap), direction: 'sell' },
];

/** A new RFQ of `user`, quoted by `other` (a maker) unless `quote` is false. */
async function rfq(f: Fixture, quote = true): Promise<{ id: number; quoteId: number }> {
  const otherId = (await ok(f.url, 'private/get_block_rfq_user_info', {}, f.other)).users[0].user_id;
  await ok(f.url, 'private/set_block_rfq_maker', { user_id: otherId, is_maker: true }, f.admin);
  const r = await ok(f.url, 'private/create_block_rfq', { legs: legs(f), label: 'conformance' }, f.user);
  if (!quote) return { id: r.block_rfq_id, quoteId: 0 };
  const now = await ok(f.url, 'public/get_time');
  const q = await ok(f.url, 'private/add_block_rfq_quote', { block_rfq_id: r.block_rfq_id, amount: 0.1, direction: 'sell', legs: priced(f), label: 'conf-q', expires_at: now + 3_600_000 }, f.other);
  return { id: r.block_rfq_id, quoteId: q.block_rfq_quote_id };
}

export const BLOCK_RFQ_SAMPLES: Record<string, (f: Fixture) => Promise<Call> | Call> = {
  'private/create_block_rfq': (f) => ({ params: { legs: legs(f), label: 'conformance', disclosed: true }, token: f.user }),
  'private/get_block_rfqs': async (f) => ({ params: { block_rfq_id: (await rfq(f)).id }, token: f.user }),
  'private/cancel_block_rfq': async (f) => ({ params: { block_rfq_id: (await rfq(f)).id }, token: f.user }),
  'private/add_block_rfq_quote': async (f) => {
    const now = await ok(f.url, 'public/get_time');
    return { params: { block_rfq_id: (await rfq(f, false)).id, amount: 0.1, direction: 'sell', legs: priced(f), expires_at: now + 3_600_000, label: 'x' }, token: f.other };
  },
  'private/edit_block_rfq_quote': async (f) => ({ params: { block_rfq_quote_id: (await rfq(f)).quoteId, amount: 0.1, legs: priced(f) }, token: f.other }),
  'private/cancel_block_rfq_quote': async (f) => ({ params: { block_rfq_quote_id: (await rfq(f)).quoteId }, token: f.other }),
  'private/cancel_all_block_rfq_quotes': async (f) => ({ params: { block_rfq_id: (await rfq(f)).id }, token: f.other }),
  'private/get_block_rfq_quotes': async (f) => ({ params: { block_rfq_id: (await rfq(f)).id }, token: f.other }),
  'private/accept_block_rfq': async (f) => ({ params: { block_rfq_id: (await rfq(f)).id, price: 10, amount: 0.1, direction: 'buy', legs: priced(f), time_in_force: 'fill_or_kill' }, token: f.user }),
  'private/cancel_block_rfq_trigger': async (f) => {
    const { id } = await rfq(f, false);
    await ok(f.url, 'private/accept_block_rfq', { block_rfq_id: id, price: -10, amount: 0.1, direction: 'buy', legs: priced(f), time_in_force: 'good_til_cancelled' }, f.user);
    return { params: { block_rfq_id: id }, token: f.user };
  },
  'private/get_block_rfq_makers': (f) => ({ token: f.user }),
  'private/get_block_rfq_user_info': (f) => ({ token: f.user }),
  'public/get_block_rfq_trades': () => ({ params: { currency: 'BTC' } }),
};
