// The method registry: one entry per operation. HTTP routes, WebSocket dispatch, the inventory
// test and the input fuzzer are all generated from it; adding an operation is adding one entry.
import type { TObject, Static } from '@sinclair/typebox';
import type { Services } from '../../app/services.ts';
import type { Charge } from '../../app/credits.ts';
import type { ReplySink } from '../../sequencer/sequencer.ts';

/** Scopes (API.md 2). `none` is public; `admin` needs the admin role. */
export type Scope = 'none' | 'trade:read' | 'trade:read_write' | 'account:read' | 'account:read_write' | 'wallet:read' | 'wallet:read_write' | 'admin';

export interface Caller {
  userId: number;
  role: 'admin' | 'user';
  scopes: ReadonlySet<string>;
  /** hash of the access token used, when the caller used one (for logout) */
  tokenHash: string | null;
  /** the API key the call was made with (a signature, Basic, or a token issued to the key) */
  apiKeyId?: number;
}

export interface CallContext {
  services: Services;
  /** Authenticated caller, or null on a public call without credentials. */
  caller: Caller | null;
  ip: string;
  /**
   * Set by a transport that takes the answer by a call (dispatch.ts callDeferred): a handler that
   * submits one command may hand it to `Sequencer.submitThen` with this sink and return DEFERRED.
   */
  sink?: CallSink;
  /**
   * Set by the WebSocket edge only, never from params: the connection has cancel-on-disconnect
   * on, so an order this call places or edits is marked for it (`cod` in the command; src/engine/cod.ts).
   */
  cod?: boolean;
}

/** The receiver of a deferred call's reply (dispatch.ts callDeferred), with what call() keeps meanwhile. */
export interface CallSink extends ReplySink {
  /** performance.now() when the call started (its duration metric). */
  started: number;
  /** Who paid for the call (the reply's size is charged too). */
  charge: Charge | undefined;
  /** The HTTP request's id, an 11094's correlation id (CallInput.requestId); absent on a WebSocket. */
  requestId?: string;
}

export interface MethodDef<S extends TObject = TObject> {
  /** Canonical name, e.g. `private/buy`; canonical path is `/v1/` + name. */
  name: string;
  /** Other names the same operation answers to (Deribit aliases, `/v1/private/` twins of reads). */
  aliases?: string[];
  scope: Scope;
  /** What the operation does, where its name does not say it all (shown in OpenAPI and /docs). */
  summary?: string;
  /**
   * Methods whose authentication is decided by the handler from its params (create_admin with a
   * bootstrap token, create_user with an invite code): credentials are optional, not required.
   */
  optionalAuth?: boolean;
  /** A path parameter also accepted as `{path}/{value}`. */
  pathParam?: string;
  params: S;
  handler: (ctx: CallContext, params: Static<S>) => unknown | Promise<unknown>;
}

export function defineMethod<S extends TObject>(def: MethodDef<S>): MethodDef {
  return def as unknown as MethodDef;
}

/** Whether a set of granted scopes satisfies a method's scope (read_write implies read). */
export function scopeAllows(granted: ReadonlySet<string>, needed: Scope): boolean {
  if (needed === 'none') return true;
  if (granted.has(needed)) return true;
  if (needed.endsWith(':read')) return granted.has(needed + '_write');
  return false;
}
