// Administration of credit rate limits (src/app/credits.ts): read and set a user's limits. Not
// journaled commands: limits are operator settings kept in the journal's meta table, and changing
// them moves no money and no exchange state.
import { Type } from '@sinclair/typebox';
import { MATCHING_TIERS, QUOTE_COST, REQUEST_COST, tierLimits, type Pool, type PoolLimits, type Tier } from '../../app/credits.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Services } from '../../app/services.ts';
import { defineMethod } from '../rpc/registry.ts';

const Credits = Type.Integer({ minimum: REQUEST_COST, maximum: 1e9 });
const Refill = Type.Integer({ minimum: 1, maximum: 1e9 });

function renderPool(s: Services, subject: number, pool: Pool, l: PoolLimits) {
  return { max_credits: l.maxCredits, refill_per_sec: l.refillPerSec, cost: pool === 'quotes' ? QUOTE_COST : REQUEST_COST, credits: s.credits.credits(subject, pool, l) };
}

function renderLimits(s: Services, userId: number) {
  const l = s.credits.limitsOf(userId);
  return {
    user_id: userId,
    enabled: s.credits.enabled,
    tier: l.tier,
    custom: s.credits.overrides.has(userId),
    matching_engine: renderPool(s, userId, 'matching', l.matching),
    non_matching_engine: renderPool(s, userId, 'non_matching', l.nonMatching),
    // mass_quote's own pool, charged per quote side (`cost` each), by tier
    mass_quotes: renderPool(s, userId, 'quotes', s.credits.poolLimits(userId, 'quotes')),
  };
}

function knownUser(s: Services, userId: number): void {
  if (!s.ex.users.has(userId)) throw reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
}

export const rateLimitMethods = [
  defineMethod({
    name: 'private/get_rate_limits',
    scope: 'admin',
    summary: "A user's credit rate limits: tier, pool sizes, refill rates and the credits left now.",
    params: Type.Object({ user_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }) }),
    handler(ctx, p) {
      knownUser(ctx.services, p.user_id);
      return renderLimits(ctx.services, p.user_id);
    },
  }),
  defineMethod({
    name: 'private/set_rate_limits',
    scope: 'admin',
    summary: "Sets a user's matching-engine tier (1..4) and optionally pool sizes and refill rates; `reset: true` returns to the default tier.",
    params: Type.Object({
      user_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }),
      tier: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(3), Type.Literal(4)])),
      matching_max_credits: Type.Optional(Credits),
      matching_refill_per_sec: Type.Optional(Refill),
      non_matching_max_credits: Type.Optional(Credits),
      non_matching_refill_per_sec: Type.Optional(Refill),
      reset: Type.Optional(Type.Boolean()),
    }),
    async handler(ctx, p) {
      const s = ctx.services;
      knownUser(s, p.user_id);
      // the overrides live in the meta table, which only the leader writes: refused before any change
      s.seq.assertLeader();
      if (p.reset === true) s.credits.overrides.delete(p.user_id);
      else {
        const base = s.credits.limitsOf(p.user_id);
        const tier: Tier = p.tier ?? base.tier;
        const matching = p.tier !== undefined ? MATCHING_TIERS[tier] : base.matching;
        s.credits.overrides.set(p.user_id, {
          ...tierLimits(tier),
          matching: { maxCredits: p.matching_max_credits ?? matching.maxCredits, refillPerSec: p.matching_refill_per_sec ?? matching.refillPerSec },
          nonMatching: { maxCredits: p.non_matching_max_credits ?? base.nonMatching.maxCredits, refillPerSec: p.non_matching_refill_per_sec ?? base.nonMatching.refillPerSec },
        });
      }
      await s.credits.persist();
      // new limits start from a full pool
      s.credits.reset(p.user_id);
      return renderLimits(s, p.user_id);
    },
  }),
];
