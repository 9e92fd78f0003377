// Deribit methods that do not apply to a self-hosted options venue, each with the reason (issue 31;
// docs/api-notes.md lists the same). A Deribit client calling one gets -32601 like any unknown
// method; the conformance test (test/api/deribitConformance.test.ts) checks every other documented
// method is served or named as pending.

const FUNDING = 'funding: perpetual swaps only, and this venue lists options';
const TRAVEL_RULE = 'travel-rule beneficiaries: no on-chain withdrawals, so no beneficiary records';
const AFFILIATE = 'affiliate programme: no referral fees on a self-hosted venue';
const CUSTODY = 'custody accounts: third-party custodians (Copper, Cobo) are not connected';
const EMAIL_LANGUAGE = 'email language: the venue sends no email';
const REWARDS = 'rewards: no yield-bearing collateral';
const APR = 'APR history: no yield-bearing collateral';
const BROKER = 'broker trades: no broker programme';
const CLEARANCE = 'clearance originator: no on-chain deposits to clear';

export const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  'public/get_funding_chart_data': FUNDING,
  'public/get_funding_rate_history': FUNDING,
  'public/get_funding_rate_value': FUNDING,
  'private/delete_address_beneficiary': TRAVEL_RULE,
  'private/get_address_beneficiary': TRAVEL_RULE,
  'private/list_address_beneficiaries': TRAVEL_RULE,
  'private/save_address_beneficiary': TRAVEL_RULE,
  'private/enable_affiliate_program': AFFILIATE,
  'private/get_affiliate_program_info': AFFILIATE,
  'private/list_custody_accounts': CUSTODY,
  'private/get_email_language': EMAIL_LANGUAGE,
  'private/set_email_language': EMAIL_LANGUAGE,
  'private/get_reward_eligibility': REWARDS,
  'public/get_apr_history': APR,
  'private/get_broker_trade_requests': BROKER,
  'private/get_broker_trades': BROKER,
  'private/set_clearance_originator': CLEARANCE,
};
