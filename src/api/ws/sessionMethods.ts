// The methods a WebSocket connection answers itself (API.md 6): subscriptions, heartbeats and
// cancel-on-disconnect, with the connection's credentials (auth on the socket or per call) and the
// orders it placed, which cancel-on-disconnect cancels when it closes.
import type { Services } from '../../app/services.ts';
import { ERR } from '../../domain/errors.ts';
import { StandbyRefusal } from '../../sequencer/sequencer.ts';
import { chargeSessionCall, tokenCaller, type CallOutput } from '../rpc/dispatch.ts';
import { ERROR_TABLE, Reject, errorBody, httpStatus, standbyErrorBody } from '../rpc/errors.ts';
import { scopeAllows, type Caller } from '../rpc/registry.ts';
import { PlacedJson } from '../orderJson.ts';
import { parseOrderId } from '../render.ts';
import { isPrivate } from './channels.ts';
import { PLACED_SWEEP_MIN, PlacedIds, type Connection } from './connection.ts';
import { channelScope, followNewToken } from './credentialSweep.ts';
import type { StreamHub } from './hub.ts';
import { stays } from './methodKinds.ts';
import type { WsOptions } from './wsOptions.ts';

/** A JSON-RPC error answer. */
export function fail(code: keyof typeof ERROR_TABLE, reason?: string, param?: string): CallOutput {
  return {
    status: ERROR_TABLE[code].status,
    error: errorBody(new Reject(code, reason, param)),
  };
}

export interface SessionContext {
  s: Services;
  hub: StreamHub;
  opts: WsOptions;
  /** cancel-on-disconnect runs still going (the transport's close waits for them) */
  codPending: Set<Promise<unknown>>;
  /** the transport's close of a connection (a missed heartbeat closes it) */
  onClose(c: Connection): void;
}

