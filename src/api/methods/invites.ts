// Invite code management group (API.md 3.2).
import { Type } from '@sinclair/typebox';
import { newInviteCode } from '../../auth/crypto.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { InviteCode } from '../../engine/types.ts';
import { defineMethod } from '../rpc/registry.ts';
import { SafeText, caller, unwrap } from './common.ts';

function renderInvite(i: InviteCode) {
  return {
    code: i.code,
    max_uses: i.maxUses,
    uses: i.uses,
    expires_at: i.expiresAt,
    note: i.note,
    created_by: i.createdBy,
    creation_timestamp: i.created,
    revoked: i.revoked,
  };
}

export const inviteMethods = [
  defineMethod({
    name: 'private/generate_invite_code',
    scope: 'admin',
    params: Type.Object({
      max_uses: Type.Integer({ minimum: 1, maximum: 10000, default: 1 }),
      expires_in: Type.Integer({ minimum: 60, maximum: 31536000, default: 604800 }),
      note: Type.Optional(SafeText({ maxLength: 128 })),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit(
        { t: 'create_invite', code: newInviteCode(), maxUses: p.max_uses, expiresIn: p.expires_in, note: p.note ?? null, by: c.userId },
        (r) => {
          const { revoked: _revoked, ...rest } = renderInvite(unwrap(r) as InviteCode);
          return rest;
        },
      );
    },
  }),
  defineMethod({
    name: 'public/verify_invite_code',
    scope: 'none',
    params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 128 }) }),
    handler(ctx, p) {
      const s = ctx.services;
      // per-IP limit so codes cannot be enumerated
      if (!s.limiter.allow(`verify-invite:${ctx.ip}`, 20, 60_000)) throw reject(ERR.TOO_MANY_REQUESTS, 'too_many_requests');
      return s.seq.read(() => {
        const status = s.ex.auth.inviteStatus(p.code, s.clock.now());
        const inv = s.ex.auth.invites.get(p.code);
        return {
          code: p.code,
          valid: status === 'ok',
          reason: status === 'ok' ? null : status,
          uses_left: inv && status !== 'unknown' ? Math.max(0, inv.maxUses - inv.uses) : 0,
          expires_at: inv && status !== 'unknown' ? inv.expiresAt : null,
        };
      });
    },
  }),
  defineMethod({
    name: 'private/list_invite_codes',
    scope: 'admin',
    params: Type.Object({
      count: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
      offset: Type.Integer({ minimum: 0, maximum: 1e9, default: 0 }),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => [...s.ex.auth.invites.values()].slice(p.offset, p.offset + p.count).map(renderInvite));
    },
  }),
  defineMethod({
    name: 'private/revoke_invite_code',
    scope: 'admin',
    params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 128 }) }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'revoke_invite', code: p.code, by: caller(ctx).userId }, (r) => renderInvite(unwrap(r) as InviteCode));
    },
  }),
];
