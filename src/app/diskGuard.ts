// Free-disk floor (issue 14 finding 5): a full disk fails the journal write and stops the exchange
// (exit 70). Before that happens, new risk is refused: below STRIKEBOOK_DISK_FLOOR_BYTES of free
// space on the data directory's file system, orders that are not reduce-only and edits are refused
// with `11030 other_reject`, `data.reason:"disk_space_low"`, and `strikebook_disk_low` is 1;
// cancels, reduce-only orders and reads go on (they write little or nothing).
//
// The free space is read with fs.statfs on libuv's thread pool every STRIKEBOOK_DISK_CHECK_MS, so
// the engine thread only reads a boolean. With PostgreSQL the journal's disk is the database
// server's, which this process cannot see: the guard then watches nothing.
import { statfs } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ERR, reject } from '../domain/errors.ts';

export class DiskGuard {
  /** Free space is below the floor: new risk is refused. */
  low = false;
  /** Free bytes at the last check (null before the first or when it failed). */
  freeBytes: number | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly dir: string,
    /** Settable at run time (tests, operators through a restart-free reconfiguration). */
    public floorBytes: number,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** Reads the free space now and updates `low`. A failed read keeps the previous state. */
  async check(): Promise<void> {
    try {
      const st = await statfs(this.dir);
      const free = Number(st.bavail) * Number(st.bsize);
      this.freeBytes = free;
      const low = free < this.floorBytes;
      if (low !== this.low) {
        if (low) this.log.error({ freeBytes: free, floorBytes: this.floorBytes }, 'free disk below the floor: refusing new risk');
        else this.log.warn({ freeBytes: free, floorBytes: this.floorBytes }, 'free disk above the floor again: accepting orders');
      }
      this.low = low;
    } catch (err) {
      this.log.warn({ err, dir: this.dir }, 'free disk check failed');
    }
  }

  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/**
 * Below the floor, orders that may add risk are refused (`11030`, `disk_space_low`) before the
 * journal write could fail for want of space; callers skip it for cancels and reduce-only orders.
 */
export function refuseRiskIfDiskLow(disk: DiskGuard | null): void {
  if (disk?.low) throw reject(ERR.OTHER_REJECT, 'disk_space_low');
}
