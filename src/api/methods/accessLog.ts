// private/get_access_log (issue 31): the caller's logins, newest first (src/engine/accessLog.ts). The
// `user.access_log` channel (src/api/ws/parityChannels.ts) carries each as it happens.
import { Type } from '@sinclair/typebox';
import type { AccessEntry } from '../../engine/accessLog.ts';
import { defineMethod } from '../rpc/registry.ts';
import { caller } from './common.ts';

/** Deribit's access-log entry; no address-to-place lookup is made, so country and city are empty. */
export function renderAccess(e: AccessEntry): Record<string, unknown> {
  return { id: e.id, ip: e.ip, timestamp: e.ts, country: '', city: '', log: 'success', data: { grant_type: e.grant } };
}

export const accessLogMethods = [
  defineMethod({
    name: 'private/get_access_log',
    scope: 'account:read',
    summary: "The caller's logins (public/auth, any grant), newest first: [{id, ip, timestamp, country, city, log:\"success\", data:{grant_type}}]. The newest 100 are kept; offset and count page them.",
    params: Type.Object({ offset: Type.Integer({ minimum: 0, maximum: 1000, default: 0 }), count: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }) }),
    handler(ctx, p) {
      const userId = caller(ctx).userId;
      return ctx.services.seq.read(() => {
        const list = ctx.services.ex.accessLog.get(userId) ?? [];
        return list.slice().reverse().slice(p.offset, p.offset + p.count).map(renderAccess);
      });
    },
  }),
];
