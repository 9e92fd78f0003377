// Issue 34, the portfolio's block trades: a maker signs, a taker executes (one block trade), and a
// second one waits for the taker's approval; the maker's portfolio lists the executed legs from its
// own side (private/get_block_trades) and the request with both states
// (private/get_block_trade_requests). No console error; screenshots in both themes at both widths.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, screenshot, signedIn } from '../helpers/browser.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const MAKER = { email: 'web-block-maker@example.com', password: 'user-password-1' };
const TAKER = 'web-block-taker@example.com';

describe('the portfolio: block trades (issue 34)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let call: Market;
  let blockId: string;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer({ STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1' });
    const admin = await adminToken(srv.url);
    const maker = await userToken(srv.url, admin, MAKER.email, { currency: 'BTC', amount: 10 });
    const taker = await userToken(srv.url, admin, TAKER, { currency: 'BTC', amount: 10 });
    call = await atmCall(srv.url);
    const deal = async (nonce: string) => {
      const d = { timestamp: await ok(srv.url, 'public/get_time'), nonce, trades: [{ instrument_name: call.name, direction: 'sell', price: nearMark(call), amount: 2 }] };
      const { signature } = await ok(srv.url, 'private/verify_block_trade', { ...d, role: 'maker' }, maker);
      return ok(srv.url, 'private/execute_block_trade', { ...d, role: 'taker', counterparty_signature: signature }, taker);
    };
    blockId = (await deal('web-1')).id;
    await ok(srv.url, 'private/set_block_trade_approval', { enabled: true }, taker);
    assert.equal((await deal('web-2')).state, 'waiting_for_approval');
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  it("lists the maker's block trade legs and the waiting request", opt, async () => {
    const ctx = await signedIn(browser, srv.url, MAKER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/portfolio`);
    const table = page.getByRole('table', { name: 'Block trades' });
    const row = table.locator(`tr[data-block-id="${blockId}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    assert.equal(cells[1], `#${blockId}`);
    assert.equal(cells[2], call.name);
    assert.equal(cells[3], 'sell', "the maker's side");
    assert.equal(cells[4], fmt.amount(2));
    assert.equal(cells[5], fmt.price(nearMark(call)));
    const req = page.getByRole('table', { name: 'Block trade requests' }).locator('tr[data-nonce="web-2"]');
    await req.waitFor();
    const rc = await req.locator('td').allTextContents();
    assert.deepEqual([rc[2], rc[3], rc[5], rc[6]], [TAKER, 'maker', 'accepted', 'initial']);
    await ctx.close();
  });

  it('takes a screenshot of the block trades in both themes at both widths', opt, async () => {
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1280, 900], [390, 844]]) {
        const ctx = await signedIn(browser, srv.url, MAKER, { width, height });
        await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
        const page = await ctx.newPage();
        await page.goto(`${srv.url}/portfolio`);
        await page.getByRole('table', { name: 'Block trade requests' }).locator('tbody tr').first().waitFor();
        await page.getByRole('heading', { name: 'Block trades' }).scrollIntoViewIfNeeded();
        await screenshot(page, `blocks-${theme}-${width}-portfolio`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(wide <= 0, `portfolio at ${width} px in ${theme}: ${wide} px of horizontal scroll`);
        await ctx.close();
      }
    }
  });
});
