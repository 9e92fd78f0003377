// Announcements (issue 31): an administrator publishes (private/publish_announcement, a Strikebook
// method: Deribit's staff publish theirs); anyone reads them (public/get_announcements); a user reads
// those not yet marked (private/get_new_announcements) and marks them (set_announcement_as_read).
// The `announcements` channel (src/api/ws/parityChannels.ts) carries each as it is published.
import { Type } from '@sinclair/typebox';
import type { Announcement } from '../../engine/announcements.ts';
import { defineMethod } from '../rpc/registry.ts';
import { SafeText, Timestamp, caller, unwrap } from './common.ts';

/** Deribit's announcement object. */
export function renderAnnouncement(a: Announcement): Record<string, unknown> {
  return { id: a.id, title: a.title, body: a.body, important: a.important, confirmation: a.confirmation, publication_timestamp: a.published };
}

export const announcementMethods = [
  defineMethod({
    name: 'private/publish_announcement',
    scope: 'admin',
    summary: 'Publishes an announcement to every user (title up to 200 characters, body up to 5,000); the `announcements` channel carries it. The newest 1,000 are kept.',
    params: Type.Object({
      title: SafeText({ minLength: 1, maxLength: 200 }),
      body: SafeText({ minLength: 1, maxLength: 5000 }),
      important: Type.Boolean({ default: false }),
      confirmation: Type.Boolean({ default: false }),
    }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'publish_announcement', title: p.title, body: p.body, important: p.important, confirmation: p.confirmation }, (r) => renderAnnouncement(unwrap(r) as Announcement));
    },
  }),
  defineMethod({
    name: 'public/get_announcements',
    scope: 'none',
    summary: 'Announcements published at or before start_timestamp (default: now), newest first, at most count (default 5, up to 50).',
    params: Type.Object({ start_timestamp: Type.Optional(Timestamp), count: Type.Integer({ minimum: 1, maximum: 50, default: 5 }) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const until = p.start_timestamp ?? Infinity;
        const out: Record<string, unknown>[] = [];
        const list = s.ex.announcements.list;
        for (let i = list.length - 1; i >= 0 && out.length < p.count; i--) if (list[i]!.published <= until) out.push(renderAnnouncement(list[i]!));
        return out;
      });
    },
  }),
  defineMethod({
    name: 'private/get_new_announcements',
    scope: 'account:read',
    summary: 'The announcements the caller has not marked read, newest first.',
    params: Type.Object({}),
    handler(ctx) {
      const userId = caller(ctx).userId;
      return ctx.services.seq.read(() => ctx.services.ex.announcements.unread(userId).map(renderAnnouncement));
    },
  }),
  defineMethod({
    name: 'private/set_announcement_as_read',
    scope: 'account:read_write',
    params: Type.Object({ announcement_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }) }),
    handler(ctx, p) {
      return ctx.services.seq.submit({ t: 'read_announcement', userId: caller(ctx).userId, id: p.announcement_id }, (r) => unwrap(r));
    },
  }),
];
