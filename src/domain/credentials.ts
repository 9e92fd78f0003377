// Credential records held in exchange state (src/auth/authState.ts): invite codes and token hashes.
// Plain data, journaled and snapshotted; no secret is stored in the clear.

export interface InviteCode {
  code: string;
  maxUses: number;
  uses: number;
  expiresAt: number;
  note: string | null;
  createdBy: number;
  created: number;
  revoked: boolean;
}

export interface TokenRecord {
  userId: number;
  scope: string;
  expiresAt: number;
  /** hash of the paired token (refresh for access, access for refresh) */
  pair: string;
}
