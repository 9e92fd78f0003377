// WebSocket fan-out benchmark: 1,000 connections subscribed to `book.X.100ms` and `trades.X.100ms`
// for several instruments X, with a steady order flow (every 10 ms, on every instrument, a resting
// ask and a buy that takes the best ask). Reports deliveries per second (notifications received by
// the clients) and the delivery delay: arrival time at the client minus the start of the server's
// publish round that sent it (the 100 ms conflation wait is by design and not counted).
//
// The server runs in this process (in-process sequencer and journal on disk, order flow submitted
// to the sequencer directly, so the load is the fan-out and not HTTP order entry); the clients run in
// a child process, so each side has one of the machine's two cores.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { startExchange } from '../src/app/services.ts';
import { fanoutMarket } from './fanoutMarket.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const WS_CONNECTIONS = 1000;
export const WS_INSTRUMENTS = 10;
/** Client processes (the connections are split between them). */
const CLIENT_PROCESSES = 2;
export const TARGET_DELIVERIES = 150_000;
export const TARGET_P99_MS = 50;
const WARMUP_MS = 2_000;
const MEASURE_MS = 12_000;

export async function runWsBench(): Promise<{ lines: string[]; ok: boolean }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-wsbench-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: 'bench-bootstrap-token-0123456789',
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    STRIKEBOOK_WS_MAX_BUFFERED: String(16 * 1024 * 1024),
    // all 1,000 bench clients connect from 127.0.0.1
    STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_RATE_LIMITS: '0',
    LOG_LEVEL: 'silent',
  });
  const app = await startExchange(config, pino({ level: 'silent' }));
  const s = app.services;
  const flow: Array<() => void> = [];
  try {
    const { ladders, startFlow } = await fanoutMarket(s, WS_INSTRUMENTS);

    // rounds: start time per published key (channel|change_id, channel|last trade id)
    const published = new Map<string, number>();
    let rounds = 0;
    let lastTradeSeen = s.ex.nextTradeId - 1;
    app.ws.hub.onRound = (cadence, at) => {
      if (cadence !== 'agg') return;
      rounds++;
      for (const l of ladders) published.set(`book.${l.inst.name}.100ms|${s.ex.markets.get(l.inst.id)!.changeId}`, at);
      const lastTrade = s.ex.nextTradeId - 1;
      if (lastTrade !== lastTradeSeen) {
        for (const l of ladders) {
          const tr = s.ex.markets.get(l.inst.id)!.trades;
          if (tr.length && tr[tr.length - 1].id > lastTradeSeen) published.set(`trades.${l.inst.name}.100ms|${tr[tr.length - 1].id}`, at);
        }
        lastTradeSeen = lastTrade;
      }
    };

    interface ClientResult {
      deliveries: number;
      unmatched: number;
      hist: number[];
      max: number;
      cpu: number;
    }
    const clients = Array.from({ length: CLIENT_PROCESSES }, () =>
      fork(path.join(HERE, 'wsBenchClient.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
    const fromClients = <T>(pick: (m: any) => T | undefined) =>
      Promise.all(
        clients.map(
          (client) =>
            new Promise<T>((resolve, reject) => {
              const on = (m: any) => {
                const v = pick(m);
                if (v !== undefined) {
                  client.off('message', on);
                  resolve(v);
                }
              };
              client.on('message', on);
              client.once('exit', (code) => reject(new Error(`bench client exited (${code})`)));
            }),
        ),
      );
    const broadcast = (msg: unknown) => {
      for (const c of clients) c.send(msg as object);
    };
    const channels = ladders.flatMap((l) => [`book.${l.inst.name}.100ms`, `trades.${l.inst.name}.100ms`]);
    const ready = fromClients((m) => (m.ready ? true : undefined));
    broadcast({ url: app.url.replace(/^http/, 'ws') + '/ws/api/v2', connections: WS_CONNECTIONS / CLIENT_PROCESSES, channels });
    const t0 = performance.now();
    await ready;
    const connectMs = performance.now() - t0;

    // steady order flow: every 10 ms on every instrument, a new ask and a buy taking the best ask
    flow.push(startFlow(10));
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const wall = () => performance.timeOrigin + performance.now();
    const start = wall();
    const roundsBefore = rounds;
    const cpu0 = process.cpuUsage();
    const cmdsBefore = s.ex.seq;
    broadcast({ window: [start, start + MEASURE_MS] });
    await new Promise((r) => setTimeout(r, MEASURE_MS));
    const roundsIn = rounds - roundsBefore;
    const cpu = process.cpuUsage(cpu0);
    const serverCpu = (cpu.user + cpu.system) / 1000 / MEASURE_MS;
    const cmdsIn = s.ex.seq - cmdsBefore;
    for (const stop of flow) stop();
    await new Promise((r) => setTimeout(r, 300));
    const results = fromClients((m) => m.result as ClientResult | undefined);
    broadcast({ publish: [...published] });
    const parts = await results;
    const hist = parts[0].hist.map((_, b) => parts.reduce((sum, p) => sum + p.hist[b], 0));
    const total = hist.reduce((a, b) => a + b, 0);
    const quantile = (q: number) => {
      let acc = 0;
      for (let b = 0; b < hist.length; b++) if ((acc += hist[b]) >= q * total) return (b + 1) / 10;
      return NaN;
    };
    const r = {
      deliveries: parts.reduce((a, p) => a + p.deliveries, 0),
      unmatched: parts.reduce((a, p) => a + p.unmatched, 0),
      p50: quantile(0.5),
      p99: quantile(0.99),
      max: Math.max(...parts.map((p) => p.max)),
      cpu: parts.reduce((a, p) => a + p.cpu, 0),
    };
    const perSec = r.deliveries / (MEASURE_MS / 1000);
    const ok = perSec >= TARGET_DELIVERIES && r.p99 <= TARGET_P99_MS && r.unmatched === 0;
    return {
      ok,
      lines: [
        `connections ${WS_CONNECTIONS} (${CLIENT_PROCESSES} client processes), channels per connection ${channels.length} (book + trades, 100ms, ${ladders.length} instruments); connect + subscribe ${Math.round(connectMs)} ms`,
        `order flow ${Math.round(cmdsIn / (MEASURE_MS / 1000))} commands/s; publish rounds ${roundsIn} in ${MEASURE_MS / 1000} s; CPU: server ${Math.round(serverCpu * 100)}%, ${CLIENT_PROCESSES} client processes ${Math.round(r.cpu * 100)}% of a core`,
        `deliveries ${r.deliveries} in ${MEASURE_MS / 1000} s = ${Math.round(perSec)}/s (target >= ${TARGET_DELIVERIES})`,
        `delivery delay after the publish round starts: p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms (target p99 <= ${TARGET_P99_MS}); unmatched ${r.unmatched}`,
        ok ? 'OK' : 'FAIL',
      ],
    };
  } finally {
    for (const stop of flow) stop();
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
