// Long tasks of the chain page with the demo market (issue 33): every listed BTC series quoted,
// the expiry with the most series open; tasks during the first render and over live updates.
// `node --import tsx bench/chainLongTasks.ts` (a profiling aid beside bench/webBench.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { chromium } from 'playwright-core';
import { loadConfig } from '../src/app/config.ts';
import { startExchange } from '../src/app/services.ts';

const CHROMIUM = process.env.STRIKEBOOK_CHROMIUM || '/usr/bin/chromium';
const BOOTSTRAP = 'bench-bootstrap-token-0123456789';
const LIVE_MS = Number(process.env.LIVE_MS ?? 20_000);

async function rpc(url: string, method: string, params: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${url}/api/v2/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-lt-'));
const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', STRIKEBOOK_DATA_DIR: dataDir, STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP, STRIKEBOOK_INDEX_FEED: 'simulated', STRIKEBOOK_DEMO_MAKER: '1', STRIKEBOOK_RATE_LIMITS: '0', LOG_LEVEL: 'silent' });
const app = await startExchange(config, pino({ level: 'silent' }));
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-dev-shm-usage'] });
try {
  const url = app.url;
  await rpc(url, 'private/create_admin', { email: 'a@example.com', password: 'bench-password-1', bootstrap_token: BOOTSTRAP });
  const t = await rpc(url, 'public/auth', { grant_type: 'password', username: 'a@example.com', password: 'bench-password-1' });
  const session = JSON.stringify({ email: 'a@example.com', access: t.access_token, refresh: t.refresh_token, expiresAt: Date.now() + t.expires_in * 1000, admin: true });
  const list = await rpc(url, 'public/get_instruments', { currency: 'BTC', kind: 'option' });
  const counts = new Map<number, number>();
  for (const i of list) counts.set(i.expiration_timestamp, (counts.get(i.expiration_timestamp) ?? 0) + 1);
  const [expiry, n] = [...counts].sort((a, b) => b[1] - a[1])[0];
  await new Promise((r) => setTimeout(r, 8000));
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await ctx.addInitScript((s: string) => location.protocol.startsWith('http') && sessionStorage.setItem('strikebook.session', s), session);
  await ctx.addInitScript({ content: `window.__lt = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__lt.push([Math.round(e.startTime), Math.round(e.duration)]); }).observe({ type: 'longtask', buffered: true });` });
  const page = await ctx.newPage();
  await page.goto(`${url}/chain/BTC?expiry=${expiry}`);
  await page.locator('table.chain[data-complete=true]').waitFor({ timeout: 60_000 });
  const load = await page.evaluate(() => (window as any).__lt.splice(0));
  const cdp = process.env.PROFILE ? await ctx.newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  await page.waitForTimeout(LIVE_MS);
  if (cdp) {
    const { profile } = (await cdp.send('Profiler.stop')) as any;
    // self time by function, from the samples
    const byId = new Map<number, any>(profile.nodes.map((nd: any) => [nd.id, nd]));
    const self = new Map<string, number>();
    const dts: number[] = profile.timeDeltas;
    profile.samples.forEach((id: number, k: number) => {
      const nd = byId.get(id);
      const key = `${nd.callFrame.functionName || '(anon)'} ${nd.callFrame.url.split('/').pop()}:${nd.callFrame.lineNumber}`;
      self.set(key, (self.get(key) ?? 0) + (dts[k] ?? 0) / 1000);
    });
    const total = [...self.values()].reduce((a, b) => a + b, 0);
    console.log(`profile ${Math.round(total)} ms`);
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${Math.round(v)} ms  ${k}`);
  }
  const liveTasks = await page.evaluate(() => (window as any).__lt.splice(0));
  console.log(`${n} series; load long tasks ${JSON.stringify(load)}; live ${JSON.stringify(liveTasks)}`);
} finally {
  await browser.close();
  await app.close();
  rmSync(dataDir, { recursive: true, force: true });
}
