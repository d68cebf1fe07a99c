import { parse, TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, SyncError } from '../../src/errors.js';
import { EN } from '../../src/i18n/catalog-en.js';
import { PT_BR } from '../../src/i18n/catalog-pt-br.js';
import { describeFailure, reasonOf, refusal, renderReason } from '../../src/i18n/reason.js';
import { langOfAcceptLanguage, say, type MessageKey } from '../../src/i18n/translate.js';

/** Each placeholder of a message with how it is used: `n:plural`, `file:text`. */
function placeholders(message: string): string[] {
  const found = new Set<string>();
  const walk = (elements: MessageFormatElement[]): void => {
    for (const element of elements) {
      if (element.type === TYPE.argument) found.add(`${element.value}:text`);
      if (element.type === TYPE.number) found.add(`${element.value}:number`);
      if (element.type === TYPE.plural || element.type === TYPE.select) {
        found.add(`${element.value}:${element.type === TYPE.plural ? 'plural' : 'select'}`);
        for (const option of Object.values(element.options)) walk(option.value);
      }
    }
  };
  walk(parse(message, { ignoreTag: true }));
  return [...found].sort();
}

/** Messages that are the same in both languages on purpose: they hold only placeholders and punctuation. */
const SAME_IN_BOTH = new Set<MessageKey>(['reason.withDetail', 'reason.api', 'reason.apiNoCode', 'notify.title', 'ui.kind.cte', 'ui.redis.replica']);

const keys = Object.keys(EN) as MessageKey[];

describe('message catalogs', () => {
  it('pt-BR has exactly the keys of en', () => {
    expect(Object.keys(PT_BR).sort()).toEqual([...keys].sort());
  });

  it.each(keys)('%s has the same placeholders, used the same way, in both languages', (key) => {
    expect(placeholders(PT_BR[key])).toEqual(placeholders(EN[key]));
  });

  it('every pt-BR message is translated (not the English text), except those made only of placeholders', () => {
    const untranslated = keys.filter((key) => !SAME_IN_BOTH.has(key) && PT_BR[key] === EN[key]);
    expect(untranslated).toEqual([]);
  });

  it('every message formats in both languages with its placeholders filled', () => {
    for (const key of keys) {
      const values = Object.fromEntries(placeholders(EN[key]).map((p) => [p.split(':')[0], p.endsWith(':text') ? 'x' : 2]));
      expect(say('en', key, values), key).not.toMatch(/\{[a-zA-Z]+\}/);
      expect(say('pt-BR', key, values), key).not.toMatch(/\{[a-zA-Z]+\}/);
    }
  });

  it('every error code has a meaning in both languages (a new code needs one line in each catalog)', () => {
    for (const code of ERROR_CODES) expect(Object.hasOwn(EN, `code.${code}`), code).toBe(true);
  });
});

describe('plurals and numbers', () => {
  it('counts read right in both languages, Portuguese "many" falling back to "other"', () => {
    const lines = (lang: 'en' | 'pt-BR', count: number): string => say(lang, 'reason.event.fileInvalidLines', { count });
    expect([1, 2, 1_000_000].map((n) => lines('en', n))).toEqual(['1 invalid line', '2 invalid lines', '1,000,000 invalid lines']);
    // CLDR puts 0 with 1 in Brazilian Portuguese (i = 0..1); Brazilian usage writes zero with the plural (issue 45).
    expect([0, 1, 2, 1_000_000].map((n) => lines('pt-BR', n))).toEqual([
      '0 linhas inválidas',
      '1 linha inválida',
      '2 linhas inválidas',
      '1.000.000 linhas inválidas',
    ]);
  });

  it('interpolates values as text: an XML element name is not read as markup', () => {
    expect(say('pt-BR', 'reason.cte.noDocument', { root: 'cteProc', document: 'CTe' })).toBe(
      '<cteProc> não contém <CTe>; envie o CT-e processado como foi emitido',
    );
  });
});

