// Issue 34, the block RFQ screen (/rfq) as two traders use it, each in its own browser context: the
// taker builds a call spread and sends it to a chosen maker; the maker, marked by the operator, sees
// it arrive live, offers it, edits the offer and cancels a bid; the taker sees each quote change live
// (best bid and ask, the count of price levels), buys at the best ask, and both see the fill, the
// block trade in their histories and the legs in their positions. An anonymous RFQ hides the taker
// and is cancelled. Approvals: a block trade the taker must approve shows in its pending requests as
// it is made (block_trade_confirmations) and Approve executes it. Screenshots in both themes at 1280
// and 390x844 with no horizontal scroll or clipped cell (copies in docs/images/ when missing or with
// UPDATE_DOCS_IMAGES=1); launchBrowser fails the run on any console error or CSP violation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import * as fmt from '../../web/src/lib/format.ts';
import { structurePrice } from '../../web/src/lib/rfq.ts';
import { browserSkipReason, closeBrowserAndStop, ensureWebBuilt, launchBrowser, layoutFaults, screenshot, signedIn, until } from '../helpers/browser.ts';
import { atmCall, instruments, market, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, ROOT, startServer, userToken, type TestServer } from '../helpers/server.ts';

const PASSWORD = 'user-password-1';
const TAKER = { email: 'web-rfq-taker@example.com', password: PASSWORD };
const MAKER = { email: 'web-rfq-maker@example.com', password: PASSWORD };
const APPROVER = { email: 'web-rfq-approver@example.com', password: PASSWORD };
const SIGNER = 'web-rfq-signer@example.com';
const DOCS_IMAGES = path.join(ROOT, 'docs/images');

/** A pattern matching `text` and nothing longer (0.2 is not -0.2). */
const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

/** The text of the cells of the row of `table` whose `attr` is `value`, once it shows `want`. */
async function rowCells(page: Page, table: string, attr: string, value: string | number, want?: RegExp): Promise<string[]> {
  const row = page.getByRole('table', { name: table }).locator(`tr[${attr}="${value}"]`);
  await row.waitFor();
  if (want) await until(`${table} row ${value} to show ${want}`, async () => want.test((await row.textContent()) ?? ''));
  return row.locator('td').allTextContents();
}

