// Issue 33, round two, the portfolio: P&L over time (a chart drawn from the account log), the
// account log itself (private/get_transaction_log) and the settlement history
// (private/get_settlement_history_by_currency). A trader buys an in-the-money call that the test
// clock then takes through its expiry (test/helpers/expiry.ts), so the log holds a deposit, a
// trade and a delivery. Screenshots of the portfolio in both themes at both widths.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { pnlSeries } from '../../web/src/lib/pnl.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, screenshot, signedIn, until } from '../helpers/browser.ts';
import { prepareExpiry, type ExpiryScenario } from '../helpers/expiry.ts';
import { BOOTSTRAP, login, ok, startServer, type TestServer } from '../helpers/server.ts';

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };

describe('pnlSeries', () => {
  it('sums every change but money moved in or out, and ends with equity less that money', () => {
    const e = (id: number, timestamp: number, type: string, change: number, balance: number) => ({ id, timestamp, type, currency: 'BTC', change, balance, commission: 0, instrument_name: null });
    // newest first, as the API lists them
    const log = [e(4, 40, 'delivery', 0.1, 10.05), e(3, 30, 'trade', -0.05, 9.95), e(2, 20, 'withdrawal', -1, 10), e(1, 10, 'deposit', 11, 11)];
    assert.deepEqual(pnlSeries(log, { t: 50, equity: 10.07 }), [
      { t: 10, pnl: 0 },
      { t: 20, pnl: 0 },
      { t: 30, pnl: -0.05 },
      { t: 40, pnl: 0.05 },
      { t: 50, pnl: 0.07 },
    ]);
  });
});

describe('the portfolio, round two (issue 33)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let sc: ExpiryScenario;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    // the clock jumps days ahead to the expiry: tokens that outlive it
    srv = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    const admin = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    sc = await prepareExpiry(srv.url, admin);
    await ok(srv.url, 'private/set_test_time', { timestamp: sc.expiry + 60_000 }, admin);
    await until('the delivery', async () => (await ok(srv.url, 'private/get_settlement_history_by_currency', { currency: 'BTC' }, sc.buyer)).settlements.length > 0, 20_000);
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };
  const BUYER = () => ({ email: sc.buyerEmail, password: 'user-password-1' });

  it('shows the account log, the settlements and the P&L over time', opt, async () => {
    const ctx = await signedIn(browser, srv.url, BUYER());
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/portfolio`);
    const log = page.getByRole('table', { name: 'Account log' });
    await log.locator('tr[data-log-id]').nth(2).waitFor();
    const api = (await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', count: 10 }, sc.buyer)).logs;
    assert.deepEqual(api.map((e: any) => e.type), ['delivery', 'trade', 'deposit']);
    const rows = log.locator('tr[data-log-id]');
    assert.equal(await rows.count(), 3);
    for (let i = 0; i < 3; i++) {
      const cells = await rows.nth(i).locator('td').allTextContents();
      assert.equal(cells[1], api[i].type);
      assert.equal(cells[7], fmt.coin(api[i].change, 8), `change of the ${api[i].type}`);
      assert.equal(cells[8], fmt.coin(api[i].balance, 8), `balance after the ${api[i].type}`);
    }
    // the settlement, with the cash it moved
    const settlements = page.getByRole('table', { name: 'Settlements' });
    const srow = settlements.locator('tr', { hasText: sc.instrument });
    await srow.waitFor();
    const scells = await srow.locator('td').allTextContents();
    assert.equal(scells[5], fmt.coin(sc.buyerDelta / 1e8, 8));
    assert.equal(scells[3], fmt.usd(sc.deliveryPrice));
    // the chart: deposit (0), trade (premium and fee paid), delivery (payout less fee); no position left, so now = the last entry
    const chart = page.getByRole('figure', { name: 'P&L over time (BTC)' });
    const points = String(await chart.getAttribute('data-points')).split(' ');
    const trade = api[1].change;
    const expected = [0, trade, trade + sc.buyerDelta / 1e8].map((x) => fmt.coin(Math.round(x * 1e8) / 1e8, 8));
    assert.deepEqual(points, [...expected, expected[2]]);
    await ctx.close();
  });

  it('takes a screenshot of the portfolio in both themes at both widths', opt, async () => {
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1400, 900], [390, 844]]) {
        const ctx = await signedIn(browser, srv.url, BUYER(), { width, height });
        await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
        const page = await ctx.newPage();
        await page.goto(`${srv.url}/portfolio`);
        await page.getByRole('figure', { name: 'P&L over time (BTC)' }).waitFor();
        await page.getByRole('table', { name: 'Settlements' }).locator('tbody tr').first().waitFor();
        await page.getByRole('heading', { name: 'P&L and account log' }).scrollIntoViewIfNeeded();
        await screenshot(page, `round2-${theme}-${width}-portfolio`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(wide <= 0, `portfolio at ${width} px in ${theme}: ${wide} px of horizontal scroll`);
        await ctx.close();
      }
    }
  });
});
