// API-key management beyond create/list/remove (issue 31): enable, disable, edit, reset (a new
// secret), rename and change scope, each one journaled `update_api_key` command. IP whitelists are
// enforced wherever a key authenticates (src/api/rpc/dispatch.ts, public/auth).
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { newClientCredentials, type ApiKeyChange, type ApiKeyRecord } from '../../auth/apiKeys.ts';
import { encryptSecret } from '../../auth/crypto.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { keyScope, renderKey } from './apiKeys.ts';
import { caller, unwrap } from './common.ts';

/** Most addresses one key's whitelist holds. */
export const MAX_IP_WHITELIST = 32;

const KeyId = Type.Integer({ minimum: 1, maximum: 2 ** 31 });
const KeyName = Type.String({ maxLength: 64, pattern: '^[A-Za-z0-9_ .:-]*$' });
const MaxScope = Type.String({ minLength: 1, maxLength: 256 });

/** Submits the change; the answer is the key as list_api_keys shows it (plus extra fields, e.g. a new secret). */
function update(ctx: CallContext, id: number, change: ApiKeyChange, extra: Record<string, unknown> = {}) {
  const c = caller(ctx);
  return ctx.services.seq.submit({ t: 'update_api_key', userId: c.userId, id, change }, (r) => ({ ...renderKey(unwrap(r) as ApiKeyRecord), ...extra }));
}

/** The whitelist as given, each entry an IPv4 or IPv6 address (no ranges). */
function whitelist(ips: string[]): string[] {
  for (const ip of ips) if (isIP(ip) === 0) throw reject(ERR.INVALID_PARAMS, `ip_whitelist entries must be IP addresses, not ${JSON.stringify(ip.slice(0, 64))}`, 'ip_whitelist');
  return [...new Set(ips)];
}

export const apiKeyAdminMethods = [
  defineMethod({
    name: 'private/enable_api_key',
    scope: 'account:read_write',
    params: Type.Object({ id: KeyId }),
    handler: (ctx, p) => update(ctx, p.id, { enabled: true }),
  }),
  defineMethod({
    name: 'private/disable_api_key',
    scope: 'account:read_write',
    summary: 'The key authenticates nothing (Basic, signatures, public/auth) and the tokens issued to it end, until enable_api_key.',
    params: Type.Object({ id: KeyId }),
    handler: (ctx, p) => update(ctx, p.id, { enabled: false }),
  }),
  defineMethod({
    name: 'private/change_api_key_name',
    scope: 'account:read_write',
    params: Type.Object({ id: KeyId, name: KeyName }),
    handler: (ctx, p) => update(ctx, p.id, { name: p.name }),
  }),
  defineMethod({
    name: 'private/change_scope_in_api_key',
    scope: 'account:read_write',
    summary: "A new scope for the key (never more than the caller holds); the tokens issued to it under the old scope end.",
    params: Type.Object({ id: KeyId, max_scope: MaxScope }),
    handler: (ctx, p) => update(ctx, p.id, { scope: keyScope(caller(ctx), p.max_scope, 'max_scope') }),
  }),
  defineMethod({
    name: 'private/edit_api_key',
    scope: 'account:read_write',
    summary: `Scope, and optionally name, enabled and ip_whitelist (at most ${MAX_IP_WHITELIST} IP addresses; empty: any address) in one change.`,
    params: Type.Object({
      id: KeyId,
      max_scope: MaxScope,
      name: Type.Optional(KeyName),
      enabled: Type.Optional(Type.Boolean()),
      ip_whitelist: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: MAX_IP_WHITELIST })),
      enabled_features: Type.Optional(Type.Array(Type.Union([Type.Literal('restricted_block_trades'), Type.Literal('block_trade_approval')]), { maxItems: 2 })),
    }),
    handler(ctx, p) {
      if (p.enabled_features !== undefined && p.enabled_features.length > 0) throw reject(ERR.INVALID_ARGUMENTS, 'block_trades_not_supported', 'enabled_features');
      const change: ApiKeyChange = { scope: keyScope(caller(ctx), p.max_scope, 'max_scope') };
      if (p.name !== undefined) change.name = p.name;
      if (p.enabled !== undefined) change.enabled = p.enabled;
      if (p.ip_whitelist !== undefined) change.ipWhitelist = whitelist(p.ip_whitelist);
      return update(ctx, p.id, change);
    },
  }),
  defineMethod({
    name: 'private/reset_api_key',
    scope: 'account:read_write',
    summary: 'A new client secret for the key (shown only in this answer); the old secret and the tokens issued to the key end. The client id stays.',
    params: Type.Object({ id: KeyId }),
    async handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const rec = await s.seq.read(() => s.ex.apiKeys.byId.get(p.id));
      if (rec === undefined || rec.userId !== c.userId) throw reject(ERR.NOT_FOUND, 'api_key_not_found', 'id');
      // generated and encrypted here, at the edge, as create's is: the journal holds only the ciphertext
      const { clientSecret } = newClientCredentials();
      return update(ctx, p.id, { encSecret: encryptSecret(clientSecret, s.serverKey, rec.clientId) }, { client_secret: clientSecret });
    },
  }),
];
