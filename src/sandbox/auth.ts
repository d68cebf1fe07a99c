import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { KEY_HEADER, type KeyKind } from './endpoints.js';
import type { SandboxState } from './state.js';

/**
 * Key → identity (§5). A carrier endpoint accepts only a carrier key in x-service-carrier-key;
 * a seller-group endpoint only a seller-group key in x-service-seller-group-key. The other
 * header, when sent too, is ignored. Keys are held as sha256 digests, never logged.
 */
export class KeyRing {
  readonly #ids: Record<KeyKind, Map<string, string>> = { carrier: new Map(), 'seller-group': new Map() };

  constructor(state: SandboxState) {
    for (const carrier of state.carriers.values()) this.#ids.carrier.set(digest(carrier.key), carrier.id);
    for (const group of state.sellerGroups.values()) this.#ids['seller-group'].set(digest(group.key), group.id);
  }

  /** The carrier or seller-group id whose key the request presents, or null. */
  identify(kind: KeyKind, headers: IncomingHttpHeaders): string | null {
    const value = headers[KEY_HEADER[kind]];
    if (typeof value !== 'string' || value === '') return null;
    return this.#ids[kind].get(digest(value)) ?? null;
  }
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
