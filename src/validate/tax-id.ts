/**
 * Brazilian tax ids and the CT-e access key, all guarded by mod-11 check digits.
 * CNPJ: since 2026 the first 12 characters may be letters (alphanumeric CNPJ); each character counts
 * as its ASCII code − 48, so digits keep their value and the old numeric CNPJs stay valid.
 * Each check returns null when the value is good, or what is wrong with it (a reason key, the field's
 * path and value added by the caller).
 */
import type { MessageKey } from '../i18n/translate.js';

/** What is wrong with a field's value: the reason's key and values beyond `path` and `value`. */
export interface ValueProblem {
  key: MessageKey;
  values?: Record<string, string>;
}

const CNPJ_SHAPE = /^[0-9A-Z]{12}\d{2}$/;
const CPF_SHAPE = /^\d{11}$/;

export function cnpjProblem(value: string): ValueProblem | null {
  if (!CNPJ_SHAPE.test(value)) return { key: 'reason.cte.cnpjShape' };
  const first = cnpjDigit(value.slice(0, 12));
  const second = cnpjDigit(value.slice(0, 12) + String(first));
  if (value.slice(12) !== `${first}${second}`) return { key: 'reason.cte.checkDigits', values: { expected: `${first}${second}` } };
  return null;
}

export function cpfProblem(value: string): ValueProblem | null {
  if (!CPF_SHAPE.test(value)) return { key: 'reason.cte.cpfShape' };
  if (/^(\d)\1{10}$/.test(value)) return { key: 'reason.cte.cpfRepeated' };
  const digits = [...value].map(Number);
  const first = cpfDigit(digits.slice(0, 9));
  const second = cpfDigit([...digits.slice(0, 9), first]);
  if (digits[9] !== first || digits[10] !== second) return { key: 'reason.cte.checkDigits', values: { expected: `${first}${second}` } };
  return null;
}

/** Check digit of the 43 leading characters of an access key (weights 2–9 from the right). */
export function accessKeyDigit(first43: string): number {
  return mod11(first43, weightsFromRight(first43.length, 9));
}

export function isAllZeros(value: string): boolean {
  return /^0+$/.test(value);
}

function cnpjDigit(base: string): number {
  return mod11(base, weightsFromRight(base.length, 9));
}

function cpfDigit(digits: number[]): number {
  const sum = digits.reduce((total, digit, index) => total + digit * (digits.length + 1 - index), 0);
  const rest = (sum * 10) % 11;
  return rest === 10 ? 0 : rest;
}

const weightsCache = new Map<string, number[]>();

/** Weights 2, 3, …, max, 2, 3, … assigned from the rightmost character leftwards (a few lengths only: kept). */
function weightsFromRight(length: number, max: number): number[] {
  const key = `${length}/${max}`;
  let weights = weightsCache.get(key);
  if (weights === undefined) weightsCache.set(key, (weights = Array.from({ length }, (_, index) => 2 + ((length - 1 - index) % (max - 1)))));
  return weights;
}

function mod11(text: string, weights: number[]): number {
  let sum = 0;
  for (let index = 0; index < text.length; index += 1) sum += (text.charCodeAt(index) - 48) * (weights[index] ?? 0);
  const rest = sum % 11;
  return rest < 2 ? 0 : 11 - rest;
}
