/**
 * A setting refused (CONFIG_INVALID, exit 2): the English message logs and `--json` keep, and the
 * catalog key and values main.ts words the terminal's line from in the reader's language
 * (cli/error-text.ts, issue 45). Values never hold a secret or a URL that may carry one.
 */
import { SyncError } from '../errors.js';
import { say, type MessageKey, type MessageValues } from '../i18n/translate.js';

export function configRefusal(key: MessageKey, values: MessageValues = {}, options: { cause?: unknown; params?: Record<string, unknown> } = {}): SyncError {
  return new SyncError('CONFIG_INVALID', say('en', key, values), { ...options, reason: { key, values } });
}
