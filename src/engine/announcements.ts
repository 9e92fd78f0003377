// Announcements (issue 31): what an administrator publishes to every user, and which each user has
// marked read. Exchange state, changed only by the `publish_announcement` and `read_announcement`
// commands, so replay rebuilds it; bounded to the newest MAX_ANNOUNCEMENTS.
import { ERR, reject, type Reject } from '../domain/errors.ts';

/** Most announcements kept: publishing one more drops the oldest (and the reads of it). */
export const MAX_ANNOUNCEMENTS = 1000;

export interface Announcement {
  id: number;
  title: string;
  body: string;
  important: boolean;
  /** the user is asked to confirm it (Deribit `confirmation`) */
  confirmation: boolean;
  published: number;
}

export class Announcements {
  nextId = 1;
  /** oldest first */
  list: Announcement[] = [];
  /** user id -> ids of the announcements that user marked read */
  read = new Map<number, Set<number>>();

  publish(c: { title: string; body: string; important: boolean; confirmation: boolean }, now: number): Announcement {
    const a: Announcement = { id: this.nextId++, title: c.title, body: c.body, important: c.important, confirmation: c.confirmation, published: now };
    this.list.push(a);
    if (this.list.length > MAX_ANNOUNCEMENTS) {
      const dropped = this.list.shift()!;
      for (const ids of this.read.values()) ids.delete(dropped.id);
    }
    return a;
  }

  markRead(userId: number, id: number): 'ok' | Reject {
    if (!this.list.some((a) => a.id === id)) return reject(ERR.NOT_FOUND, 'announcement_not_found', 'announcement_id');
    let ids = this.read.get(userId);
    if (!ids) this.read.set(userId, (ids = new Set()));
    ids.add(id);
    return 'ok';
  }

  /** The announcements a user has not marked read, newest first. */
  unread(userId: number): Announcement[] {
    const ids = this.read.get(userId);
    return this.list.filter((a) => !ids?.has(a.id)).reverse();
  }

  toJson(): unknown {
    return { next: this.nextId, list: this.list, read: [...this.read].map(([u, ids]) => [u, [...ids]]) };
  }

  static fromJson(j: unknown): Announcements {
    const a = new Announcements();
    if (j === undefined || j === null) return a;
    const o = j as { next: number; list: Announcement[]; read: [number, number[]][] };
    a.nextId = o.next;
    a.list = o.list;
    for (const [u, ids] of o.read) a.read.set(u, new Set(ids));
    return a;
  }
}
