// The web app's HTTP calls (web/src/lib/rpc.ts) wait as told and try again when the credit limits
// refuse them (10028 with retry_after_ms), so a burst of page loads ends complete, not empty.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RpcError, call } from '../../web/src/lib/rpc.ts';

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** A fetch that answers the given envelopes in turn, counting the calls. */
function answers(...envelopes: object[]): { calls: () => number } {
  let n = 0;
  globalThis.fetch = (async () => new Response(JSON.stringify(envelopes[Math.min(n++, envelopes.length - 1)]), { status: 200 })) as typeof fetch;
  return { calls: () => n };
}

const limited = { jsonrpc: '2.0', error: { code: 10028, message: 'too_many_requests', data: { retry_after_ms: 5 } } };

describe('web rpc calls under the rate limit', () => {
  it('retries a 10028 after the wait it names, and returns the result', async () => {
    const f = answers(limited, limited, { jsonrpc: '2.0', result: [1, 2] });
    assert.deepEqual(await call('public/get_instruments', { currency: 'BTC' }), [1, 2]);
    assert.equal(f.calls(), 3);
  });

  it('gives up after five retries with the API error, and never retries other errors', async () => {
    const f = answers(limited);
    await assert.rejects(call('public/get_time'), (e: unknown) => e instanceof RpcError && e.code === 10028);
    assert.equal(f.calls(), 6);
    const g = answers({ jsonrpc: '2.0', error: { code: 10009, message: 'not_enough_funds' } });
    await assert.rejects(call('private/buy', {}), (e: unknown) => e instanceof RpcError && e.code === 10009);
    assert.equal(g.calls(), 1);
  });
});
