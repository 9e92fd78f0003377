// Sample calls of the wallet methods (src/api/methods/wallet.ts) for the Deribit conformance test: the
// fixture's user has BTC, and the server runs with STRIKEBOOK_ADDRESS_BOOK_WAIT_MS=0 so that a new
// address-book entry can receive a withdrawal at once. The samples run in this order.
import { ok } from './server.ts';

interface WalletFixture {
  url: string;
  user: string;
}

interface Call {
  params?: Record<string, unknown>;
  token?: string;
}

const ENTRY = { currency: 'BTC', type: 'withdrawal', address: 'bc1qconformance', label: 'conformance', beneficiary_vasp_name: 'Vasp', beneficiary_vasp_did: 'did:example:1', beneficiary_address: 'Street 1', agreed: true, personal: true };

export const WALLET_SAMPLES: Record<string, (f: WalletFixture) => Promise<Call> | Call> = {
  'private/add_to_address_book': (f) => ({ params: ENTRY, token: f.user }),
  'private/get_address_book': (f) => ({ params: { currency: 'BTC', type: 'withdrawal' }, token: f.user }),
  'private/update_in_address_book': (f) => ({ params: { ...ENTRY, label: 'renamed' }, token: f.user }),
  'private/withdraw': (f) => ({ params: { currency: 'BTC', address: ENTRY.address, amount: 0.01, priority: 'high', nonce: 'conformance-w1' }, token: f.user }),
  'private/get_withdrawals': (f) => ({ params: { currency: 'BTC' }, token: f.user }),
  'private/cancel_withdrawal': async (f) => {
    const w = await ok(f.url, 'private/withdraw', { currency: 'BTC', address: ENTRY.address, amount: 0.01 }, f.user);
    return { params: { currency: 'BTC', id: w.id }, token: f.user };
  },
  'private/create_deposit_address': (f) => ({ params: { currency: 'BTC' }, token: f.user }),
  'private/get_current_deposit_address': (f) => ({ params: { currency: 'BTC' }, token: f.user }),
  'private/get_deposits': (f) => ({ params: { currency: 'BTC' }, token: f.user }),
  'private/remove_from_address_book': async (f) => {
    await ok(f.url, 'private/add_to_address_book', { ...ENTRY, address: 'bc1qremoveme' }, f.user);
    return { params: { currency: 'BTC', type: 'withdrawal', address: 'bc1qremoveme' }, token: f.user };
  },
};
