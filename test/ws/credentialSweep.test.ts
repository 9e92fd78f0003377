// The credential sweep's bookkeeping (src/api/ws/credentialSweep.ts): the private subscriptions a
// connection holds are counted as they come and go, so the sweep skips sockets without any; a sweep
// drops exactly the private subscriptions whose token no longer authenticates their user.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Services } from '../../src/app/services.ts';
import { Subscriptions, sweepCredentials, type Subscription } from '../../src/api/ws/credentialSweep.ts';
import type { ChannelSpec } from '../../src/api/ws/channels.ts';

const PUBLIC: Subscription = { spec: { k: 'platform_state' } as unknown as ChannelSpec, userId: null, tokenHash: null };
const mine = (tokenHash: string, userId = 7): Subscription => ({ spec: { k: 'user.portfolio', currency: 'BTC' } as ChannelSpec, userId, tokenHash });

/** Just what tokenCaller reads: live tokens by hash, their users, no API keys. */
function services(live: Record<string, number>): Services {
  const access = new Map(Object.entries(live).map(([h, userId]) => [h, { userId, scope: 'trade:read_write account:read', expiresAt: Infinity, pair: '' }]));
  const users = new Map(Object.values(live).map((id) => [id, { id, role: 'user' }]));
  return { ex: { auth: { access }, users, apiKeys: { byId: new Map() }, disabledUsers: new Set() }, clock: { now: () => 0 } } as unknown as Services;
}

describe('the credential sweep', () => {
  it('counts private subscriptions through set, replace, delete and clear', () => {
    const subs = new Subscriptions();
    subs.set('platform_state', PUBLIC);
    assert.equal(subs.privateCount, 0);
    subs.set('user.portfolio.btc', mine('a'));
    subs.set('user.portfolio.eth', mine('a'));
    assert.equal(subs.privateCount, 2);
    subs.set('user.portfolio.eth', mine('b'));
    assert.equal(subs.privateCount, 2, 'a replaced subscription is counted once');
    subs.delete('user.portfolio.btc');
    subs.delete('nothing');
    assert.equal(subs.privateCount, 1);
    subs.clear();
    assert.equal(subs.privateCount, 0);
  });

  it('drops the private subscriptions of a revoked token only, and keeps public ones', () => {
    const c = { subs: new Subscriptions(), rotating: null };
    c.subs.set('platform_state', PUBLIC);
    c.subs.set('user.portfolio.btc', mine('revoked'));
    c.subs.set('user.portfolio.eth', mine('live'));
    c.subs.set('user.portfolio.usdc', mine('live', 8));
    const dropped: string[] = [];
    sweepCredentials(services({ live: 7 }), [c], (_c, channel) => dropped.push(channel));
    // a token of another user than the subscription's does not keep it either
    assert.deepEqual(dropped.sort(), ['user.portfolio.btc', 'user.portfolio.usdc']);
    assert.deepEqual([...c.subs.keys()].sort(), ['platform_state', 'user.portfolio.eth']);
    assert.equal(c.subs.privateCount, 1);
  });

  it('spares the subscriptions of the token the socket itself is refreshing, until its answer', () => {
    const c: { subs: Subscriptions; rotating: string | null } = { subs: new Subscriptions(), rotating: 'own' };
    c.subs.set('user.portfolio.btc', mine('own'));
    c.subs.set('user.portfolio.eth', mine('other'));
    const dropped: string[] = [];
    sweepCredentials(services({}), [c], (_c, channel) => dropped.push(channel));
    assert.deepEqual(dropped, ['user.portfolio.eth']);
    c.rotating = null;
    sweepCredentials(services({}), [c], (_c, channel) => dropped.push(channel));
    assert.deepEqual(dropped, ['user.portfolio.eth', 'user.portfolio.btc']);
  });
});
