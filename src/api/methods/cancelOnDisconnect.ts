// Cancel-on-disconnect settings (Deribit; API.md 6). On a WebSocket these three methods are answered
// by the connection itself (src/api/ws/server.ts), which knows the connection and the orders placed
// over it; these registry entries are what HTTP reaches (and what OpenAPI lists). HTTP has no
// connection, so only scope `account` applies there: it turns cancel-on-disconnect on for the
// user's next WebSocket connections (Deribit: "scope connection can be used only via WebSocket").
// The account flag is engine state (a journaled `cod_account` command, src/engine/cod.ts), so it
// survives a restart and a takeover.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { caller, unwrap } from './common.ts';

const Scope = Type.Union([Type.Literal('connection'), Type.Literal('account')], { default: 'connection' });
const Params = Type.Object({ scope: Scope });

function accountScope(scope: string): void {
  if (scope !== 'account') throw reject(ERR.INVALID_ARGUMENTS, 'scope_connection_needs_websocket', 'scope');
}

function set(ctx: CallContext, scope: string, on: boolean): Promise<string> {
  accountScope(scope);
  return ctx.services.seq.submit({ t: 'cod_account', userId: caller(ctx).userId, on }, (r) => {
    unwrap(r);
    return 'ok';
  });
}

export const cancelOnDisconnectMethods = [
  defineMethod({
    name: 'private/enable_cancel_on_disconnect',
    scope: 'account:read_write',
    summary: 'Cancels the orders placed over a WebSocket connection when it closes or misses a heartbeat, or when the server restarts or fails over while it is open (journaled commands). Scope `connection` (WebSocket only) or `account` (the user\'s next connections start with it on; kept across restarts).',
    params: Params,
    handler: (ctx, p) => set(ctx, p.scope, true),
  }),
  defineMethod({
    name: 'private/disable_cancel_on_disconnect',
    scope: 'account:read_write',
    summary: 'Turns cancel-on-disconnect off for the connection (WebSocket only) or the account.',
    params: Params,
    handler: (ctx, p) => set(ctx, p.scope, false),
  }),
  defineMethod({
    name: 'private/get_cancel_on_disconnect',
    scope: 'account:read',
    summary: 'Whether cancel-on-disconnect is on: `{scope, enabled}`.',
    params: Params,
    handler(ctx, p) {
      accountScope(p.scope);
      const userId = caller(ctx).userId;
      // after what is applied is durable, as every read
      return ctx.services.seq.read(() => ({ scope: 'account', enabled: ctx.services.ex.codAccounts.has(userId) }));
    },
  }),
];
