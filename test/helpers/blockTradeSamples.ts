// Sample calls of the block-trade methods (src/api/methods/blockTrades.ts) for the Deribit
// conformance test: the fixture's user signs as maker (buying the ATM call at its mark), the other
// account executes as taker; amounts at the default block minimum (25 BTC).
import { nearMark, type Market } from './market.ts';
import { ok } from './server.ts';

interface BlockFixture {
  url: string;
  user: string;
  other: string;
  atm: Market;
}

interface Call {
  params?: Record<string, unknown>;
  token?: string;
}

let nonces = 0;

/** An agreement and the maker's (the user's) signature over it. */
async function signed(f: BlockFixture): Promise<Record<string, unknown>> {
  const deal = { timestamp: await ok(f.url, 'public/get_time'), nonce: `conformance-${++nonces}`, trades: [{ instrument_name: f.atm.name, direction: 'buy', price: nearMark(f.atm), amount: 25 }] };
  const { signature } = await ok(f.url, 'private/verify_block_trade', { ...deal, role: 'maker' }, f.user);
  return { ...deal, role: 'taker', counterparty_signature: signature };
}

/** An executed block trade's id. */
async function executed(f: BlockFixture): Promise<string> {
  return (await ok(f.url, 'private/execute_block_trade', await signed(f), f.other)).id;
}

/** A request waiting for the user's (maker's) approval: its answer's params. */
async function waiting(f: BlockFixture): Promise<Record<string, unknown>> {
  await ok(f.url, 'private/set_block_trade_approval', { enabled: true }, f.user);
  const deal = await signed(f);
  const held = await ok(f.url, 'private/execute_block_trade', deal, f.other);
  if (held.state !== 'waiting_for_approval') throw new Error(`not held: ${JSON.stringify(held)}`);
  await ok(f.url, 'private/set_block_trade_approval', { enabled: false }, f.user);
  return { timestamp: deal.timestamp, nonce: deal.nonce, role: 'maker' };
}

export const BLOCK_TRADE_SAMPLES: Record<string, (f: BlockFixture) => Promise<Call> | Call> = {
  'private/verify_block_trade': async (f) => ({
    params: { timestamp: await ok(f.url, 'public/get_time'), nonce: 'conformance-verify', role: 'maker', trades: [{ instrument_name: f.atm.name, direction: 'buy', price: nearMark(f.atm), amount: 25 }] },
    token: f.user,
  }),
  'private/simulate_block_trade': (f) => ({ params: { role: 'taker', trades: [{ instrument_name: f.atm.name, direction: 'buy', price: nearMark(f.atm), amount: 25 }] }, token: f.other }),
  'private/execute_block_trade': async (f) => ({ params: await signed(f), token: f.other }),
  'private/invalidate_block_trade_signature': async (f) => ({ params: { signature: (await signed(f)).counterparty_signature }, token: f.user }),
  'private/get_block_trade': async (f) => ({ params: { id: await executed(f) }, token: f.user }),
  'private/get_block_trades': (f) => ({ params: { currency: 'BTC', count: 5 }, token: f.other }),
  'private/approve_block_trade': async (f) => ({ params: await waiting(f), token: f.user }),
  'private/reject_block_trade': async (f) => ({ params: await waiting(f), token: f.user }),
  'private/get_block_trade_requests': async (f) => (await waiting(f), { token: f.user }),
};
