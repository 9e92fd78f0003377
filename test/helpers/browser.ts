// The browser tests' harness: Debian's Chromium driven by playwright-core, headless. Without a
// browser the tests are skipped with a loud reason, except under CI (env CI set), where a missing
// browser fails them: .ci/run installs the `chromium` package when it is missing.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildWeb, isStale } from '../../web/build.ts';
import { ROOT } from './server.ts';

export const CHROMIUM = process.env.STRIKEBOOK_CHROMIUM || '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test-artifacts/web');

/** Why the browser tests cannot run here, or null when they can. Throws under CI instead. */
export function browserSkipReason(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const reason = `no browser at ${CHROMIUM}: install Debian's chromium package (apt-get install -y chromium) to run the web app's browser tests`;
  if (process.env.CI) throw new Error(`CI must run the browser tests: ${reason}`);
  console.error(`\n!!! SKIPPING THE BROWSER TESTS: ${reason}\n`);
  return reason;
}

/** Builds web/dist when it is missing or older than its sources (a test file may run alone). */
export async function ensureWebBuilt(): Promise<void> {
  if (isStale()) await buildWeb();
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-dev-shm-usage'],
  });
}

/** Collects the page's console errors and failed requests (a CSP violation is a console error). */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
