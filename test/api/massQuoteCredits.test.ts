// Cost follows work (issue 29 item 5): mass_quote pays QUOTE_COST per quote side it carries from a
// quotes pool of its own (src/app/credits.ts QUOTE_TIERS), beside its one matching-engine request.
// A flood of full-size mass quotes by one user is refused with 10028 once the sides it sent use up
// that pool, exactly where its size says; another user's calls, mass quotes included, are not
// touched. The exchange clock stands still (set_test_time), so no credit refills unless the test
// moves it, and every count is exact.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QUOTE_COST, QUOTE_TIERS } from '../../src/app/credits.ts';
import { ok, rpc, adminToken, startServer, userToken, type TestServer } from '../helpers/server.ts';

const GROUP = 'flood';

describe('mass_quote credits', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let now: number;
  let quotes: Array<Record<string, unknown>>;
  const advance = async (ms: number) => {
    now += ms;
    await ok(url, 'private/set_test_time', { timestamp: now }, admin);
  };

  before(async () => {
    server = await startServer({ STRIKEBOOK_RATE_LIMITS: '1' });
    url = server.url;
    admin = await adminToken(url);
    const adminId = server.app.services.ex.usersByEmail.get('admin@example.com')!.id;
    await ok(url, 'private/set_rate_limits', { user_id: adminId, non_matching_max_credits: 1e9, non_matching_refill_per_sec: 1e9 }, admin);
    now = (await ok(url, 'public/get_time', {}, admin)) + 1000;
    await ok(url, 'private/set_test_time', { timestamp: now }, admin);
    // a full-size mass quote: as many instruments as the schema allows, both sides of each
    const names = ((await rpc(url, 'public/get_instruments', { currency: 'BTC' }, admin)).body.result as Array<{ instrument_name: string }>).map((i) => i.instrument_name);
    quotes = names.slice(0, 100).map((n) => ({ instrument_name: n, bid: { price: 0.0005, amount: 0.1 }, ask: { price: 1, amount: 0.1 } }));
  });
  after(() => server.stop());

  it('refuses a flood of full-size mass quotes with 10028 after the budget their size implies, and not another user', async () => {
    const flooder = await userToken(url, admin, 'flooder@example.com', { currency: 'BTC', amount: 100 });
    const victim = await userToken(url, admin, 'victim@example.com', { currency: 'BTC', amount: 100 });
    for (const t of [flooder, victim]) await ok(url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: GROUP, interval: 1, frozen_time: 0, quantity_limit: 1000 }, t);
    const sides = 2 * quotes.length;
    // the default tier (4): its quotes pool holds this many calls of this size
    const fits = Math.floor(QUOTE_TIERS[4].maxCredits / (sides * QUOTE_COST));
    assert.ok(fits >= 1, 'a full-size call fits the default burst');
    const flood = async (token: string, calls: number) => {
      let accepted = 0;
      const refusals: number[] = [];
      for (let i = 0; i < calls; i++) {
        const r = await rpc(url, 'private/mass_quote', { quote_id: `q${i}`, mmp_group: GROUP, quotes }, token);
        if (r.body.error === undefined) accepted++;
        else refusals.push(r.body.error.code);
      }
      return { accepted, refusals };
    };
    const first = await flood(flooder, fits + 5);
    assert.equal(first.accepted, fits, JSON.stringify(first));
    assert.deepEqual(first.refusals, Array(5).fill(10028));

    // another user: its own pool, untouched by the flood; its other calls too
    const other = await flood(victim, fits);
    assert.equal(other.accepted, fits, JSON.stringify(other));
    assert.equal(typeof (await ok(url, 'public/get_time', {}, victim)), 'number');
    assert.ok((await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, victim)).length > 0);

    // the pool refills at the tier's rate, in sides: a second's worth admits what it pays for
    await advance(Math.ceil((1000 * sides * QUOTE_COST) / QUOTE_TIERS[4].refillPerSec));
    const later = await flood(flooder, 2);
    assert.equal(later.accepted, 1, JSON.stringify(later));
    assert.deepEqual(later.refusals, [10028]);
  });

  it('charges a small mass quote by its size: one side costs one QUOTE_COST', async () => {
    const small = await userToken(url, admin, 'small@example.com', { currency: 'BTC', amount: 100 });
    await ok(url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: GROUP, interval: 1, frozen_time: 0, quantity_limit: 1000 }, small);
    const id = server.app.services.ex.usersByEmail.get('small@example.com')!.id;
    const limits = await ok(url, 'private/get_rate_limits', { user_id: id }, admin);
    assert.equal(limits.mass_quotes.credits, QUOTE_TIERS[4].maxCredits);
    await ok(url, 'private/mass_quote', { quote_id: 's1', mmp_group: GROUP, quotes: [quotes[0]] }, small);
    await ok(url, 'private/mass_quote', { quote_id: 's2', mmp_group: GROUP, quotes: [{ instrument_name: quotes[1].instrument_name, bid: quotes[1].bid }] }, small);
    const after = await ok(url, 'private/get_rate_limits', { user_id: id }, admin);
    assert.equal(after.mass_quotes.credits, QUOTE_TIERS[4].maxCredits - 3 * QUOTE_COST);
  });
});
