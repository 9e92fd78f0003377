// Sample calls of the subaccount and transfer methods (src/api/methods/subaccounts.ts) for the
// Deribit conformance test: the fixture's user is the main account, and the samples run in this order.
import { ok, rpc } from './server.ts';

interface MainFixture {
  url: string;
  user: string;
}

interface Call {
  params?: Record<string, unknown>;
  token?: string;
}

/** The main account's id and its first subaccount's (created when it has none). */
async function family(f: MainFixture): Promise<{ main: number; sub: number }> {
  let list = await ok(f.url, 'private/get_subaccounts', {}, f.user);
  if (list.length < 2) {
    await ok(f.url, 'private/create_subaccount', {}, f.user);
    list = await ok(f.url, 'private/get_subaccounts', {}, f.user);
  }
  return { main: list[0].id, sub: list[1].id };
}

export const SUBACCOUNT_SAMPLES: Record<string, (f: MainFixture) => Promise<Call> | Call> = {
  'private/create_subaccount': (f) => ({ token: f.user }),
  'private/get_subaccounts': (f) => ({ params: { with_portfolio: true }, token: f.user }),
  'private/change_subaccount_name': async (f) => ({ params: { sid: (await family(f)).sub, name: 'desk_one' }, token: f.user }),
  'private/toggle_subaccount_login': async (f) => ({ params: { sid: (await family(f)).sub, state: 'enable' }, token: f.user }),
  'private/submit_transfer_to_subaccount': async (f) => ({ params: { currency: 'BTC', amount: 0.01, destination: (await family(f)).sub }, token: f.user }),
  'private/submit_transfer_between_subaccounts': async (f) => {
    const { main, sub } = await family(f);
    return { params: { currency: 'BTC', amount: 0.001, source: sub, destination: main, nonce: 'conformance-1' }, token: f.user };
  },
  'private/get_transfers': (f) => ({ params: { currency: 'BTC' }, token: f.user }),
  'private/get_subaccounts_details': (f) => ({ params: { currency: 'BTC', with_open_orders: true }, token: f.user }),
  'public/exchange_token': async (f) => {
    const { sub } = await family(f);
    const r = await rpc(f.url, 'public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' });
    return { params: { refresh_token: r.body.result.refresh_token, subject_id: sub } };
  },
  'private/set_email_for_subaccount': async (f) => ({ params: { sid: (await family(f)).sub, email: 'desk-one@example.com' }, token: f.user }),
  'private/toggle_notifications_from_subaccount': async (f) => ({ params: { sid: (await family(f)).sub, state: true }, token: f.user }),
  'private/submit_transfer_to_user': async (f) => {
    // to an entry of the sender's address book of type `transfer` (the fixture has no waiting period)
    await otherInBook(f);
    return { params: { currency: 'BTC', amount: 0.01, destination: 'other@example.com', nonce: 'conformance-user-1' }, token: f.user };
  },
  'private/cancel_transfer_by_id': async (f) => {
    // a second transfer, still prepared (held STRIKEBOOK_USER_TRANSFER_HOLD_SECONDS)
    await otherInBook(f);
    const t = await ok(f.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.02, destination: 'other@example.com' }, f.user);
    return { params: { currency: 'BTC', id: t.id }, token: f.user };
  },
  'private/move_positions': async (f) => {
    // a tenth of the fixture's short moves to the subaccount, which is given the margin for it
    const { main, sub } = await family(f);
    await ok(f.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 1, destination: sub }, f.user);
    const pos = (await ok(f.url, 'private/get_positions', { currency: 'BTC' }, f.user)).find((p: any) => p.size !== 0);
    return { params: { currency: 'BTC', source_uid: main, target_uid: sub, trades: [{ instrument_name: pos.instrument_name, amount: 0.1 }] }, token: f.user };
  },
  'private/remove_subaccount': async (f) => {
    const created = await ok(f.url, 'private/create_subaccount', {}, f.user);
    return { params: { subaccount_id: created.id }, token: f.user };
  },
};

/** other@example.com in the fixture user's address book as a `transfer` entry (once: a second add is refused). */
async function otherInBook(f: { url: string; user: string }): Promise<void> {
  await rpc(f.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: 'other@example.com', label: 'other' }, f.user);
}
