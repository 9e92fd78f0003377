// Issue 33: a screenshot of every screen in both themes and at both widths (1280x800 and a 390x844
// phone), with something on each to show: sign-in, sign-up, the chain, the order ticket over it, the
// instrument page (ladder, depth chart, chart, own position and orders, ticket), the portfolio (with
// its P&L chart, account log and settlements), API keys and the admin console (users, health,
// limits, negative balances, invites). Each is checked for horizontal scroll, and at 390 px for a
// number wider than its cell. The PNGs go to test-artifacts/web/screens-*; docs/images/ keeps a copy
// (docs/web.md lists them), written when missing or with UPDATE_DOCS_IMAGES=1, not on every run.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, layoutFaults, screenshot, signedIn } from '../helpers/browser.ts';
import * as fmt from '../../web/src/lib/format.ts';
import { nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, login, ok, ROOT, startServer, userToken, type TestServer } from '../helpers/server.ts';

const TRADER = { email: 'trader@example.com', password: 'user-password-1' };
const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };
const DOCS_IMAGES = path.join(ROOT, 'docs/images');
const WIDTHS = [
  [1280, 800],
  [390, 844],
] as const;

interface Screen {
  name: string;
  who: typeof TRADER | null;
  path: () => string;
  ready: string;
  then?: (page: Page) => Promise<void>;
}

describe('every screen in both themes and at both widths (issue 33)', { timeout: 600_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let m: Market;
  let invite: string;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer();
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    const adminTok = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, adminTok);
    const traderTok = await userToken(srv.url, adminTok, TRADER.email, { currency: 'BTC', amount: 10 });
    const makerTok = await userToken(srv.url, adminTok, 'maker@example.com', { currency: 'BTC', amount: 100 });
    m = await nearDatedAtmCall(srv.url);
    // a market on the near ATM call, a position and a resting order of the trader's, a key, an invite
    for (const k of [1, 2, 3]) await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: k, price: m.prices[k] }, makerTok);
    for (const k of [1, 2, 3]) await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: k, price: m.prices[m.prices.length - 1 - k] }, makerTok);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.3, type: 'market' }, traderTok);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, traderTok);
    await ok(srv.url, 'private/create_api_key', { max_scope: 'account:read trade:read_write' }, traderTok);
    invite = (await ok(srv.url, 'private/generate_invite_code', { max_uses: 5, note: 'desk' }, adminTok)).code;
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  const screens: Screen[] = [
    { name: 'signin', who: null, path: () => '/signin', ready: 'form' },
    { name: 'signup', who: null, path: () => `/signup?code=${invite}`, ready: 'form' },
    {
      name: 'chain',
      who: TRADER,
      path: () => `/chain/BTC?expiry=${m.inst.expiration_timestamp}`,
      ready: 'table.chain[data-complete=true]',
      then: async (page) => {
        if (page.viewportSize()!.width < 720) return;
        // the last price and the 24 h volume of a traded series, as the ticker has them
        const t = await ok(srv.url, 'public/ticker', { instrument_name: m.name });
        const row = page.locator(`tr[data-call="${m.name}"]`);
        assert.equal(await row.locator('td[data-cell=last]').first().textContent(), fmt.price(t.last_price));
        // open interest and volume from 1440 px (at 1280 their digits were cut)
        if (page.viewportSize()!.width >= 1440) assert.equal(await row.locator('td[data-cell=volume]').first().textContent(), fmt.amount(t.stats.volume));
        else assert.equal(await row.locator('td[data-cell=volume]').count(), 0);
      },
    },
    {
      name: 'ticket',
      who: TRADER,
      path: () => `/chain/BTC?expiry=${m.inst.expiration_timestamp}`,
      ready: 'table.chain[data-complete=true]',
      then: async (page) => {
        await page.locator(`tr[data-call="${m.name}"] td[data-cell=ask]`).first().click();
        await page.getByRole('form', { name: 'Order ticket' }).getByLabel(/^Amount/).fill('0.1');
      },
    },
    {
      name: 'instrument',
      who: TRADER,
      path: () => `/instrument/${m.name}`,
      ready: 'figure.depth',
      then: async (page) => {
        await page.locator('table.ladder tr[data-side=ask]').first().waitFor();
        // the trades with their times (issue 33: "trade times"), in UTC
        const { trades } = await ok(srv.url, 'public/get_last_trades_by_instrument', { instrument_name: m.name, count: 1 });
        const first = page.getByRole('table', { name: 'Trades' }).locator('tbody tr').first().locator('td').first();
        assert.equal(await first.textContent(), new Date(trades[0].timestamp).toISOString().slice(11, 19));
      },
    },
    { name: 'portfolio', who: TRADER, path: () => '/portfolio', ready: 'table[aria-label="Account log"]' },
    { name: 'keys', who: TRADER, path: () => '/keys', ready: 'table[aria-label="API keys"]' },
    { name: 'admin', who: ADMIN, path: () => '/admin', ready: 'dl[aria-label=Health]', then: (page) => page.locator('table[aria-label="Users"]').waitFor() },
  ];

  for (const theme of ['dark', 'light'] as const) {
    for (const [width, height] of WIDTHS) {
      it(`shows every screen in the ${theme} theme at ${width}x${height}`, opt, async () => {
        const problems: string[] = [];
        for (const s of screens) {
          const ctx: BrowserContext = s.who ? await signedIn(browser, srv.url, s.who, { width, height }) : await browser.newContext({ viewport: { width, height } });
          await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
          const page = await ctx.newPage();
          await page.goto(`${srv.url}${s.path()}`);
          await page.locator(s.ready).first().waitFor({ timeout: 20_000 });
          await s.then?.(page);
          await page.waitForTimeout(400);
          const name = `screens-${theme}-${width}-${s.name}`;
          const file = await screenshot(page, name);
          const docs = path.join(DOCS_IMAGES, `${name}.png`);
          if (!existsSync(docs) || process.env.UPDATE_DOCS_IMAGES === '1') {
            mkdirSync(DOCS_IMAGES, { recursive: true });
            copyFileSync(file, docs);
          }
          assert.equal(await page.evaluate(() => document.documentElement.dataset.theme ?? 'dark'), theme);
          const f = await layoutFaults(page);
          if (f.pageWidth > f.viewport) problems.push(`${s.name}: the page is ${f.pageWidth} px wide in ${f.viewport}`);
          if (width < 720 && f.clipped.length > 0) problems.push(`${s.name}: clipped ${JSON.stringify(f.clipped.slice(0, 8))}`);
          await ctx.close();
        }
        assert.deepEqual(problems, []);
      });
    }
  }
});
