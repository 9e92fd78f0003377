// Prometheus metrics at GET /metrics (src/app/metrics.ts): process metrics and Strikebook's own,
// counted per started exchange, readable only from this host unless STRIKEBOOK_METRICS_PUBLIC=1.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { isLoopback } from '../../src/app/metrics.ts';
import { busyShare } from '../../src/app/loopStalls.ts';
import { atmCall } from '../helpers/market.ts';
import { adminToken, login, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

/** The value of one sample in Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? '').split(',').filter(Boolean).sort().join(',');
    if (got === want) return Number(m[3]);
  }
  return undefined;
}

async function scrape(url: string): Promise<string> {
  const r = await request(url, '/metrics');
  assert.equal(r.status, 200, r.text);
  return r.text;
}

const calls = (method: string, outcome: string) => ({ method, outcome });

describe('GET /metrics', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    // a snapshot every 2 records: the start (index and listings) takes one, inline (a small state)
    server = await startServer({ STRIKEBOOK_SNAPSHOT_EVERY: '2' });
    url = server.url;
  });
  after(() => server.stop());

  it('answers Prometheus text with the process metrics and the strikebook_ ones', async () => {
    const res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(sample(text, name) !== undefined, `${name} missing`);
    }
    assert.match(text, /^# TYPE nodejs_gc_duration_seconds histogram$/m);
    for (const [name, type] of [
      ['strikebook_rpc_requests_total', 'counter'],
      ['strikebook_journal_batches_total', 'counter'],
      ['strikebook_journal_records_total', 'counter'],
      ['strikebook_journal_seq', 'gauge'],
      ['strikebook_users', 'gauge'],
      ['strikebook_open_orders', 'gauge'],
      ['strikebook_instruments', 'gauge'],
      ['strikebook_ws_connections', 'gauge'],
      ['strikebook_snapshots_total', 'counter'],
      ['strikebook_rpc_duration_seconds', 'histogram'],
      ['strikebook_journal_commit_seconds', 'histogram'],
      ['strikebook_journal_write_seconds', 'histogram'],
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${name} ${type}$`, 'm'));
    }
    // the catalog was listed at start (journaled commands)
    assert.ok(sample(text, 'strikebook_instruments', { state: 'open' })! > 0);
    assert.equal(sample(text, 'strikebook_journal_seq'), server.app.services.ex.seq);
    assert.ok(sample(text, 'strikebook_snapshots_total', { how: 'inline' })! >= 1);
    for (const how of ['inline', 'background', 'failed'] as const) {
      assert.equal(sample(text, 'strikebook_snapshots_total', { how }), server.app.services.snapshots.counts[how], `snapshots ${how}`);
    }
  });

  it('counts successful and failing calls by method and outcome, over both HTTP paths and WebSocket', async () => {
    const before = await scrape(url);
    const okBefore = sample(before, 'strikebook_rpc_requests_total', calls('public/get_time', 'ok')) ?? 0;
    const failBefore = sample(before, 'strikebook_rpc_requests_total', calls('private/deposit_collateral', '10000')) ?? 0;

    await ok(url, 'public/get_time'); // POST: the fast path
    assert.equal((await rpc(url, 'public/get_time', {}, undefined, { get: true })).status, 200); // GET: Fastify
    const failed = await rpc(url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 });
    assert.equal(failed.body.error.code, 10000);
    const ws = await WsClient.open(url);
    try {
      await ws.ok('public/get_time');
    } finally {
      await ws.close();
    }

    const text = await scrape(url);
    assert.equal(sample(text, 'strikebook_rpc_requests_total', calls('public/get_time', 'ok')), okBefore + 3);
    assert.equal(sample(text, 'strikebook_rpc_requests_total', calls('private/deposit_collateral', '10000')), failBefore + 1);
    assert.equal(sample(text, 'strikebook_rpc_requests_total', calls('private/deposit_collateral', 'ok')), undefined);
  });

  it('counts journaled commands and shows users, resting orders and WebSocket connections', async () => {
    const admin = await adminToken(url);
    const trader = await userToken(url, admin, 'metrics@example.com');
    const before = await scrape(url);

    await ok(url, 'private/deposit_collateral', { currency: 'BTC', amount: 5 }, trader);
    const x = await atmCall(url);
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0] }, trader);
    const ws = await WsClient.open(url);
    let text: string;
    try {
      text = await scrape(url);
    } finally {
      await ws.close();
    }

    const grew = (name: string) => sample(text, name)! - sample(before, name)!;
    assert.ok(grew('strikebook_journal_records_total') >= 2, 'deposit and order are journal records');
    assert.ok(grew('strikebook_journal_batches_total') >= 1);
    assert.ok(grew('strikebook_journal_seq') >= 2);
    assert.equal(sample(text, 'strikebook_journal_seq'), server.app.services.ex.seq);
    assert.equal(sample(text, 'strikebook_users'), 2);
    assert.equal(sample(text, 'strikebook_open_orders'), 1);
    assert.equal(sample(text, 'strikebook_ws_connections'), 1);
  });

  it('has latency histograms: successful calls by method, journal commits and their writes on the writer thread', async () => {
    // the administrator exists when the tests above ran, not when this one runs alone
    const admin = await adminToken(url).catch(() => login(url, 'admin@example.com', 'admin-password-1'));
    const trader = await userToken(url, admin, 'latency@example.com');
    for (let i = 0; i < 3; i++) await ok(url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, trader);
    const text = await scrape(url);
    const method = 'private/deposit_collateral';
    const count = sample(text, 'strikebook_rpc_duration_seconds_count', { method })!;
    assert.equal(count, sample(text, 'strikebook_rpc_requests_total', calls(method, 'ok')), 'one observation per successful call');
    assert.ok(count >= 3);
    // buckets are cumulative, end in +Inf = count, and the sum is a positive number of seconds
    let previous = 0;
    for (const le of ['0.0001', '0.00025', '0.0005', '0.001', '0.002', '0.005', '0.01', '0.02', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '+Inf']) {
      const v = sample(text, 'strikebook_rpc_duration_seconds_bucket', { method, le })!;
      assert.ok(v >= previous, `bucket le=${le} below the one before`);
      previous = v;
    }
    assert.equal(previous, count);
    const sum = sample(text, 'strikebook_rpc_duration_seconds_sum', { method })!;
    assert.ok(sum > 0 && sum < count * 2.5, `sum ${sum}`);
    // a deposit is journaled: its call includes the wait for its batch, which the commit histogram saw
    assert.equal(sample(text, 'strikebook_journal_commit_seconds_count'), sample(text, 'strikebook_journal_batches_total'));
    assert.equal(sample(text, 'strikebook_journal_commit_seconds_bucket', { le: '+Inf' }), sample(text, 'strikebook_journal_batches_total'));
    // and the writer thread timed its own part of each (SQLite): one write per batch, each within its commit
    assert.equal(sample(text, 'strikebook_journal_write_seconds_count'), sample(text, 'strikebook_journal_batches_total'));
    const writeSum = sample(text, 'strikebook_journal_write_seconds_sum')!;
    assert.ok(writeSum > 0 && writeSum < sample(text, 'strikebook_journal_commit_seconds_sum')!, `writes ${writeSum} s within commits`);
  });

  it('shows a stall of the engine thread in the event-loop delay histogram, and times its own work by kind', async () => {
    const before = await scrape(url);
    const over20ms = (text: string) => sample(text, 'strikebook_event_loop_delay_seconds_count')! - sample(text, 'strikebook_event_loop_delay_seconds_bucket', { le: '0.02' })!;
    // the server runs in this process: hold its thread for 40 ms of CPU, as a long command would
    // (counted in CPU, not wall time: on a loaded machine a 40 ms wall spin may get a few ms of CPU,
    // and it is the CPU that the busy series must see; the wall time is at least as long)
    const cpuStart = process.cpuUsage();
    const started = performance.now();
    for (;;) {
      const used = process.cpuUsage(cpuStart);
      if (used.user + used.system >= 40_000 && performance.now() - started >= 40) break;
    }
    await new Promise((r) => setTimeout(r, 20));
    const text = await scrape(url);
    assert.ok(over20ms(text) >= over20ms(before) + 1, 'a 40 ms stall is a delay of more than 20 ms');
    const busyOver20ms = (t: string) => sample(t, 'strikebook_event_loop_busy_seconds_count')! - sample(t, 'strikebook_event_loop_busy_seconds_bucket', { le: '0.02' })!;
    assert.ok(busyOver20ms(text) >= busyOver20ms(before) + 1, 'a stall spent computing is busy time too');
    assert.ok(sample(text, 'strikebook_event_loop_delay_seconds_count')! > sample(before, 'strikebook_event_loop_delay_seconds_count')!, 'sampled all along');
    // the market timer runs every second (the index is manual here, so its work is small)
    let ticked = text;
    for (let i = 0; i < 50 && (sample(ticked, 'strikebook_engine_work_seconds_count', { work: 'market_tick' }) ?? 0) === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ticked = await scrape(url);
    }
    assert.ok(sample(ticked, 'strikebook_engine_work_seconds_count', { work: 'market_tick' })! >= 1, 'market ticks are timed');
    assert.ok(sample(ticked, 'strikebook_engine_work_seconds_count', { work: 'listing' })! >= 1, 'the start-up listing is timed');
    assert.match(ticked, /^# TYPE strikebook_engine_work_seconds histogram$/m);
  });

  it('answers clients on other hosts 404 in the JSON-RPC error envelope', async () => {
    const r = await server.app.http.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.7' });
    assert.equal(r.statusCode, 404);
    const body = r.json();
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.error.code, -32601);
    assert.doesNotMatch(r.body, /strikebook_/);
    // the same request from this host is answered
    const local = await server.app.http.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    assert.equal(local.statusCode, 200);
    assert.match(local.body, /strikebook_rpc_requests_total/);
  });
});

/** On a server of its own with the default settings: the one above snapshots every 2 records. */
describe('event-loop stalls', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer();
    url = server.url;
  });
  after(() => server.stop());

  it('counts a stall the thread spent blocked, not computing, as a delay but not as busy time', async () => {
    const over20ms = (text: string, name: string) => sample(text, `${name}_count`)! - sample(text, `${name}_bucket`, { le: '0.02' })!;
    const before = await scrape(url);
    // the busy series is bounded by the whole process's CPU, so it is judged once the process's other
    // threads (a just-started server's workers loading their modules, V8 compiling what the scrape
    // just ran, GC helpers) have gone quiet: a 25 ms sleep that costs the process under 3 ms of CPU
    for (let i = 0; i < 80; i++) {
      const c0 = process.cpuUsage();
      await new Promise((r) => setTimeout(r, 25));
      const c = process.cpuUsage(c0);
      if (c.user + c.system < 3000) break;
    }
    // blocks the thread without using CPU, as a thread the OS has descheduled would wait
    const cpu0 = process.cpuUsage();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60);
    const cpu = process.cpuUsage(cpu0);
    const othersMs = (cpu.user + cpu.system) / 1000;
    await new Promise((r) => setTimeout(r, 20));
    const text = await scrape(url);
    const delayGrew = over20ms(text, 'strikebook_event_loop_delay_seconds') - over20ms(before, 'strikebook_event_loop_delay_seconds');
    const busyGrew = over20ms(text, 'strikebook_event_loop_busy_seconds') - over20ms(before, 'strikebook_event_loop_busy_seconds');
    assert.ok(delayGrew >= 1, 'a 60 ms wait is a delay');
    assert.ok(busyGrew <= delayGrew, 'a sample is never busier than it was late');
    // (5 ms of margin: the sampling interval around the wait is a little longer than the wait)
    if (othersMs < 15) assert.equal(busyGrew, 0, `not 20 ms of work (the process used ${othersMs.toFixed(1)} ms of CPU during the wait)`);
  });
});

