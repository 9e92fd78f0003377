// Issue 33's notifications in a real browser on the pinned test clock: a liquidation of the signed-in
// user shows as a liquidation toast (and the counterparty's fill as a plain fill), and the sound on
// fills is off by default, plays when the trader turns it on, and stays on after a reload. The audio
// is stubbed in an init script (AudioContext and HTMLMediaElement.play count what would play); the
// browser helper fails the file on any page error, console error or CSP violation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, signedIn, until } from '../helpers/browser.ts';
import { market, nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, login, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };
const PASSWORD = 'user-password-1';
const who = (email: string) => ({ email, password: PASSWORD });

/**
 * Counts what the page would play: oscillators started, audio contexts made, media played. Plain
 * JavaScript in a string: a function here would be compiled by tsx with helpers the page lacks.
 */
const STUB_AUDIO = `
  window.__beeps = 0;
  window.__contexts = 0;
  class FakeContext {
    constructor() { this.state = 'running'; this.currentTime = 0; this.destination = {}; window.__contexts++; }
    resume() { return Promise.resolve(); }
    createOscillator() { return { type: 'sine', frequency: { value: 0 }, connect() {}, start() { window.__beeps++; }, stop() {} }; }
    createGain() { return { gain: { value: 0 }, connect() {} }; }
  }
  window.AudioContext = FakeContext;
  window.webkitAudioContext = FakeContext;
  HTMLMediaElement.prototype.play = function () { window.__beeps++; return Promise.resolve(); };
`;

describe('fill and liquidation notifications (issue 33)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let adminTok: string;
  let makerTok: string;
  let m: Market;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer();
    await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    adminTok = await login(srv.url, ADMIN.email, ADMIN.password);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, adminTok);
    makerTok = await userToken(srv.url, adminTok, 'maker@example.com', { currency: 'BTC', amount: 100 });
    m = await nearDatedAtmCall(srv.url);
    browser = await launchBrowser();
  });
  after(async () => {
    // the browser's close throws on a logged error: the server stops anyway (else the file hangs)
    await closeBrowserAndStop(browser, srv);
  });
  const opt = { skip: skip ?? false };

  const portfolio = async (page: Page) => {
    await page.goto(`${srv.url}/portfolio`);
    await page.getByRole('heading', { name: 'Portfolio', exact: true }).waitFor();
  };
  /** The trader's resting buy of 0.1 is hit by the maker: one fill; its toast. */
  const fill = async (page: Page, tok: string) => {
    const price = m.prices[4];
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price }, tok);
    const [trade] = (await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price }, makerTok)).trades;
    const toast = page.getByRole('status', { name: 'Notifications' }).locator(`[data-trade-id="${trade.trade_id}"]`);
    await toast.waitFor({ timeout: 5000 });
    return toast;
  };
  const beeps = (page: Page) => page.evaluate(() => (window as unknown as { __beeps: number }).__beeps);

  it('plays no sound by default; the toggle turns a beep on fills on, persists over a reload, and off again', opt, async () => {
    const tok = await userToken(srv.url, adminTok, 'listener@example.com', { currency: 'BTC', amount: 10 });
    const ctx = await signedIn(browser, srv.url, who('listener@example.com'));
    await ctx.addInitScript({ content: STUB_AUDIO });
    const page = await ctx.newPage();
    await portfolio(page);
    const toggle = page.getByRole('button', { name: 'Sound on fills' });
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false', 'off by default');
    await fill(page, tok);
    assert.equal(await beeps(page), 0, 'a fill with sound off plays nothing');
    assert.equal(await page.evaluate(() => (window as unknown as { __contexts: number }).__contexts), 0, 'no audio context is even made');
    assert.equal(await page.evaluate(() => localStorage.getItem('strikebook.sound')), null);

    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
    assert.equal(await page.evaluate(() => localStorage.getItem('strikebook.sound')), 'on');
    await fill(page, tok);
    await until('a beep on the fill', async () => (await beeps(page)) === 1, 5000);

    await page.reload();
    await page.getByRole('heading', { name: 'Portfolio', exact: true }).waitFor();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true', 'the setting survives a reload');
    await fill(page, tok);
    await until('a beep after the reload', async () => (await beeps(page)) === 1, 5000);

    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
    assert.equal(await page.evaluate(() => localStorage.getItem('strikebook.sound')), 'off');
    await fill(page, tok);
    assert.equal(await beeps(page), 1, 'turned off: the next fill plays nothing');
    await ctx.close();
  });

  it('shows a liquidation toast when the signed-in user is liquidated, a plain fill toast to the other side', opt, async () => {
    // a short call on 0.3 BTC of collateral: a 25 % rally puts it below maintenance margin
    const writerTok = await userToken(srv.url, adminTok, 'writer@example.com', { currency: 'BTC', amount: 0.3 });
    const buyerTok = await userToken(srv.url, adminTok, 'buyer@example.com', { currency: 'BTC', amount: 100 });
    const p = nearMark(await market(srv.url, m.inst));
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 1, price: p }, buyerTok);
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 1, price: p }, writerTok);
    const writerCtx = await signedIn(browser, srv.url, who('writer@example.com'));
    const makerCtx = await signedIn(browser, srv.url, who('maker@example.com'));
    const writer = await writerCtx.newPage();
    const maker = await makerCtx.newPage();
    await portfolio(writer);
    await portfolio(maker);

    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 125000 }, adminTok);
    await until('the writer flagged for liquidation', async () => (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, writerTok)).in_liquidation === true);
    // liquidity arrives: the liquidation buys the short back from the maker
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 2, price: nearMark(await market(srv.url, m.inst)) }, makerTok);
    await writer.getByRole('status', { name: 'Notifications' }).locator('.toast-item.liquidation').first().waitFor({ timeout: 10_000 });
    const [trade] = await ok(srv.url, 'private/get_user_trades_by_instrument', { instrument_name: m.name, count: 1, sorting: 'desc' }, writerTok).then((r) => r.trades);
    assert.equal(trade.liquidation, 'T');
    const liquidated = writer.getByRole('status', { name: 'Notifications' }).locator(`[data-trade-id="${trade.trade_id}"]`);
    await liquidated.waitFor({ timeout: 5000 });
    assert.equal(await liquidated.evaluate((el) => el.classList.contains('liquidation')), true);
    assert.match(String(await liquidated.textContent()), new RegExp(`^Liquidation: buy [\\d.]+ ${m.name} at 0\\.\\d+ \\(taker\\)$`));

    // the maker's resting order met the liquidation: a fill for the maker, not its liquidation
    const other = maker.getByRole('status', { name: 'Notifications' }).locator(`[data-trade-id="${trade.trade_id}"]`);
    await other.waitFor({ timeout: 5000 });
    assert.match(String(await other.textContent()), new RegExp(`^Filled: sell [\\d.]+ ${m.name} at 0\\.\\d+ \\(maker\\)$`));
    assert.equal(await other.evaluate((el) => el.classList.contains('liquidation')), false);
    await writerCtx.close();
    await makerCtx.close();
  });
});