describe('reasons', () => {
  it('a refusal keeps the English message and renders in Portuguese from its key, the CT-e field list included', () => {
    const error = refusal(
      'CTE_FIELD_INVALID',
      reasonOf('reason.cte.fields', {
        problems: [reasonOf('reason.cte.checkDigits', { path: 'dest/CNPJ', value: '"11222333000180"', expected: '81' }), reasonOf('reason.cte.destBoth')],
      }),
    );
    expect(error.message).toBe(
      'infCte/dest/CNPJ "11222333000180" has wrong check digits (expected 81); infCte/dest holds both CNPJ and CPF; it must hold exactly one; the API validates these fields: correct them and re-issue the CT-e',
    );
    expect(describeFailure('pt-BR', { code: error.code, message: error.message, reason: error.reason })).toBe(
      'infCte/dest/CNPJ "11222333000180" tem dígitos verificadores errados (esperado 81); infCte/dest traz CNPJ e CPF ao mesmo tempo; o destinatário deve ter exatamente um; a API valida estes campos: corrija-os e emita o CT-e de novo',
    );
  });

  it('a reason read back from JSON (Redis, a report) renders the same as the one made', () => {
    const error = refusal('LABEL_ENCRYPTED', reasonOf('reason.label.encrypted'));
    const stored = JSON.parse(JSON.stringify(error.toJSON())) as Record<string, unknown>;
    expect(describeFailure('pt-BR', { code: 'LABEL_ENCRYPTED', message: String(stored['message']), reason: stored['reason'] })).toBe(
      renderReason('pt-BR', reasonOf('reason.label.encrypted')),
    );
  });

  it('a dead letter without a kept reason is rendered from its code, status and the API answer, not by translating its English text', () => {
    const facts = {
      code: 'API_REJECTED',
      message: 'label: rejected by the API (HTTP 400) …',
      status: 400,
      apiCode: 'INVALID_FILE',
      apiMessage: 'file must be a PDF',
    };
    expect(describeFailure('pt-BR', facts)).toBe('a API recusou o item (HTTP 400, INVALID_FILE): file must be a PDF');
    expect(describeFailure('en', facts)).toBe('the API refused the item (HTTP 400, INVALID_FILE): file must be a PDF');
  });

  it('an English-only reason (an earlier version, an unknown key) keeps its text in English and its meaning in Portuguese', () => {
    const facts = { code: 'LABEL_NOT_PDF', message: 'this is not a PDF', reason: { key: 'reason.gone', values: {} } };
    expect(describeFailure('en', facts)).toBe('this is not a PDF');
    expect(describeFailure('pt-BR', facts)).toBe('a etiqueta não é um PDF: this is not a PDF');
    expect(describeFailure('pt-BR', { code: 'NO_SUCH_CODE', message: '' })).toBe('o item falhou');
  });

  it('SyncError keeps the reason in toJSON (dead letters in Redis carry it)', () => {
    expect(new SyncError('LABEL_EMPTY', 'x', { reason: reasonOf('reason.label.empty') }).toJSON()['reason']).toEqual({ key: 'reason.label.empty', values: {} });
  });
});

describe('the language of a page', () => {
  it.each([
    ['pt-BR,pt;q=0.9,en;q=0.8', 'en', 'pt-BR'],
    ['pt', 'en', 'pt-BR'],
    ['pt-PT', 'en', 'pt-BR'],
    ['en-US,en;q=0.9', 'pt-BR', 'en'],
    ['en;q=0.5, pt-BR;q=0.9', 'en', 'pt-BR'],
    ['de-DE,fr;q=0.9', 'pt-BR', 'pt-BR'],
    ['pt-BR;q=0, en', 'pt-BR', 'en'],
    ['', 'pt-BR', 'pt-BR'],
    [undefined, 'en', 'en'],
  ] as const)('Accept-Language %j with CARRIER_SYNC_LANG %s reads %s', (header, fallback, expected) => {
    expect(langOfAcceptLanguage(header, fallback)).toBe(expected);
  });
});