/** The session methods and the connection bookkeeping the transport's request path uses. */
export function sessionHandlers(ctx: SessionContext) {
  const { s, hub, opts, codPending, onClose } = ctx;
  /** Account-scope cancel-on-disconnect: new connections of these users start with it on (engine
   *  state, a journaled `cod_account`; read only here). */
  const accountCod = s.ex.codAccounts;

  /**
   * Marks (or unmarks) in the engine the orders the connection placed so far, so that the state a
   * restart or a takeover recovers says what the connection would cancel if it closed now: every
   * order it placed while COD is on, none while it is off (src/engine/cod.ts). Submitted at once,
   * before any later request of the connection can place an order.
   */
  const markPlaced = (c: Connection, on: boolean): Promise<unknown> => {
    const marks: Promise<unknown>[] = [];
    for (const [userId, ids] of c.placed) {
      if (ids.size === 0) continue;
      marks.push(s.seq.submit({ t: 'cod_mark', userId, orderIds: [...ids].sort((a, b) => a - b), on }, (r) => r));
    }
    return Promise.all(marks);
  };

  /** Turns the connection's COD on or off, marking or unmarking what it placed before. */
  const setCod = (c: Connection, on: boolean): Promise<unknown> => {
    if (c.cod === on) return Promise.resolve();
    c.cod = on;
    return markPlaced(c, on);
  };

  const cancelOnDisconnect = (c: Connection) => {
    if (!c.cod) return;
    const run = c.whenIdle().then(async () => {
      // logout closes without cancelling (Deribit): its orders stay, so they lose their mark too,
      // or a restart would cancel what the live path kept
      if (c.loggedOut) return markPlaced(c, false);
      for (const [userId, ids] of c.placed) {
        if (ids.size === 0) continue;
        await s.seq.submit({ t: 'cancel_orders', userId, orderIds: [...ids].sort((a, b) => a - b), reason: 'cancel_on_disconnect' }, (r) => r);
      }
    });
    const p = run.catch((err: unknown) => s.log.error({ err, conn: c.id }, 'cancel-on-disconnect failed'));
    codPending.add(p);
    void p.finally(() => codPending.delete(p));
  };


  const track = (c: Connection, userId: number, result: unknown) => {
    type Placed = { order_id?: string; order_state?: string };
    let set = c.placed.get(userId);
    if (result instanceof PlacedJson) {
      // buy/sell/edit: their answer is text, with the order's id and state beside it
      if (!stays(result.orderState)) return;
      if (!set) c.placed.set(userId, (set = new PlacedIds()));
      set.add(result.orderId);
    } else {
      // mass_quote answers a list of `orders`
      const orders = (result as { orders?: Placed[] } | null)?.orders;
      for (const order of Array.isArray(orders) ? orders : []) {
        if (!order || typeof order.order_id !== 'string' || !stays(order.order_state)) continue;
        const id = parseOrderId(order.order_id);
        if (id === null) continue;
        if (!set) c.placed.set(userId, (set = new PlacedIds()));
        set.add(id);
      }
    }
    if (!set || set.size <= set.sweepAt) return;
    // forget orders that are no longer open, so the set stays within twice the open orders
    const user = s.ex.users.get(userId);
    for (const x of set) {
      if (user?.orders.get(x)?.state === 'open' || s.ex.triggers.get(userId, x)?.state === 'untriggered') continue;
      if (s.ex.comboBooks.orderOf(userId, x)?.state === 'open') continue; // a combo order (src/combos/book.ts)
      set.delete(x);
    }
    set.sweepAt = Math.max(PLACED_SWEEP_MIN, 2 * set.size);
  };

  /** A call's caller: its `access_token` param (that call only), else the connection's. (As
   *  resolveCaller would answer for these credentials, with the token hashed once per connection.) */
  const authOf = (c: Connection, params: Record<string, unknown>): Caller | Reject | null => {
    if (typeof params.access_token === 'string') return tokenCaller(s, c.hashOf(params.access_token));
    if (c.token === undefined) return null;
    return tokenCaller(s, c.hashOf(c.token));
  };

  const setAuth = (c: Connection, token: string) => {
    const previous = c.token === undefined ? null : c.hashOf(c.token);
    const r = tokenCaller(s, c.hashOf(token));
    if (!(r instanceof Reject)) {
      followNewToken(c, previous, r);
      c.token = token;
      if (accountCod.has(r.userId)) setCod(c, true).catch((err: unknown) => s.log.error({ err, conn: c.id }, 'cancel-on-disconnect marks failed'));
    }
  };

  async function subscribe(c: Connection, params: Record<string, unknown>, priv: boolean): Promise<CallOutput> {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0 || channels.some((x) => typeof x !== 'string')) return fail(ERR.INVALID_PARAMS, 'channels must be a non-empty array of strings', 'channels');
    let caller: Caller | null = null;
    const a = authOf(c, params);
    if (a instanceof Reject) return { status: 401, error: errorBody(a) };
    caller = a;
    if (priv && !caller) return fail(ERR.AUTHORIZATION_REQUIRED);
    const initial: Buffer[] = [];
    const done: string[] = [];
    let tooMany = false;
    await s.seq.read(() => {
      // as Deribit: a channel the server does not serve is left out of the answer and the rest
      // subscribe (issue 31; a bot that batches its subscriptions otherwise got nothing at all)
      for (const ch of channels as string[]) {
        if (c.closed) return;
        if (c.subs.has(ch)) {
          done.push(ch);
          continue;
        }
        const spec = hub.parse(ch);
        if (!spec) continue;
        // private channels need private/subscribe and an authenticated connection; raw intervals
        // need authentication (Deribit 13778): both are silently left out of the result otherwise
        if (isPrivate(spec) && (!priv || !caller)) continue;
        // an API key's scopes bound what it may stream, as they bound what it may call
        if (isPrivate(spec) && !scopeAllows(caller!.scopes, channelScope(spec))) continue;
        if ('cadence' in spec && spec.cadence === 'raw' && !caller) continue;
        if (c.subs.size >= opts.maxSubscriptions) {
          tooMany = true;
          break;
        }
        const userId = isPrivate(spec) ? caller!.userId : null;
        c.subs.set(ch, { spec, userId, tokenHash: userId === null ? null : caller!.tokenHash });
        const first = hub.subscribe(c, ch, spec, userId);
        if (Array.isArray(first)) initial.push(...first);
        else if (first) initial.push(first);
        done.push(ch);
      }
    });
    if (tooMany && done.length === 0) return fail(ERR.INVALID_ARGUMENTS, `at most ${opts.maxSubscriptions} subscriptions per connection`, 'channels');
    // the reply goes out before the snapshots it announces
    return { status: 200, result: done, after: initial } as CallOutput & { after: Buffer[] };
  }

  function unsubscribe(c: Connection, channels: unknown): CallOutput {
    if (!Array.isArray(channels)) return fail(ERR.INVALID_PARAMS, 'channels must be an array of strings', 'channels');
    const removed: string[] = [];
    for (const ch of channels) {
      const sub = typeof ch === 'string' ? c.subs.get(ch) : undefined;
      if (!sub) continue;
      hub.unsubscribe(c, ch as string, sub.spec, sub.userId);
      c.subs.delete(ch as string);
      removed.push(ch as string);
    }
    return { status: 200, result: removed };
  }

  function privateCheck(c: Connection, params: Record<string, unknown>): Caller | CallOutput {
    const a = authOf(c, params);
    if (a instanceof Reject) return { status: 401, error: errorBody(a) };
    if (!a) return fail(ERR.AUTHORIZATION_REQUIRED);
    return a;
  }

  function codScope(params: Record<string, unknown>): 'connection' | 'account' | null {
    const sc = params.scope ?? 'connection';
    return sc === 'connection' || sc === 'account' ? sc : null;
  }

  /** Streaming and session methods (API.md 6); null when `method` is not one of them. */
  async function session(c: Connection, method: string, params: Record<string, unknown>): Promise<CallOutput | null> {
    switch (method) {
      case 'public/subscribe':
        return subscribe(c, params, false);
      case 'private/subscribe':
        return subscribe(c, params, true);
      // after every round of the batches sealed so far (the hub holds a batch's round until it is
      // durable): nothing of a channel follows its unsubscribe answer
      case 'public/unsubscribe':
      case 'private/unsubscribe':
        return s.seq.read(() => unsubscribe(c, params.channels));
      case 'public/unsubscribe_all':
      case 'private/unsubscribe_all':
        return s.seq.read(() => {
          unsubscribe(c, [...c.subs.keys()]);
          return { status: 200, result: 'ok' };
        });
      case 'public/set_heartbeat': {
        const iv = params.interval;
        if (typeof iv !== 'number' || !Number.isFinite(iv) || iv < opts.minHeartbeatSec || iv > 3600) return fail(ERR.INVALID_PARAMS, `interval must be a number of seconds >= ${opts.minHeartbeatSec}`, 'interval');
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.awaitingTest = false;
        c.heartbeat = setInterval(() => {
          if (c.awaitingTest) {
            // the previous test_request went unanswered: the connection is considered dead
            s.log.info({ conn: c.id }, 'heartbeat missed; closing websocket');
            c.ws.terminate();
            onClose(c);
            return;
          }
          c.awaitingTest = true;
          c.send('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}');
        }, iv * 1000);
        c.heartbeat.unref();
        return { status: 200, result: 'ok' };
      }
      case 'public/disable_heartbeat':
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.heartbeat = null;
        c.awaitingTest = false;
        return { status: 200, result: 'ok' };
      case 'private/enable_cancel_on_disconnect':
      case 'private/disable_cancel_on_disconnect':
      case 'private/get_cancel_on_disconnect': {
        const who = privateCheck(c, params);
        if ('status' in who) return who;
        // Deribit's scopes: reading the setting needs account:read, changing it account:read_write
        if (!scopeAllows(who.scopes, method === 'private/get_cancel_on_disconnect' ? 'account:read' : 'account:read_write')) return fail(ERR.SCOPE_EXCEEDED, `requires ${method === 'private/get_cancel_on_disconnect' ? 'account:read' : 'account:read_write'}`);
        const scope = codScope(params);
        if (scope === null) return fail(ERR.INVALID_PARAMS, 'scope must be connection or account', 'scope');
        if (method === 'private/get_cancel_on_disconnect') {
          return { status: 200, result: { scope, enabled: scope === 'connection' ? c.cod : accountCod.has(who.userId) } };
        }
        const refused = chargeSessionCall(s, method, who, c.ip);
        if (refused !== undefined) {
          const r = await refused;
          return { status: httpStatus(r), error: errorBody(r) };
        }
        const on = method === 'private/enable_cancel_on_disconnect';
        try {
          // the account flag, then the connection's: both journaled before the answer
          if (scope === 'account') await s.seq.submit({ t: 'cod_account', userId: who.userId, on }, (r) => r);
          await setCod(c, on);
        } catch (err) {
          if (err instanceof StandbyRefusal) return { status: ERROR_TABLE[ERR.RETRY].status, error: standbyErrorBody(err.leaderUrl) };
          throw err;
        }
        return { status: 200, result: 'ok' };
      }
      default:
        return null;
    }
  }

  return { session, authOf, setAuth, track, cancelOnDisconnect };
}
