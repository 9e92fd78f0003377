// Limits and periods of the WebSocket transport (src/api/ws/server.ts), set from the config.

export interface WsOptions {
  /** A connection whose unsent bytes would pass this is disconnected. */
  maxBufferedBytes: number;
  /** Smallest `set_heartbeat` interval accepted, seconds (Deribit: 10). */
  minHeartbeatSec: number;
  /** Channels one connection may hold. */
  maxSubscriptions: number;
  /** Conflation period of 100ms/agg2 channels. */
  tickMs: number;
  /** Open sockets allowed from one IP address (Deribit: 32). */
  maxConnectionsPerIp: number;
  /**
   * Requests of one connection received but not yet answered (they run one at a time, in order).
   * Past it a frame is answered at once with `10028` and not run: one socket cannot queue up work
   * that holds the engine thread long after it has gone.
   */
  maxQueuedRequests: number;
  /**
   * A connection that sends nothing, not even a pong to our ping, for this long is closed (ms; 0:
   * never). Pings go out every half of it; every WebSocket client answers them by itself.
   */
  idleTimeoutMs: number;
  /** Private subscriptions whose token was revoked or expired end within this (ms; credentialSweep.ts). */
  credentialSweepMs: number;
}

export const DEFAULT_WS_OPTIONS: WsOptions = {
  maxBufferedBytes: 4 * 1024 * 1024,
  minHeartbeatSec: 10,
  maxSubscriptions: 500,
  tickMs: 100,
  maxConnectionsPerIp: 256,
  maxQueuedRequests: 100,
  idleTimeoutMs: 60_000,
  credentialSweepMs: 1000,
};
