/**
 * Text built for a person (a journey step, the Redis line) that the pages show with markup: while
 * the text is built its times and long numbers are marked with private-use characters, then the
 * whole text is escaped, then each mark becomes its tag. Nothing from outside can forge a mark: a
 * private-use character in a value is escaped away first.
 */
import { shortened } from '../i18n/local-time.js';

const TIME = '\uE000';
const LONG = '\uE001';
const TIME_MARK = new RegExp(`${TIME}([^${TIME}]*)${TIME}`, 'g');
const LONG_MARK = new RegExp(`${LONG}([^${LONG}]*)${LONG}`, 'g');
const ANY_MARK = new RegExp(`[${TIME}${LONG}]`, 'g');

export const markTime = (iso: string): string => `${TIME}${iso.replace(ANY_MARK, '')}${TIME}`;
export const markLong = (value: string): string => `${LONG}${value.replace(ANY_MARK, '')}${LONG}`;

/** `text` escaped, its marked times as `timeTag`s and its long numbers cut with the whole value on hover. */
export function marksToHtml(text: string, escape: (text: string) => string, timeTag: (iso: string, text: string) => string): string {
  return escape(text)
    .replace(TIME_MARK, (_, iso: string) => timeTag(iso, iso))
    .replace(LONG_MARK, (_, value: string) => `<span class="long" title="${value}">${shortened(value)}</span>`);
}
