// public/fork_token (issue 31): a new named session (`session:<name>` in its scope) from a refresh
// token, with the same grants; the refresh token it was forked from stays valid, unlike a refresh.
import { Type } from '@sinclair/typebox';
import { sha256Hex } from '../../auth/crypto.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { issueTokens } from './auth.ts';

export const forkTokenMethods = [
  defineMethod({
    name: 'public/fork_token',
    scope: 'none',
    summary: 'A new token pair for a named session from a refresh token (which stays valid), with its grants and `session:<session_name>` in the scope. Counts toward the session cap as a login does.',
    params: Type.Object({
      refresh_token: Type.String({ minLength: 1, maxLength: 256 }),
      session_name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' }),
      scope: Type.Optional(Type.String({ maxLength: 512 })),
    }),
    async handler(ctx, p) {
      const s = ctx.services;
      const rec = await s.seq.read(() => s.ex.auth.refresh.get(sha256Hex(p.refresh_token)) ?? null);
      if (!rec || rec.expiresAt <= s.clock.now()) throw reject(ERR.UNAUTHORIZED, 'invalid_refresh_token', 'refresh_token');
      const user = s.ex.users.get(rec.userId);
      if (!user) throw reject(ERR.UNAUTHORIZED, 'invalid_refresh_token', 'refresh_token');
      // the session name replaces one the forked session had
      const scope = [...rec.scope.split(' ').filter((t) => t !== '' && !t.startsWith('session:')), `session:${p.session_name}`].join(' ');
      return issueTokens(ctx, user, scope, null, p.scope, 'fork_token');
    },
  }),
];
