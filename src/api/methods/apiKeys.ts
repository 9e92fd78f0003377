// API-key management (API.md 3.1 "API keys"): create (the secret is shown only in this reply),
// list (never a secret), remove. The secret is generated and encrypted here, at the edge: the
// journaled command carries only the ciphertext.
import { Type } from '@sinclair/typebox';
import { newClientCredentials, parseKeyScope, verifyClientSignature, verifySecret, type ApiKeyRecord, type ApiKeys } from '../../auth/apiKeys.ts';
import type { ReplayGuard } from '../../auth/replayGuard.ts';
import { encryptSecret } from '../../auth/crypto.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod, scopeAllows, type Caller, type Scope } from '../rpc/registry.ts';
import { caller, unwrap } from './common.ts';

interface GrantParams {
  grant_type: string;
  client_id?: string;
  client_secret?: string;
  timestamp?: number;
  signature?: string;
  nonce?: string;
  data?: string;
}

/** public/auth with `client_credentials` or `client_signature`: the key, or 13004. */
export function apiKeyGrant(keys: ApiKeys, serverKey: Buffer, p: GrantParams, now: readonly number[], replay: ReplayGuard): ApiKeyRecord {
  if (p.client_id === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'client_id');
  if (p.grant_type === 'client_credentials') {
    if (p.client_secret === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'client_secret');
    return unwrap(verifySecret(keys, serverKey, p.client_id, p.client_secret, ERR.INVALID_CREDENTIALS));
  }
  if (p.timestamp === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'timestamp');
  if (p.signature === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'signature');
  return unwrap(verifyClientSignature(keys, serverKey, { client_id: p.client_id, timestamp: p.timestamp, signature: p.signature, nonce: p.nonce ?? '', data: p.data ?? '' }, now, replay));
}

/**
 * Stands for `client_secret` in every answer but the two that create a secret (create_api_key,
 * reset_api_key): Deribit shows the secret in every key object, but here it is shown once and
 * stored encrypted (docs/security.md), so another answer carries this mask, never the secret.
 */
export const SECRET_MASK = '********';

export function renderKey(k: ApiKeyRecord): Record<string, unknown> {
  return {
    id: k.id,
    client_id: k.clientId,
    client_secret: SECRET_MASK,
    scope: k.scope,
    // Deribit's names for the same fields: max_scope as the list of its grants
    max_scope: k.scope.split(' ').filter((g) => g !== ''),
    name: k.name,
    enabled: k.disabled !== true,
    default: false,
    ip_whitelist: k.ipWhitelist ?? [],
    // block-trade features (restricted_block_trades, block_trade_approval) arrive with issue 34
    enabled_features: [],
    creation_timestamp: k.created,
    timestamp: k.created,
  };
}

/**
 * A requested key scope, normalised (parseKeyScope), that the caller holds every grant of: a key can
 * never hold more than the credentials that create or change it (no escalation by key).
 */
export function keyScope(c: Caller, requested: string, param: string): string {
  const scope = parseKeyScope(requested);
  if (scope === null || scope === '') throw reject(ERR.INVALID_PARAMS, 'scope must name trade:, account: or wallet: grants', param);
  for (const grant of scope.split(' ')) {
    if (!scopeAllows(c.scopes, grant as Scope)) throw reject(ERR.SCOPE_EXCEEDED, `caller lacks ${grant}`, param);
  }
  return scope;
}

export const apiKeyMethods = [
  defineMethod({
    name: 'private/create_api_key',
    scope: 'account:read_write',
    params: Type.Object({
      scope: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
      // Deribit's own name for the same parameter
      max_scope: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
      name: Type.String({ maxLength: 64, default: '', pattern: '^[A-Za-z0-9_ .:-]*$' }),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const requested = p.scope ?? p.max_scope;
      if (requested === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'scope');
      const scope = keyScope(c, requested, 'scope');
      const s = ctx.services;
      const { clientId, clientSecret } = newClientCredentials();
      const encSecret = encryptSecret(clientSecret, s.serverKey, clientId);
      return s.seq.submit({ t: 'create_api_key', userId: c.userId, clientId, encSecret, scope, name: p.name }, (r) => ({
        ...renderKey(unwrap(r) as ApiKeyRecord),
        client_secret: clientSecret,
      }));
    },
  }),
  defineMethod({
    name: 'private/list_api_keys',
    scope: 'account:read_write',
    params: Type.Object({}),
    handler(ctx) {
      const c = caller(ctx);
      return ctx.services.seq.read(() => ctx.services.ex.apiKeys.forUser(c.userId).map(renderKey));
    },
  }),
  defineMethod({
    name: 'private/remove_api_key',
    scope: 'account:read_write',
    params: Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'remove_api_key', userId: c.userId, id: p.id }, (r) => (unwrap(r), 'ok'));
    },
  }),
];
