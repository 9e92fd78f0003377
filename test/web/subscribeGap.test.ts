// A screen that shows a snapshot loaded over HTTP and kept fresh by change events has a gap: a change
// after its load but before its subscription is live is in neither, and an order placed then never
// showed beside its book (the portfolio healed on its first user.portfolio message). The browser's
// WebSocket is routed through the test here, which holds the screen's subscribe request back while
// an order is placed: once the subscribe answer comes, the screen must load again and show it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, screenshot, signedIn, until } from '../helpers/browser.ts';
import { nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, freePort, login, ok, startServer, tempDir, userToken, type TestServer } from '../helpers/server.ts';

const TRADER = { email: 'trader@example.com', password: 'user-password-1' };

/**
 * Routes the page's WebSocket through the test: a subscribe request naming one of `channels` is held
 * back (not sent to the server) until the returned release is called. `held` resolves once one was.
 */
async function holdSubscribe(page: Page, channels: string[]): Promise<{ held: Promise<void>; release: () => void }> {
  let release!: () => void;
  let heard!: () => void;
  const held = new Promise<void>((r) => (heard = r));
  const released = new Promise<void>((r) => (release = r));
  await page.routeWebSocket(/\/ws\/api\/v2$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((frame) => {
      const text = typeof frame === 'string' ? frame : frame.toString();
      const msg = JSON.parse(text) as { method?: string; params?: { channels?: string[] } };
      if (msg.method?.endsWith('/subscribe') && msg.params?.channels?.some((c) => channels.includes(c))) {
        heard();
        void released.then(() => server.send(text));
      } else {
        server.send(text);
      }
    });
    server.onMessage((frame) => ws.send(frame));
  });
  return { held, release };
}

describe('a change between a screen load and its subscription', { timeout: 180_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let adminTok: string;
  let traderTok: string;
  let m: Market;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer({ PORT: String(await freePort()) }, tempDir('strikebook-web-gap-'));
    await ok(srv.url, 'private/create_admin', { email: 'admin@example.com', password: 'admin-password-1', bootstrap_token: BOOTSTRAP });
    adminTok = await login(srv.url, 'admin@example.com', 'admin-password-1');
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, adminTok);
    traderTok = await userToken(srv.url, adminTok, TRADER.email, { currency: 'BTC', amount: 10 });
    m = await nearDatedAtmCall(srv.url);
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  const cases = [
    // both of the portfolio's channels are held (it reloads on either)
    { screen: 'open orders on the portfolio', path: () => '/portfolio', channels: () => ['user.changes.any.any.100ms', 'user.portfolio.any'], empty: 'No open orders.', shown: (id: string) => [`tr[data-order-id="${id}"]`] },
    // the panel of own orders, and the ladder's own marks (the chain's useOwn)
    {
      screen: 'the own orders beside the book',
      path: () => `/instrument/${m.name}`,
      channels: () => [`user.changes.${m.name}.100ms`, 'user.changes.option.BTC.100ms'],
      empty: 'No open orders here.',
      shown: (id: string) => [`tr[data-order-id="${id}"]`, `table.ladder tr.own[data-price="${m.prices[1]}"]`],
    },
  ];
  for (const c of cases) {
    it(`shows an order placed while the subscription of ${c.screen} was not yet live`, opt, async () => {
      const ctx = await signedIn(browser, srv.url, TRADER);
      const page = await ctx.newPage();
      const { held, release } = await holdSubscribe(page, c.channels());
      // the screen is opened from another one (an in-app link), on a socket set up already: its
      // first load does not wait for the socket, and no reconnect reloads it
      await page.goto(`${srv.url}/keys`);
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      await page.locator('[aria-label=Connection][data-state=open]').waitFor();
      await page.evaluate((to) => {
        history.pushState(null, '', to);
        dispatchEvent(new PopStateEvent('popstate'));
      }, c.path());
      await held;
      // the screen has loaded its snapshot (no orders) and its subscription is not live
      await page.getByText(c.empty, { exact: true }).waitFor();
      const order = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[1], label: 'gap' }, traderTok);
      const marks = c.shown(order.order.order_id as string).map((css) => page.locator(css));
      await page.waitForTimeout(300);
      for (const mark of marks) assert.equal(await mark.count(), 0, 'the order is in neither the snapshot nor an event yet');
      release();
      for (const [k, mark] of marks.entries()) await until(`the order on ${c.screen} (${c.shown('…')[k]})`, async () => (await mark.count()) === 1);
      await screenshot(page, `subscribe-gap-${c.path().split('/')[1]}`);
      await ok(srv.url, 'private/cancel', { order_id: order.order.order_id }, traderTok);
      await ctx.close();
    });
  }
});
