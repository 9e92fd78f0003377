// Issue 33, round two, the instrument page: a depth chart (cumulative size by price, both sides,
// from the ladder) and the arrow keys in the ladder (↑ ↓ choose a level, Enter fills the ticket
// there as a click does, Esc lets it go). Screenshots of the page in both themes at both widths.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, screenshot, signedIn } from '../helpers/browser.ts';
import { nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, login, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const TRADER = { email: 'trader@example.com', password: 'user-password-1' };
const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };

describe('the instrument page, round two (issue 33)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let m: Market;
  // three levels a side: prices (coin) and sizes
  let bids: [number, number][];
  let asks: [number, number][];

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer();
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    const admin = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    await userToken(srv.url, admin, TRADER.email, { currency: 'BTC', amount: 10 });
    const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
    m = await nearDatedAtmCall(srv.url);
    const mid = Math.floor(m.prices.length / 2);
    bids = [[m.prices[mid - 1], 1], [m.prices[mid - 2], 2], [m.prices[mid - 4], 3]];
    asks = [[m.prices[mid + 1], 1.5], [m.prices[mid + 2], 0.5], [m.prices[mid + 3], 4]];
    for (const [price, amount] of bids) await ok(srv.url, 'private/buy', { instrument_name: m.name, amount, price }, maker);
    for (const [price, amount] of asks) await ok(srv.url, 'private/sell', { instrument_name: m.name, amount, price }, maker);
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  it('draws the depth chart from the book: cumulative size by price on each side', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/instrument/${m.name}`);
    const chart = page.getByRole('figure', { name: 'Depth chart' });
    await chart.waitFor();
    const cum = (side: [number, number][]) => {
      let c = 0;
      return side.map(([p, a]) => `${fmt.price(p)}:${fmt.amount((c += a))}`).join(' ');
    };
    assert.equal(await chart.getAttribute('data-bids'), cum(bids));
    assert.equal(await chart.getAttribute('data-asks'), cum(asks));
    // two filled areas, bids left of asks
    const box = async (cls: string) => (await chart.locator(`path.${cls}`).boundingBox())!;
    const [b, a] = [await box('bid'), await box('ask')];
    assert.ok(b.width > 0 && a.width > 0 && b.x + b.width <= a.x + 1, `bids ${JSON.stringify(b)} left of asks ${JSON.stringify(a)}`);
    await ctx.close();
  });

  it('moves through the ladder with the arrow keys and fills the ticket with Enter', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/instrument/${m.name}`);
    const ladder = page.getByRole('table', { name: 'Order book' });
    await ladder.locator('tr[data-side=ask]').first().waitFor();
    await ladder.focus();
    const selected = async () => {
      const row = ladder.locator('tr[aria-selected=true]');
      return (await row.count()) === 0 ? null : `${await row.getAttribute('data-side')} ${await row.getAttribute('data-price')}`;
    };
    await page.keyboard.press('ArrowUp');
    assert.equal(await selected(), `ask ${asks[0][0]}`, 'ArrowUp starts at the best ask');
    await page.keyboard.press('ArrowUp');
    assert.equal(await selected(), `ask ${asks[1][0]}`);
    for (let i = 0; i < 2; i++) await page.keyboard.press('ArrowDown');
    assert.equal(await selected(), `bid ${bids[0][0]}`, 'past the spread to the best bid');
    await page.keyboard.press('ArrowDown');
    assert.equal(await selected(), `bid ${bids[1][0]}`);
    await page.keyboard.press('Enter');
    const ticket = page.getByRole('form', { name: 'Order ticket' });
    await ticket.getByRole('button', { name: 'Sell', exact: true, pressed: true }).waitFor({ timeout: 3000 });
    assert.equal(await ticket.getByLabel(/^Price/).inputValue(), String(bids[1][0]), 'a sell at the chosen bid');
    // the keys do not leak into the page: it did not scroll, and Esc lets the level go
    await ladder.focus();
    await page.keyboard.press('Escape');
    assert.equal(await selected(), null);
    // ArrowDown from nothing starts at the best bid; the bottom holds
    await page.keyboard.press('ArrowDown');
    assert.equal(await selected(), `bid ${bids[0][0]}`);
    for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowDown');
    assert.equal(await selected(), `bid ${bids[2][0]}`);
    await ctx.close();
  });

  it('takes a screenshot of the page in both themes at both widths', opt, async () => {
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1400, 900], [390, 844]]) {
        const ctx = await signedIn(browser, srv.url, TRADER, { width, height });
        await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
        const page = await ctx.newPage();
        await page.goto(`${srv.url}/instrument/${m.name}`);
        await page.getByRole('figure', { name: 'Depth chart' }).waitFor();
        const ladder = page.getByRole('table', { name: 'Order book' });
        await ladder.focus();
        await page.keyboard.press('ArrowUp');
        await page.waitForTimeout(300);
        await screenshot(page, `round2-${theme}-${width}-instrument`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(wide <= 0, `instrument at ${width} px in ${theme}: ${wide} px of horizontal scroll`);
        await ctx.close();
      }
    }
  });
});
