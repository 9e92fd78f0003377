// Issue 33, round two, the admin console: "Set index" only where the feed is manual (the API
// refuses it otherwise: `index_feed_not_manual`), the users with their balances and credit tier
// and a Disable/Enable button, and the server's status (leader or standby, lease, snapshots,
// journal retention, index feed) from /health. Screenshots of the console in both themes at both
// widths (test-artifacts/web/round2-*). The browser helper fails the file on any page error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, screenshot, signedIn, until } from '../helpers/browser.ts';
import { BOOTSTRAP, login, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

const TRADER = { email: 'trader@example.com', password: 'user-password-1' };
const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' };

describe('the admin console, round two (issue 33)', { timeout: 300_000 }, () => {
  const skip = browserSkipReason();
  let manual: TestServer;
  let simulated: TestServer;
  let browser: Browser;
  let adminTok: string;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    manual = await startServer();
    // the sandbox's default feed: the index moves by itself
    simulated = await startServer({ STRIKEBOOK_INDEX_FEED: 'simulated' });
    for (const srv of [manual, simulated]) await ok(srv.url, 'private/create_admin', { ...ADMIN, bootstrap_token: BOOTSTRAP });
    adminTok = await login(manual.url, ADMIN.email, ADMIN.password);
    await ok(manual.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, adminTok);
    await userToken(manual.url, adminTok, TRADER.email, { currency: 'BTC', amount: 12.5 });
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, manual, simulated));
  const opt = { skip: skip ?? false };

  it('offers "Set index" with the manual feed only', opt, async () => {
    for (const [srv, offered] of [[manual, true], [simulated, false]] as const) {
      const ctx = await signedIn(browser, srv.url, ADMIN);
      const page = await ctx.newPage();
      await page.goto(`${srv.url}/admin`);
      await page.getByRole('heading', { name: 'Index, volatility, trading' }).waitFor();
      const note = page.getByLabel('Index feed');
      const button = page.getByRole('button', { name: 'Set index (manual feed)' });
      if (offered) await button.waitFor();
      else await note.waitFor();
      assert.equal(await button.count(), offered ? 1 : 0, `Set index ${offered ? '' : 'not '}offered`);
      if (!offered) assert.match(String(await note.textContent()), /simulated feed; setting it by hand needs STRIKEBOOK_INDEX_FEED=manual/);
      await ctx.close();
    }
  });

  it('lists the users with their balances and tier, and disables and enables one', opt, async () => {
    const ctx = await signedIn(browser, manual.url, ADMIN);
    const page = await ctx.newPage();
    await page.goto(`${manual.url}/admin`);
    const users = page.getByRole('table', { name: 'Users' });
    const row = users.locator('tr', { hasText: TRADER.email });
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    // Id, Email, Role, Tier, BTC, ETH, USDC, Created, State
    assert.equal(cells[3], '4', 'the default credit tier');
    assert.equal(cells[4], '12.50000000', 'the BTC balance, exact');
    assert.equal(cells[8], 'active');
    // no Disable on the administrator's own row: the server refuses it
    assert.equal(await users.locator('tr', { hasText: ADMIN.email }).getByRole('button').count(), 0);
    await row.getByRole('button', { name: `Disable ${TRADER.email}` }).click();
    await page.getByText(`${TRADER.email} disabled`).waitFor();
    const listed = async () => (await ok(manual.url, 'private/list_users', {}, adminTok)).users.find((u: any) => u.email === TRADER.email);
    assert.equal((await listed()).disabled, true);
    await row.locator('td', { hasText: 'disabled' }).waitFor();
    const refused = await fetch(`${manual.url}/api/v2/public/auth?grant_type=password&username=${encodeURIComponent(TRADER.email)}&password=${TRADER.password}`).then((r) => r.json());
    assert.ok(refused.error, 'a disabled user cannot sign in');
    await row.getByRole('button', { name: `Enable ${TRADER.email}` }).click();
    await until('enabled', async () => (await listed()).disabled === false, 5000);
    await ctx.close();
  });

  it("shows the server's role, journal retention, snapshots and index feed", opt, async () => {
    const ctx = await signedIn(browser, manual.url, ADMIN);
    const page = await ctx.newPage();
    await page.goto(`${manual.url}/admin`);
    const health = page.getByLabel('Health', { exact: true });
    await health.getByText('leader').waitFor();
    const text = String(await health.textContent());
    assert.match(text, /Roleleader/);
    assert.match(text, /retention keep · snapshot every 500,000 records/);
    assert.match(text, /Snapshots0 since start/);
    assert.match(text, /Index feedmanual/);
    assert.match(text, /Modesandbox/);
    const h = await fetch(`${manual.url}/health`).then((r) => r.json());
    assert.deepEqual([h.index_feed, h.journal, h.snapshots.taken], ['manual', { retention: 'keep', snapshot_every: 500000 }, 0]);
    await ctx.close();
  });

  it('takes a screenshot of the console in both themes at both widths', opt, async () => {
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1400, 900], [390, 844]]) {
        const ctx = await signedIn(browser, simulated.url, ADMIN, { width, height });
        await ctx.addInitScript((t: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', t), theme);
        const page = await ctx.newPage();
        await page.goto(`${simulated.url}/admin`);
        await page.getByLabel('Index feed').waitFor();
        await page.getByLabel('Health', { exact: true }).waitFor();
        await screenshot(page, `round2-${theme}-${width}-admin`);
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(wide <= 0, `admin at ${width} px in ${theme}: ${wide} px of horizontal scroll`);
        await ctx.close();
      }
    }
  });
});
