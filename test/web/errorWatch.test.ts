// The browser harness's page check (test/helpers/browser.ts): close() fails a test over any page
// error, console error or CSP violation, and lets through only Chromium's report that the host's
// network changed under a load (HOST_NETWORK_EVENT), which failed CI once in a test that passed. And
// close() gives up on a Chromium that stopped answering: it kills it and throws, so no file hangs on it;
// and the after-hooks' teardown (closeBrowserAndStop) stops the servers even when the check fails.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, closeBrowserAndStop, launchBrowser, ourChromiumPids, pageErrors, until } from '../helpers/browser.ts';

const skip = browserSkipReason() ?? undefined;
const NETWORK_CHANGED = 'Failed to load resource: net::ERR_NETWORK_CHANGED';

/** A browser with one blank page that logs `lines` as console errors; the browser is closed (its check swallowed) if `body` throws. */
async function withPage(lines: string[], body: (browser: Browser, page: Page) => Promise<void>): Promise<void> {
  const browser = await launchBrowser();
  let closed = false;
  try {
    const page = await browser.newPage();
    await page.setContent('<p>a page</p>');
    for (const line of lines) await page.evaluate((l) => console.error(l), line);
    await body(browser, page);
    closed = true;
  } finally {
    if (!closed) await browser.close().catch(() => undefined);
  }
}

describe('the browser harness counts page errors', { skip }, () => {
  it("lets the host's network-change event through and still counts every other error", async () => {
    await withPage([NETWORK_CHANGED], async (browser, page) => {
      assert.deepEqual(pageErrors(page), [], 'the network-change event is not a page error');
      // near misses are still errors: another net error, the same text inside a longer message, an uncaught error
      await page.evaluate(() => console.error('Failed to load resource: net::ERR_CONNECTION_RESET'));
      await page.evaluate((l) => console.error(`app: ${l}`), NETWORK_CHANGED);
      await page.evaluate(() => setTimeout(() => { throw new Error('uncaught in the page'); }));
      await until('the uncaught error to reach the harness', async () => pageErrors(page).length === 3);
      assert.deepEqual(pageErrors(page), ['Failed to load resource: net::ERR_CONNECTION_RESET', `app: ${NETWORK_CHANGED}`, 'uncaught in the page']);
      await assert.rejects(browser.close(), (e: Error) => /ERR_CONNECTION_RESET/.test(e.message) && /uncaught in the page/.test(e.message) && !e.message.split('\n').includes(NETWORK_CHANGED));
    });
  });

  it('closes clean when the only console error was the network-change event', async () => {
    await withPage([NETWORK_CHANGED], async (browser) => {
      await browser.close();
    });
  });
});

describe("a browser test's teardown", { skip }, () => {
  it('stops the servers when the page check fails, then throws the check', async () => {
    const stopped: string[] = [];
    const server = (name: string) => ({ stop: async () => void stopped.push(name) });
    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setContent('<p>a page</p>');
    await page.evaluate(() => console.error('a broken page'));
    await assert.rejects(closeBrowserAndStop(browser, server('a'), undefined, server('b')), /a broken page/);
    // a server left running kept the test file open until the runner's 25-minute per-file timeout
    assert.deepEqual(stopped, ['a', 'b']);
  });
});

describe('the browser harness does not wait forever on a Chromium that stopped answering', { skip }, () => {
  it('kills a frozen Chromium when close() runs out of time, and throws saying so', async () => {
    const browser = await launchBrowser({ closeMs: 2000 });
    const page = await browser.newPage();
    await page.setContent('<p>a page</p>');
    const ours = ourChromiumPids();
    assert.ok(ours.length > 0, 'the harness finds the Chromium it started among its children');
    for (const pid of ours) process.kill(pid, 'SIGSTOP'); // frozen: it answers nothing, not even Browser.close
    await assert.rejects(browser.close(), /timed out after 2000 ms waiting for Chromium to close/);
    await until('the frozen Chromium to be gone', async () => ours.every((pid) => !alive(pid)));
  });
});

/** Whether pid still exists as a process that is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
