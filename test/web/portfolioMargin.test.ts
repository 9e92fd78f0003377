// Portfolio margin in the web app (issue 35): the portfolio shows the account's margin model, the
// scenario table of private/pme/simulate as a heat map (9 price moves x 3 vol scenarios, the worst
// cell marked, the same figures as the API) and a what-if simulator whose margins are
// private/simulate_portfolio's; on a cross model (cross_sm here) the pooled figures beside it. Screenshots in both themes at 1280 and 390x844 go to test-artifacts/web/ (copies in docs/images/).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, signedIn, watchErrors } from '../helpers/browser.ts';
import { atmCall, market, nearMark, twinPut } from '../helpers/market.ts';
import { BOOTSTRAP, ROOT, login, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };
const TRADER = { email: 'pm-trader@example.com', password: 'user-password-1' };
/** On cross_sm: the heat map shows its pooled figures too (across currencies, under portfolio margin). */
const CROSS = { email: 'pm-cross@example.com', password: 'user-password-1' };

describe('portfolio margin in the portfolio (issue 35)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let trader: string;
  let putName: string;
  let crossToken: string;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer();
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    const admin = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    trader = await userToken(srv.url, admin, TRADER.email, { currency: 'BTC', amount: 10 });
    const cp = await userToken(srv.url, admin, 'pm-cp@example.com', { currency: 'BTC', amount: 10 });
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm' }, trader);
    // a short at-the-money call: losses on the way up, the worst at the top of the table
    const call = await atmCall(srv.url);
    const price = nearMark(await market(srv.url, call.inst));
    await ok(srv.url, 'private/buy', { instrument_name: call.name, amount: 1, price }, cp);
    await ok(srv.url, 'private/sell', { instrument_name: call.name, amount: 1, price }, trader);
    putName = (await twinPut(srv.url, call)).name;
    // the cross account: every currency pooled at index, so ETH's index is needed; the same short call
    await ok(srv.url, 'private/set_index_price', { index_name: 'eth_usd', price: 4000 }, admin);
    const cross = await userToken(srv.url, admin, CROSS.email, { currency: 'BTC', amount: 10 });
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'cross_sm' }, cross);
    await ok(srv.url, 'private/buy', { instrument_name: call.name, amount: 1, price }, cp);
    await ok(srv.url, 'private/sell', { instrument_name: call.name, amount: 1, price }, cross);
    crossToken = cross;
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  it('shows the margin model, the scenario heat map with the worst cell marked, and what-if margins', opt, async () => {
    const ctx = await signedIn(browser, srv.url, TRADER, { width: 1280, height: 900 });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${srv.url}/portfolio`);
    await page.locator('.margin-model[data-model="segregated_pm"]').waitFor();
    assert.match(await page.locator('.margin-model').innerText(), /Portfolio margin, per currency/);

    const map = page.getByRole('table', { name: 'Scenario P&L (BTC)' });
    await map.locator('td[data-pnl]').nth(26).waitFor();
    const api = await ok(srv.url, 'private/pme/simulate', { currency: 'BTC' }, trader);
    const standard = api.scenarios.filter((s: any) => s.table === 'standard');
    assert.equal(await map.locator('td[data-pnl]').count(), 27, '9 price moves x 3 vol scenarios');
    for (const s of standard) {
      const cell = map.locator(`td[data-move="${s.price_move}"][data-vol="${s.vol_move}"]`);
      assert.equal(Number(await cell.getAttribute('data-pnl')), s.pnl, `${s.price_move} ${s.vol_move}`);
    }
    // one cell marked: the API's worst scenario (a short call loses most at +16%, vol up)
    const worst = map.locator('td.worst');
    assert.equal(await worst.count(), 1);
    assert.equal(api.worst_scenario.table, 'standard');
    assert.equal(Number(await worst.getAttribute('data-move')), api.worst_scenario.price_move);
    assert.equal(await worst.getAttribute('data-vol'), api.worst_scenario.vol_move);
    assert.equal(api.worst_scenario.price_move, 0.16);
    assert.ok(await worst.getByLabel('worst scenario').isVisible());
    // losses are red shades, gains green
    assert.match(String(await worst.getAttribute('class')), /heat-l5/);
    assert.equal(await page.locator('[data-field="pm_mm"]').innerText(), fmt.coin(api.maintenance_margin, 8));

    // what if: the twin put sold too (a short straddle)
    await page.getByLabel('What-if instrument').fill(putName);
    await page.getByLabel('What-if amount').fill('-1');
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByRole('button', { name: 'Simulate' }).click();
    const table = page.getByRole('table', { name: 'What-if margins' });
    await table.waitFor();
    const now = await ok(srv.url, 'private/simulate_portfolio', { currency: 'BTC' }, trader);
    const sim = await ok(srv.url, 'private/simulate_portfolio', { currency: 'BTC', simulated_positions: { [putName]: -1 } }, trader);
    for (const field of ['projected_initial_margin', 'projected_maintenance_margin']) {
      const cells = await table.locator(`tr[data-field="${field}"] td`).allTextContents();
      assert.equal(cells[1], fmt.coin(now[field], 8), `${field} now`);
      assert.equal(cells[2], fmt.coin(sim[field], 8), `${field} with the put`);
      assert.equal(cells[3], `+${fmt.coin(Math.round((sim[field] - now[field]) * 1e8) / 1e8, 8)}`, `${field} change`);
    }
    assert.ok(sim.projected_maintenance_margin > now.projected_maintenance_margin);
    // ETH has no positions: an empty book, nothing loses
    await page.getByRole('tab', { name: 'ETH' }).click();
    await page.getByRole('table', { name: 'Scenario P&L (ETH)' }).locator('td[data-pnl]').nth(26).waitFor();
    assert.equal(await page.locator('td.worst').count(), 0);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  it('shows the pooled figures of a cross_sm account beside its scenario table (as for cross_pm)', opt, async () => {
    const ctx = await signedIn(browser, srv.url, CROSS, { width: 1280, height: 900 });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(`${srv.url}/portfolio`);
    await page.locator('.margin-model[data-model="cross_sm"]').waitFor();
    assert.match(await page.locator('.margin-model').innerText(), /Standard margin, cross collateral/);
    await page.getByRole('table', { name: 'Scenario P&L (BTC)' }).locator('td.worst').waitFor();
    const pooled = page.locator('[data-field="cross-figures"]');
    await pooled.waitFor();
    const api = await ok(srv.url, 'private/pme/simulate', { currency: 'BTC' }, crossToken);
    assert.ok(api.cross_maintenance_margin > 0);
    assert.equal(await page.locator('[data-field="cross_mm"]').innerText(), fmt.coin(api.cross_maintenance_margin, 8));
    assert.equal(await page.locator('[data-field="cross_im"]').innerText(), fmt.coin(api.cross_initial_margin, 8));
    assert.match(await pooled.innerText(), /Pooled across currencies, as on portfolio margin/);
    await page.getByRole('heading', { name: 'Portfolio margin scenarios' }).evaluate((e) => e.scrollIntoView({ block: 'start' }));
    mkdirSync(path.join(ROOT, 'test-artifacts/web'), { recursive: true });
    await page.screenshot({ path: path.join(ROOT, 'test-artifacts/web/portfolio-margin-cross-sm-dark-1280.png') });
    // the segregated account shows no pooled line
    assert.deepEqual(errors, []);
    await ctx.close();
    const seg = await signedIn(browser, srv.url, TRADER, { width: 1280, height: 900 });
    const segPage = await seg.newPage();
    await segPage.goto(`${srv.url}/portfolio`);
    await segPage.getByRole('table', { name: 'Scenario P&L (BTC)' }).locator('td.worst').waitFor();
    assert.equal(await segPage.locator('[data-field="cross-figures"]').count(), 0);
    await seg.close();
  });

  it('takes screenshots of the heat map and the what-if in both themes at 1280 and 390x844', opt, async () => {
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1280, 900], [390, 844]]) {
        const ctx = await signedIn(browser, srv.url, TRADER, { width, height });
        await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
        const page = await ctx.newPage();
        const errors = watchErrors(page);
        await page.goto(`${srv.url}/portfolio`);
        await page.getByRole('table', { name: 'Scenario P&L (BTC)' }).locator('td.worst').waitFor();
        await page.getByLabel('What-if instrument').fill(putName);
        await page.getByLabel('What-if amount').fill('-1');
        await page.getByRole('button', { name: 'Add' }).click();
        await page.getByRole('button', { name: 'Simulate' }).click();
        await page.getByRole('table', { name: 'What-if margins' }).waitFor();
        await page.getByRole('heading', { name: 'Portfolio margin scenarios' }).evaluate((e) => e.scrollIntoView({ block: 'start' }));
        // to test-artifacts/web/ (docs/images/ holds a copy taken once, so a test run leaves the tree clean)
        mkdirSync(path.join(ROOT, 'test-artifacts/web'), { recursive: true });
        await page.screenshot({ path: path.join(ROOT, `test-artifacts/web/portfolio-margin-${theme}-${width}.png`) });
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        // what sticks out, to say which element when it fails
        const out = await page.evaluate(() =>
          [...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && e.closest('.heat-scroll') === null)
            .slice(-3)
            .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
        );
        assert.ok(wide <= 0, `portfolio at ${width} px in ${theme}: ${wide} px of horizontal scroll (${out.join(', ')})`);
        assert.deepEqual(errors, []);
        await ctx.close();
      }
    }
  });
});