describe('the block RFQ screen (issue 34)', { timeout: 600_000 }, () => {
  const skip = browserSkipReason();
  let srv: TestServer;
  let browser: Browser;
  let admin: string;
  let taker: string;
  let maker: string;
  let atm: Market;
  let otm: Market;

  before(async () => {
    if (skip) return;
    await ensureWebBuilt();
    srv = await startServer({ STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1' });
    admin = await adminToken(srv.url);
    taker = await userToken(srv.url, admin, TAKER.email, { currency: 'BTC', amount: 10 });
    maker = await userToken(srv.url, admin, MAKER.email, { currency: 'BTC', amount: 10 });
    const makerId = (await ok(srv.url, 'private/get_block_rfq_user_info', {}, maker)).users[0].user_id;
    await ok(srv.url, 'private/set_block_rfq_maker', { user_id: makerId, is_maker: true }, admin);
    atm = await atmCall(srv.url);
    // the next strike up of the same expiry: a call spread
    const up = (await instruments(srv.url)).filter((i) => i.option_type === 'call' && i.expiration_timestamp === atm.inst.expiration_timestamp && i.strike > atm.inst.strike).sort((a, b) => a.strike - b.strike);
    otm = await market(srv.url, up[0]);
    browser = await launchBrowser();
  });
  after(async () => closeBrowserAndStop(browser, srv));
  const opt = { skip: skip ?? false };

  it('runs an RFQ from the taker to the maker to a fill, live on both screens', opt, async () => {
    const makerCtx = await signedIn(browser, srv.url, MAKER);
    const mp = await makerCtx.newPage();
    await mp.goto(`${srv.url}/rfq`);
    await mp.getByText('No RFQ sent to you yet.').waitFor();
    const takerCtx = await signedIn(browser, srv.url, TAKER);
    const tp = await takerCtx.newPage();
    await tp.goto(`${srv.url}/rfq`);
    await tp.getByRole('link', { name: 'Block RFQ' }).waitFor();

    // the taker's structure: buy the ATM call, sell the next strike, 0.2 of each, to the chosen maker
    await tp.getByLabel('Leg 1 instrument').fill(atm.name);
    await tp.getByRole('button', { name: 'Add leg' }).click();
    await tp.getByLabel('Leg 2 instrument').fill(otm.name);
    await tp.getByLabel('Leg 2 direction').selectOption('sell');
    await tp.getByLabel('Amount', { exact: true }).fill('0.2');
    await tp.getByLabel('Chosen makers').check();
    await tp.getByLabel(MAKER.email).check();
    await tp.getByText(`Legs: buy 0.2 ${atm.name}, sell 0.2 ${otm.name}`).waitFor();
    await tp.getByRole('button', { name: 'Request quotes' }).click();
    const sent = await tp.getByText(/^RFQ #\d+ sent$/).textContent();
    const rfqId = Number(/#(\d+)/.exec(sent!)![1]);
    let t = await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId);
    assert.deepEqual([t[1], t[2], t[3], t[4], t[5], t[6]], [`buy 1 ${atm.name}, sell 1 ${otm.name}`, fmt.amount(0.2), 'open', '–', '–', '0']);

    // the maker sees it arrive without a reload, with the taker's name (disclosed)
    let m = await rowCells(mp, 'Incoming RFQs', 'data-rfq-id', rfqId);
    assert.deepEqual([m[1], m[3], m[4], m[6]], [TAKER.email, `buy 1 ${atm.name}, sell 1 ${otm.name}`, fmt.amount(0.2), 'open']);

    // an offer: sell the spread at the legs' marks
    const spread = [
      { direction: 'buy' as const, ratio: 1 },
      { direction: 'sell' as const, ratio: 1 },
    ];
    const ia = atm.prices.indexOf(nearMark(atm));
    const io = otm.prices.indexOf(nearMark(otm));
    const ask1 = structurePrice(spread, [String(atm.prices[ia]), String(otm.prices[io])])!;
    await mp.getByRole('table', { name: 'Incoming RFQs' }).locator(`tr[data-rfq-id="${rfqId}"]`).getByRole('button', { name: 'Quote' }).click();
    await mp.getByLabel(`Price ${atm.name}`).fill(String(atm.prices[ia]));
    await mp.getByLabel(`Price ${otm.name}`).fill(String(otm.prices[io]));
    await mp.getByText(`Structure price: ${ask1}`).waitFor();
    await mp.getByRole('button', { name: 'Send quote' }).click();
    const askQuote = Number(/#(\d+)/.exec((await mp.getByText(/^Quote #\d+ sent$/).textContent())!)![1]);
    t = await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId, new RegExp(`${fmt.fixed(Number(ask1), 4)} ×`));
    assert.deepEqual([t[4], t[5], t[6]], ['–', `${fmt.fixed(Number(ask1), 4)} × ${fmt.amount(0.2)}`, '1']);

    // the maker edits its offer a tick higher on the bought leg: the taker's best ask follows
    const ask2 = structurePrice(spread, [String(atm.prices[ia + 1]), String(otm.prices[io])])!;
    assert.ok(Number(ask2) > Number(ask1));
    await mp.getByRole('button', { name: `Edit quote ${askQuote}` }).click();
    await mp.getByLabel(`Price ${atm.name}`).fill(String(atm.prices[ia + 1]));
    await mp.getByRole('button', { name: 'Save quote' }).click();
    await mp.getByText(`Quote #${askQuote} saved`).waitFor();
    t = await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId, new RegExp(`${fmt.fixed(Number(ask2), 4)} ×`));
    assert.equal(t[5], `${fmt.fixed(Number(ask2), 4)} × ${fmt.amount(0.2)}`);

    // a bid below, then cancelled: the taker's best bid comes and goes
    const bid = structurePrice(spread, [String(atm.prices[ia - 2]), String(otm.prices[io + 2])])!;
    await mp.getByRole('table', { name: 'Incoming RFQs' }).locator(`tr[data-rfq-id="${rfqId}"]`).getByRole('button', { name: 'Quote' }).click();
    await mp.getByLabel('Quote side').selectOption('buy');
    await mp.getByLabel(`Price ${atm.name}`).fill(String(atm.prices[ia - 2]));
    await mp.getByLabel(`Price ${otm.name}`).fill(String(otm.prices[io + 2]));
    await mp.getByRole('button', { name: 'Send quote' }).click();
    const bidQuote = Number(/#(\d+)/.exec((await mp.getByText(/^Quote #\d+ sent$/).textContent())!)![1]);
    t = await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId, new RegExp(`^.*${fmt.fixed(Number(bid), 4)} ×`));
    assert.deepEqual([t[4], t[6]], [`${fmt.fixed(Number(bid), 4)} × ${fmt.amount(0.2)}`, '2']);
    await mp.getByRole('button', { name: `Cancel quote ${bidQuote}` }).click();
    await mp.getByText(`Quote #${bidQuote} cancelled`).waitFor();
    await until('the cancelled bid to leave the taker\'s row', async () => (await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId))[4] === '–');

    // the taker buys at the best ask: one block trade, the RFQ filled on both screens
    await tp.getByRole('button', { name: `Buy at ${fmt.fixed(Number(ask2), 4)}` }).click();
    const done = await tp.getByText(/bought 0\.2 at/).textContent();
    const blockId = /block trade #(\d+)/.exec(done!)![1];
    t = await rowCells(tp, 'My RFQs', 'data-rfq-id', rfqId, /filled/);
    assert.equal(t[3], 'filled');
    assert.equal(t[8], `bought ${fmt.amount(0.2)} @ ${fmt.fixed(Number(ask2), 4)} (${MAKER.email})`);
    m = await rowCells(mp, 'Incoming RFQs', 'data-rfq-id', rfqId, /filled/);
    assert.equal(m[8], `taker bought ${fmt.amount(0.2)} @ ${fmt.fixed(Number(ask2), 4)}`);
    const q = await rowCells(mp, 'My quotes', 'data-quote-id', askQuote, /filled/);
    assert.deepEqual([q[2], q[5], q[6]], ['ask', fmt.amount(0.2), 'filled']);

    // both histories: the taker's side and the maker's of each leg, at the quoted leg prices
    const legs = async (page: Page) => {
      const rows = page.getByRole('table', { name: 'Block trades' }).locator(`tr[data-block-id="${blockId}"]`);
      await until('both legs in the block trades', async () => (await rows.count()) === 2);
      return (await Promise.all((await rows.all()).map((r) => r.locator('td').allTextContents()))).map((c) => `${c[3]} ${c[4]} ${c[2]} @ ${c[5]}`).sort();
    };
    const pa = fmt.price(atm.prices[ia + 1]);
    const po = fmt.price(otm.prices[io]);
    assert.deepEqual(await legs(tp), [`buy 0.2 ${atm.name} @ ${pa}`, `sell 0.2 ${otm.name} @ ${po}`].sort());
    assert.deepEqual(await legs(mp), [`sell 0.2 ${atm.name} @ ${pa}`, `buy 0.2 ${otm.name} @ ${po}`].sort());
    const viaApi = await ok(srv.url, 'private/get_block_trade', { id: blockId }, maker);
    assert.equal(viaApi.trades.length, 2);

    // and their positions
    for (const [page, sign] of [[tp, 1], [mp, -1]] as const) {
      await page.getByRole('link', { name: 'Portfolio' }).click();
      const pos = page.getByRole('table', { name: 'Positions' });
      await pos.locator(`tr[data-instrument="${atm.name}"] td[data-field="size"]`).filter({ hasText: exactly(fmt.amount(0.2 * sign)) }).waitFor();
      await pos.locator(`tr[data-instrument="${otm.name}"] td[data-field="size"]`).filter({ hasText: exactly(fmt.amount(-0.2 * sign)) }).waitFor();
    }
    await takerCtx.close();
    await makerCtx.close();
  });

  it('hides an anonymous taker from the maker, and the taker cancels its RFQ', opt, async () => {
    // an anonymous RFQ must reach 5 makers (Deribit's rule, src/blockrfq): four more, marked by the operator
    for (let i = 1; i <= 4; i++) {
      const extra = await userToken(srv.url, admin, `web-rfq-maker-${i}@example.com`, { currency: 'BTC', amount: 1 });
      const id = (await ok(srv.url, 'private/get_block_rfq_user_info', {}, extra)).users[0].user_id;
      await ok(srv.url, 'private/set_block_rfq_maker', { user_id: id, is_maker: true }, admin);
    }
    const makerCtx = await signedIn(browser, srv.url, MAKER);
    const mp = await makerCtx.newPage();
    await mp.goto(`${srv.url}/rfq`);
    await mp.getByRole('table', { name: 'Incoming RFQs' }).waitFor();
    const takerCtx = await signedIn(browser, srv.url, TAKER);
    const tp = await takerCtx.newPage();
    await tp.goto(`${srv.url}/rfq`);
    await tp.getByLabel('Leg 1 instrument').fill(otm.name);
    await tp.getByLabel('Leg 1 ratio').fill('2');
    await tp.getByLabel('Amount', { exact: true }).fill('0.1');
    await tp.getByLabel('Disclosed').uncheck();
    await tp.getByRole('button', { name: 'Request quotes' }).click();
    const rfqId = Number(/#(\d+)/.exec((await tp.getByText(/^RFQ #\d+ sent$/).textContent())!)![1]);
    const m = await rowCells(mp, 'Incoming RFQs', 'data-rfq-id', rfqId);
    // the server keeps the amount over the ratios' common divisor: 0.2 of one leg is ratio 1, amount 0.2
    assert.deepEqual([m[1], m[3], m[4]], ['anonymous', `buy 1 ${otm.name}`, fmt.amount(0.2)]);
    await tp.getByRole('table', { name: 'My RFQs' }).locator(`tr[data-rfq-id="${rfqId}"]`).getByRole('button', { name: 'Cancel' }).click();
    await tp.getByText(`RFQ #${rfqId} cancelled`).waitFor();
    assert.equal((await rowCells(mp, 'Incoming RFQs', 'data-rfq-id', rfqId, /cancelled/))[6], 'cancelled');
    assert.equal(await mp.getByRole('table', { name: 'Incoming RFQs' }).locator(`tr[data-rfq-id="${rfqId}"]`).getByRole('button', { name: 'Quote' }).count(), 0);
    await takerCtx.close();
    await makerCtx.close();
  });

  it('shows a block trade waiting for approval as it is made, and Approve executes it', opt, async () => {
    const approver = await userToken(srv.url, admin, APPROVER.email, { currency: 'BTC', amount: 10 });
    const signer = await userToken(srv.url, admin, SIGNER, { currency: 'BTC', amount: 10 });
    await ok(srv.url, 'private/set_block_trade_approval', { enabled: true }, approver);
    const ctx = await signedIn(browser, srv.url, APPROVER);
    const page = await ctx.newPage();
    await page.goto(`${srv.url}/rfq`);
    await page.getByText('No block trades yet.').waitFor();

    const deal = { timestamp: await ok(srv.url, 'public/get_time'), nonce: 'web-rfq-approve', trades: [{ instrument_name: atm.name, direction: 'sell', price: nearMark(atm), amount: 0.3 }] };
    const { signature } = await ok(srv.url, 'private/verify_block_trade', { ...deal, role: 'maker' }, signer);
    assert.equal((await ok(srv.url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, approver)).state, 'waiting_for_approval');

    // no reload: block_trade_confirmations brings it
    let r = await rowCells(page, 'Block trade requests', 'data-nonce', 'web-rfq-approve');
    assert.deepEqual([r[2], r[3], r[5], r[6]], [SIGNER, 'taker', 'initial', 'accepted']);
    await page.getByText('1 block trade waits for your approval').waitFor();
    await page.getByRole('button', { name: 'Approve block trade web-rfq-approve' }).click();
    await page.getByText('Block trade web-rfq-approve approved').waitFor();
    r = await rowCells(page, 'Block trade requests', 'data-nonce', 'web-rfq-approve', /executed/);
    assert.deepEqual([r[5], r[6]], ['executed', 'executed']);
    assert.equal(await page.getByRole('button', { name: 'Approve block trade web-rfq-approve' }).count(), 0);
    const trades = await ok(srv.url, 'private/get_block_trades', { currency: 'BTC' }, approver);
    assert.equal(trades.length, 1);
    const row = await rowCells(page, 'Block trades', 'data-block-id', trades[0].id);
    assert.deepEqual([row[2], row[3], row[4]], [atm.name, 'buy', fmt.amount(0.3)]);
    await ctx.close();
  });

  it('takes screenshots of both sides in both themes at 1280 and 390x844, with nothing clipped', opt, async () => {
    // an open RFQ with an offer, and a request that waits for the maker's approval
    const r = await ok(srv.url, 'private/create_block_rfq', { legs: [{ instrument_name: atm.name, amount: 0.5, direction: 'buy' }, { instrument_name: otm.name, amount: 0.5, direction: 'sell' }], label: 'shot' }, taker);
    const priced = [{ instrument_name: atm.name, price: nearMark(atm) }, { instrument_name: otm.name, price: nearMark(otm) }];
    await ok(srv.url, 'private/add_block_rfq_quote', { block_rfq_id: r.block_rfq_id, amount: 0.5, direction: 'sell', legs: priced }, maker);
    await ok(srv.url, 'private/set_block_trade_approval', { enabled: true }, maker);
    const deal = { timestamp: await ok(srv.url, 'public/get_time'), nonce: 'web-rfq-shot', trades: [{ instrument_name: otm.name, direction: 'buy', price: nearMark(otm), amount: 0.1 }] };
    const { signature } = await ok(srv.url, 'private/verify_block_trade', { ...deal, role: 'maker' }, maker);
    await ok(srv.url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, taker);

    const problems: string[] = [];
    for (const theme of ['dark', 'light']) {
      for (const [width, height] of [[1280, 900], [390, 844]]) {
        for (const [who, side] of [[TAKER, 'taker'], [MAKER, 'maker']] as const) {
          const ctx = await signedIn(browser, srv.url, who, { width, height });
          await ctx.addInitScript((th: string) => location.protocol.startsWith('http') && localStorage.setItem('strikebook.theme', th), theme);
          const page = await ctx.newPage();
          await page.goto(`${srv.url}/rfq`);
          if (side === 'taker') {
            await page.getByRole('table', { name: 'My RFQs' }).locator(`tr[data-rfq-id="${r.block_rfq_id}"]`).getByRole('button', { name: /^Buy at/ }).waitFor();
            await page.getByLabel('Leg 1 instrument').fill(atm.name);
            await page.getByLabel('Amount', { exact: true }).fill('1');
          } else {
            await page.getByRole('table', { name: 'Incoming RFQs' }).locator(`tr[data-rfq-id="${r.block_rfq_id}"]`).getByRole('button', { name: 'Quote' }).click();
            await page.getByLabel(`Price ${atm.name}`).fill(String(nearMark(atm)));
            await page.getByRole('button', { name: 'Approve block trade web-rfq-shot' }).waitFor();
          }
          const name = `rfq-${side}-${theme}-${width}`;
          const file = await screenshot(page, name);
          const docs = path.join(DOCS_IMAGES, `${name}.png`);
          if (!existsSync(docs) || process.env.UPDATE_DOCS_IMAGES === '1') {
            mkdirSync(DOCS_IMAGES, { recursive: true });
            copyFileSync(file, docs);
          }
          const f = await layoutFaults(page);
          if (f.pageWidth > f.viewport) problems.push(`${name}: the page is ${f.pageWidth} px wide in ${f.viewport}`);
          if (width < 720 && f.clipped.length > 0) problems.push(`${name}: clipped ${JSON.stringify(f.clipped.slice(0, 8))}`);
          await ctx.close();
        }
      }
    }
    assert.deepEqual(problems, []);
  });
});
