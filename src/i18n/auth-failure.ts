/**
 * A 401 pause as a person reads it (the overview's detail, `status`, the api-key-refused
 * notification): what the API answered and to which kind of item, in the reader's language.
 * The gate keeps the English message api/errors.ts made (`<endpoint>: the API refused the key (HTTP
 * 401) <API code>: <API message>`); its status and the API's words are read back from it, so a
 * pause recorded by an earlier version reads the same. Shown as it was, the message named the
 * kind twice (`label: label: …`) and was English under pt-BR (issue 45).
 */
import { kindName } from './kind-name.js';
import type { Translate } from './translate.js';

/** The fields of gate/auth-gate.ts' AuthFailure this reads (i18n imports nothing but itself). */
export interface AuthFailureFacts {
  endpoint: string;
  message: string;
  probes?: number;
}

const ANSWER = /\(HTTP (\d{3})\)\s*(.*)$/s;

/** `the API answered HTTP 401 to a label sent: “UNAUTHORIZED: Unauthorized”; 3 probes refused since`. */
export function describeAuthFailure(t: Translate, failure: AuthFailureFacts): string {
  const match = ANSWER.exec(failure.message);
  // A message of another shape is quoted whole, without the kind it starts with.
  const said = (match === null ? failure.message.replace(`${failure.endpoint}: `, '') : (match[2] ?? '')).trim();
  return t('auth.answer', {
    status: match?.[1] ?? '401',
    kind: kindName(failure.endpoint, t),
    said: said === '' ? 'none' : said,
    probes: failure.probes ?? 0,
  });
}
