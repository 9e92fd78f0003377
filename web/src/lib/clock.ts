// The exchange's clock as the browser sees it: public/get_time once, then the local clock plus the
// offset. Times to expiry count from the exchange's time (a test server runs on a pinned clock).
import { call } from './rpc.ts';

let offset = 0;
let synced: Promise<void> | null = null;

export function syncClock(): Promise<void> {
  synced ??= call<number>('public/get_time').then(
    (t) => void (offset = t - Date.now()),
    () => void (synced = null),
  );
  return synced;
}

export function serverNow(): number {
  return Date.now() + offset;
}
