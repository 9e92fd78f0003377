// The per-user rate limits an administrator sets (private/set_rate_limits) live in the journal's
// meta table, beside the API-key server key: they are operator settings, not exchange state (no
// command changes them, replay does not need them), and they must survive a restart.
import type { MetaStore } from '../journal/journal.ts';
import type { Config } from './config.ts';
import { CreditLimiter, type UserLimits } from './credits.ts';

const META_KEY = 'rate_limit_overrides';

/** Reads the overrides again (a standby taking over: the old leader's administrator may have changed them). */
export async function reloadCreditOverrides(limiter: CreditLimiter, meta: MetaStore): Promise<void> {
  const stored = await meta.getMeta(META_KEY);
  limiter.overrides.clear();
  if (stored !== null) for (const [id, limits] of JSON.parse(stored) as [number, UserLimits][]) limiter.overrides.set(id, limits);
  limiter.persist = () => meta.setMeta(META_KEY, JSON.stringify([...limiter.overrides]));
}

export async function loadCredits(config: Config, meta: MetaStore, now: () => number): Promise<CreditLimiter> {
  const limiter = new CreditLimiter(now, config.rateLimits, config.rateLimitTier, config.rateLimitHoldMaxMs);
  const stored = await meta.getMeta(META_KEY);
  if (stored !== null) for (const [id, limits] of JSON.parse(stored) as [number, UserLimits][]) limiter.overrides.set(id, limits);
  limiter.persist = () => meta.setMeta(META_KEY, JSON.stringify([...limiter.overrides]));
  return limiter;
}
