// What issue 33's traders expected and did not find, in a real browser on the pinned test clock:
// the chain centred on the money with in-the-money halves shaded and the quotes' implied vols, the
// instrument page's own position and orders, the portfolio's greeks, Close asking first, and a
// light theme beside the dark one (screenshots of every screen: screens.test.ts). The browser helper
// fails the file on any page error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, signedIn, until } from '../helpers/browser.ts';
import { nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, login, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const TRADER = { email: 'trader@example.com', password: 'user-password-1' };
const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };

describe('the web app features of issue 33', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let traderTok: string;
  let makerTok: string;
  let m: Market;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer();
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    const adminTok = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, adminTok);
    traderTok = await userToken(srv.url, adminTok, TRADER.email, { currency: 'BTC', amount: 10 });
    makerTok = await userToken(srv.url, adminTok, 'maker@example.com', { currency: 'BTC', amount: 100 });
    m = await nearDatedAtmCall(srv.url);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 2, price: m.prices[2] }, makerTok);
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 3, price: m.prices[m.prices.length - 3] }, makerTok);
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  it('opens the chain on the money, shades the in-the-money halves and shows the bid and ask IV', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/chain/BTC?expiry=${m.inst.expiration_timestamp}`);
    await page.locator('table.chain[data-complete=true]').waitFor();
    const atm = page.locator('tr.atm');
    await until('the money in view', async () => {
      const box = await atm.boundingBox();
      return box !== null && box.y > 0 && box.y + box.height < 900;
    }, 5000);
    assert.equal(await atm.getAttribute('data-strike'), String(m.inst.strike));
    // calls below the index and puts above it are in the money
    const below = page.locator('table.chain tr.itm-call').first();
    const above = page.locator('table.chain tr.itm-put').first();
    assert.ok(Number(await below.getAttribute('data-strike')) < 100000);
    assert.ok(Number(await above.getAttribute('data-strike')) > 100000);
    const bg = (sel: string) => page.locator(sel).evaluate((el) => getComputedStyle(el).backgroundColor);
    const otmCallCell = `table.chain tr.itm-put td[data-cell=mark] >> nth=0`;
    assert.notEqual(await bg(`table.chain tr.itm-call td[data-cell=mark] >> nth=0`), await bg(otmCallCell), 'the ITM call cell is shaded');
    // the quotes' implied vols, as the API gives them
    const t = await ok(srv.url, 'public/ticker', { instrument_name: m.name });
    const row = page.locator(`tr[data-call="${m.name}"]`);
    assert.equal(await row.locator('td[data-cell=bid_iv]').first().textContent(), fmt.iv(t.bid_iv));
    assert.equal(await row.locator('td[data-cell=ask_iv]').first().textContent(), fmt.iv(t.ask_iv));
    await row.locator('td[data-cell=ask]').first().hover();
    assert.match(String(await row.locator('td[data-cell=ask]').first().getAttribute('title')), /^Buy .* at 0\.\d{4} \(\$[\d,]+\.\d\d\)$/);
    await ctx.close();
  });

  for (const viewport of [{ width: 1400, height: 900 }, { width: 390, height: 844 }]) {
    it(`opens an instrument from the chain by a labelled link per side, the bid and ask still open the ticket (${viewport.width}x${viewport.height})`, opt, async () => {
      const ctx = await signedIn(browser, srv.url, TRADER, viewport);
      const page = await ctx.newPage();
      await page.goto(`${srv.url}/chain/BTC?expiry=${m.inst.expiration_timestamp}`);
      await page.locator('table.chain[data-complete=true]').waitFor();
      const row = page.locator(`tr[data-call="${m.name}"]`);
      const put = String(await row.getAttribute('data-put'));
      for (const name of [m.name, put]) {
        const link = page.getByRole('link', { name: `Open ${name}`, exact: true });
        assert.equal(await link.textContent(), 'Open', 'a word, not a glyph');
        const box = (await link.boundingBox())!;
        assert.ok(box.width >= 24 && box.height >= 14 && box.x >= 0 && box.x + box.width <= viewport.width, `a target one can hit: ${JSON.stringify(box)}`);
      }
      // the bid opens the ticket on the series, not the instrument page
      await row.locator('td[data-cell=bid]').first().click();
      const ticket = page.getByRole('form', { name: 'Order ticket' });
      await ticket.getByRole('button', { name: 'Sell', exact: true, pressed: true }).waitFor({ timeout: 3000 });
      assert.match(page.url(), /\/chain\/BTC/);
      await page.keyboard.press('Escape');
      await page.getByRole('link', { name: `Open ${put}`, exact: true }).click();
      await page.waitForURL(`${srv.url}/instrument/${put}`);
      await page.locator('table.ladder').first().waitFor();
      await ctx.close();
    });
  }

  it("shows the instrument's own position and open orders, and cancels from there", opt, async () => {
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.5, type: 'market' }, traderTok);
    const resting = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[1] }, traderTok);
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/instrument/${m.name}`);
    const own = page.getByRole('region', { name: 'Your position and orders' });
    await own.locator('[data-own-position="0.5"]').waitFor();
    const pos = await ok(srv.url, 'private/get_position', { instrument_name: m.name }, traderTok);
    assert.match(String(await own.textContent()), new RegExp(fmt.price(pos.average_price).replace('.', '\\.')));
    await own.getByRole('button', { name: `Cancel order ${resting.order.order_id}` }).click();
    await own.getByText('No open orders here.').waitFor();
    assert.equal((await ok(srv.url, 'private/get_order_state', { order_id: resting.order.order_id }, traderTok)).order_state, 'cancelled');
    await ctx.close();
  });

  it("sums the portfolio's greeks and asks before Close sends a market order", opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/portfolio`);
    const totals = page.getByRole('table', { name: 'Portfolio greeks' });
    await totals.waitFor();
    const positions = await ok(srv.url, 'private/get_positions', { currency: 'BTC' }, traderTok);
    const delta = positions.reduce((a: number, p: any) => a + p.delta, 0);
    assert.equal(await totals.locator('tr[data-currency=BTC] td[data-field=delta]').textContent(), fmt.greek(delta, 4));
    await page.getByRole('button', { name: `Close ${m.name}` }).click();
    const confirm = page.getByRole('group', { name: `Confirm closing ${m.name}` });
    await confirm.waitFor();
    assert.equal((await ok(srv.url, 'private/get_position', { instrument_name: m.name }, traderTok)).size, 0.5, 'nothing sent before the confirmation');
    await confirm.getByRole('button', { name: 'Keep' }).click();
    assert.equal(await confirm.count(), 0);
    await page.getByRole('button', { name: `Close ${m.name}` }).click();
    await confirm.getByRole('button', { name: 'Confirm close' }).click();
    await until('the position closed', async () => (await ok(srv.url, 'private/get_position', { instrument_name: m.name }, traderTok)).size === 0, 5000);
    await ctx.close();
  });

  it('notifies a fill wherever the trader is, and turns the ticket with B and S', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/instrument/${m.name}`);
    await page.locator('table.ladder tr[data-side=ask]').first().waitFor();
    const ticket = page.getByRole('form', { name: 'Order ticket' });
    await page.locator('h1').click(); // focus out of any field
    await page.keyboard.press('s');
    await ticket.getByRole('button', { name: 'Sell', exact: true, pressed: true }).waitFor({ timeout: 3000 });
    assert.equal(await page.evaluate(() => document.activeElement?.closest('label')?.textContent?.startsWith('Amount')), true, 'the cursor is in the amount');
    await page.locator('h1').click();
    await page.keyboard.press('b');
    await ticket.getByRole('button', { name: 'Buy', exact: true, pressed: true }).waitFor({ timeout: 3000 });
    // typing a b in a field is typing, not a shortcut
    await ticket.getByLabel('Label').fill('');
    await ticket.getByLabel('Label').press('s');
    await ticket.getByRole('button', { name: 'Buy', exact: true, pressed: true }).waitFor({ timeout: 1000 });
    // the trader's resting buy is hit by the maker: a notification names the fill
    await page.getByRole('link', { name: 'Portfolio' }).click();
    await page.getByRole('heading', { name: 'Portfolio', exact: true }).waitFor();
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[4] }, traderTok);
    const hit = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[4] }, makerTok);
    const [trade] = hit.trades;
    const toast = page.getByRole('status', { name: 'Notifications' }).locator(`[data-trade-id="${trade.trade_id}"]`);
    await toast.waitFor({ timeout: 5000 });
    assert.equal(await toast.textContent(), `Filled: buy 0.1 ${m.name} at ${fmt.price(m.prices[4])} (maker)`);
    await ctx.close();
  });

  it('switches to a light theme and keeps it after a reload', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/portfolio`);
    await page.getByRole('heading', { name: 'Portfolio', exact: true }).waitFor();
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const dark = await bg();
    await page.getByRole('button', { name: 'Light theme' }).click();
    assert.notEqual(await bg(), dark);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
    await page.reload();
    await page.getByRole('heading', { name: 'Portfolio', exact: true }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
    assert.equal(await page.getByRole('button', { name: 'Light theme' }).getAttribute('aria-pressed'), 'true');
    await ctx.close();
  });
  // the screenshots of every screen in both themes at both widths: test/web/screens.test.ts
});
