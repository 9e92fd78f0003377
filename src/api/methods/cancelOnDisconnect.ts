// Cancel-on-disconnect settings (Deribit; API.md 6). On a WebSocket these three methods are answered
// by the connection itself (src/api/ws/server.ts), which knows the connection and the orders placed
// over it; these registry entries are what HTTP reaches (and what OpenAPI lists). HTTP has no
// connection, so only scope `account` applies there: it turns cancel-on-disconnect on for the
// user's next WebSocket connections (Deribit: "scope connection can be used only via WebSocket").
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { caller } from './common.ts';

const Scope = Type.Union([Type.Literal('connection'), Type.Literal('account')], { default: 'connection' });
const Params = Type.Object({ scope: Scope });

function accountScope(scope: string): void {
  if (scope !== 'account') throw reject(ERR.INVALID_ARGUMENTS, 'scope_connection_needs_websocket', 'scope');
}

function set(ctx: CallContext, scope: string, on: boolean): string {
  accountScope(scope);
  const id = caller(ctx).userId;
  if (on) ctx.services.codAccounts.add(id);
  else ctx.services.codAccounts.delete(id);
  return 'ok';
}

export const cancelOnDisconnectMethods = [
  defineMethod({
    name: 'private/enable_cancel_on_disconnect',
    scope: 'account:read_write',
    summary: 'Cancels the orders placed over a WebSocket connection when it closes or misses a heartbeat (a journaled command). Scope `connection` (WebSocket only) or `account` (the user\'s next connections start with it on).',
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
      return { scope: 'account', enabled: ctx.services.codAccounts.has(caller(ctx).userId) };
    },
  }),
];