describe('who may read /metrics', () => {
  it('treats IPv4, IPv6 and IPv4-mapped loopback addresses as this host, and nothing else', () => {
    for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopback(a), true, a);
    for (const a of ['10.0.0.1', '192.168.1.10', '203.0.113.7', '::ffff:10.0.0.1', '2001:db8::1', '::', '0.0.0.0', '1127.0.0.1', '', undefined]) {
      assert.equal(isLoopback(a), false, String(a));
    }
  });

  it('parses STRIKEBOOK_METRICS_PUBLIC: off by default, 1 turns it on, anything else is refused', () => {
    assert.equal(loadConfig({}).metricsPublic, false);
    assert.equal(loadConfig({ STRIKEBOOK_METRICS_PUBLIC: '0' }).metricsPublic, false);
    assert.equal(loadConfig({ STRIKEBOOK_METRICS_PUBLIC: '1' }).metricsPublic, true);
    assert.throws(() => loadConfig({ STRIKEBOOK_METRICS_PUBLIC: 'yes' }), ConfigError);
  });

  it('serves every client when STRIKEBOOK_METRICS_PUBLIC=1', async () => {
    const server = await startServer({ STRIKEBOOK_METRICS_PUBLIC: '1' });
    try {
      const r = await server.app.http.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.7' });
      assert.equal(r.statusCode, 200);
      assert.match(r.body, /strikebook_journal_seq/);
    } finally {
      await server.stop();
    }
  });
});

describe('two exchanges in one process', () => {
  it('count separately', async () => {
    const a = await startServer();
    const b = await startServer();
    try {
      for (let i = 0; i < 3; i++) await ok(a.url, 'public/get_time');
      await ok(b.url, 'public/get_time');
      assert.equal(sample(await scrape(a.url), 'strikebook_rpc_requests_total', calls('public/get_time', 'ok')), 3);
      assert.equal(sample(await scrape(b.url), 'strikebook_rpc_requests_total', calls('public/get_time', 'ok')), 1);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describe('the busy share of an event-loop delay', () => {
  it('is the delay when the process computed all along, and the CPU used when it waited for a core', () => {
    assert.equal(busyShare(5, 7), 0.005, 'a 5 ms delay in an interval of 7 ms of CPU: 5 ms of work');
    assert.equal(busyShare(40, 1), 0.001, 'descheduled for 40 ms with 1 ms of CPU: at most 1 ms of work');
    assert.equal(busyShare(0, 2), 0, 'on time: no stall');
  });
});
