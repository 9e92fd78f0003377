// Gateway entry point: `npm run gateway` (docs/operations.md, "Gateways and NATS").
import pino from 'pino';
import { startGateway } from './gateway.ts';
import { checkGatewayEnvOrExit } from '../app/startup.ts';

function int(key: string, def: number, min: number, max: number): number {
  const raw = process.env[key];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`configuration error: ${key} must be an integer in [${min}, ${max}], got "${raw}"`);
    process.exit(2);
  }
  return n;
}

function required(key: string): string {
  const v = process.env[key];
  if (!v) {
    console.error(`configuration error: ${key} is required for a gateway`);
    process.exit(2);
  }
  return v;
}

async function main(): Promise<void> {
  // the settings' schema (src/app/configSchema.ts): every problem one line, exit 2, before anything opens
  checkGatewayEnvOrExit();
  const log = pino({ level: process.env.LOG_LEVEL || 'info' });
  const gw = await startGateway({
    leaderUrl: required('STRIKEBOOK_LEADER_URL'),
    natsUrl: required('NATS_URL'),
    stream: process.env.STRIKEBOOK_NATS_STREAM || 'STRIKEBOOK',
    prefix: process.env.STRIKEBOOK_NATS_SUBJECT_PREFIX || 'strikebook',
    port: int('PORT', 8090, 0, 65535),
    host: process.env.HOST || '127.0.0.1',
    maxBufferedBytes: int('STRIKEBOOK_WS_MAX_BUFFERED', 4 * 1024 * 1024, 1024, 2 ** 30),
    recheckMs: int('STRIKEBOOK_GATEWAY_RECHECK_MS', 10_000, 100, 3_600_000),
    maxConnectionsPerIp: int('STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP', 256, 1, 1e6),
    idleTimeoutMs: int('STRIKEBOOK_WS_IDLE_TIMEOUT_MS', 60_000, 0, 86_400_000),
    minHeartbeatSec: int('STRIKEBOOK_WS_MIN_HEARTBEAT', 10, 1, 3600),
    maxUpstreams: int('STRIKEBOOK_GATEWAY_MAX_UPSTREAMS', 1024, 1, 1e6),
    maxUpstreamsPerIp: int('STRIKEBOOK_GATEWAY_MAX_UPSTREAMS_PER_IP', 32, 1, 1e6),
    forwardTimeoutMs: int('STRIKEBOOK_GATEWAY_FORWARD_TIMEOUT_MS', 5_000, 100, 600_000),
    poolSockets: int('STRIKEBOOK_GATEWAY_POOL_SOCKETS', 32, 1, 4096),
    poolMaxQueuedPerIp: int('STRIKEBOOK_GATEWAY_POOL_QUEUE_PER_IP', 256, 1, 1e6),
    framesPerSecPerIp: int('STRIKEBOOK_GATEWAY_FRAMES_PER_SEC_PER_IP', 1000, 1, 1e7),
    log,
  });
  log.info({ url: gw.url }, `Strikebook gateway listening on ${gw.url}`);
  const stop = () => {
    gw.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
