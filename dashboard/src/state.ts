/**
 * What the pages share: the signed-in session, the provider catalog (fetched once), and the two ways a page hands
 * control back (show the current route again; the session ended). `main.ts` wires the last two.
 */
import { api, type Provider, type Session } from './api.js';

let session: Session | null = null;
let providers: Provider[] | null = null;

export const currentSession = (): Session | null => session;
export function setSession(value: Session | null): void {
  session = value;
}

export async function loadProviders(): Promise<Provider[]> {
  providers ??= await api<Provider[]>('GET', '/providers');
  return providers;
}

/** Set by main.ts: renders the page of the current address again; the session ended (sign-in page). */
export const navigation = {
  route: async (): Promise<void> => undefined,
  refresh: async (): Promise<void> => undefined,
  signedOut: (): void => undefined,
};

/** Renders the current page again (after a change), leaving focus where it is. */
export const refresh = (): Promise<void> => navigation.refresh();
