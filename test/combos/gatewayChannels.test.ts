// The combo channels (issue 34; docs/api-notes.md "Combo market data"), user.combo_trades.* too, are the leader's: a stream
// gateway's events carry no combo book or combo trade, so it leaves them out of a subscribe's answer
// (as any channel it does not serve) rather than accepting a channel that would stay silent; the
// option channels of the same request subscribe. On the engine the same request subscribes all.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, twinPut } from '../helpers/market.ts';
import { adminToken, ok, userToken } from '../helpers/server.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';
import { WsClient } from '../helpers/ws.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let combo: string;
  let option: string;
  before(async () => {
    tg = await startTarget(spec.kind);
    const url = tg.srv.url;
    const user = await userToken(url, await adminToken(url), 'combo-gw@example.com', { currency: 'BTC', amount: 10 });
    const call = await atmCall(url);
    const put = await twinPut(url, call);
    option = call.name;
    combo = (await ok(url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, user)).id;
  });
  after(() => tg.stop());

  test(spec.kind === 'engine' ? 'the engine subscribes the combo channels' : 'a gateway leaves the combo channels out and subscribes the rest', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      const comboChannels = [`book.${combo}.100ms`, `ticker.${combo}.100ms`, `trades.${combo}.100ms`, 'trades.option_combo.BTC.100ms'];
      const optionChannels = [`book.${option}.100ms`, `trades.${option}.100ms`];
      const answer = await ws.ok('public/subscribe', { channels: [...comboChannels, ...optionChannels] });
      assert.deepEqual(answer, spec.kind === 'engine' ? [...comboChannels, ...optionChannels] : optionChannels);
    } finally {
      await ws.close();
    }
  });

  test(spec.kind === 'engine' ? 'the engine subscribes the private combo trades channels' : 'a gateway leaves the private combo trades channels out', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      await ws.auth('combo-gw@example.com');
      const comboChannels = [`user.combo_trades.${combo}.raw`, 'user.combo_trades.option_combo.BTC.100ms'];
      const optionChannels = [`user.trades.${option}.raw`];
      const answer = await ws.ok('private/subscribe', { channels: [...comboChannels, ...optionChannels] });
      assert.deepEqual(answer, spec.kind === 'engine' ? [...comboChannels, ...optionChannels] : optionChannels);
    } finally {
      await ws.close();
    }
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
