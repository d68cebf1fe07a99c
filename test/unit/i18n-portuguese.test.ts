/**
 * No English left inside the Portuguese catalog: every pt-BR message, its plural and select
 * branches included, has no English function word or English carrier-sync term outside what a
 * person types (codes, paths, commands) and the kept terms of the glossary (Redis, spool, CT-e, …).
 */
import { parse, TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { describe, expect, it } from 'vitest';
import { PT_BR } from '../../src/i18n/catalog-pt-br.js';
import { say } from '../../src/i18n/translate.js';
import { englishWordsIn } from '../support/english-words.js';

/** The literal text of a message, every branch of its plurals and selects, placeholders left out. */
function literalText(elements: MessageFormatElement[]): string {
  return elements
    .map((element) => {
      if (element.type === TYPE.literal) return element.value;
      if (element.type === TYPE.plural || element.type === TYPE.select)
        return Object.values(element.options)
          .map((option) => literalText(option.value))
          .join(' | ');
      return ' ';
    })
    .join('');
}

describe('the pt-BR catalog', () => {
  it('has no English word in any message, beyond the kept terms', () => {
    const english = Object.entries(PT_BR)
      .map(([key, message]) => ({ key, words: englishWordsIn(literalText(parse(message, { ignoreTag: true }))) }))
      .filter((entry) => entry.words.length > 0)
      .map((entry) => `${entry.key}: ${entry.words.join(', ')}`);
    expect(english, 'English words in pt-BR messages (reword them, or add a term Portuguese keeps to KEPT in test/support/english-words.ts)').toEqual([]);
  });

  it('the check finds what the issue found, and leaves names alone', () => {
    expect(englishWordsIn('nomeie o arquivo <delivery_id>.pdf or <delivery_id>__<external_id>.pdf')).toEqual(['or']);
    expect(englishWordsIn('duplicado de coletas-pt.ndjson line 1')).toEqual(['line']);
    expect(englishWordsIn('rate limiter: 9 of 300 per minute in the window')).toEqual(['rate', 'limiter', 'of', 'per', 'minute', 'in', 'the', 'window']);
    expect(englishWordsIn('(NUL, espaço, tabulação, CR, LF ou form feed)')).toEqual(['form', 'feed']);
    expect(englishWordsIn('o scheduler envia')).toEqual(['scheduler']);
    expect(englishWordsIn('Redis single')).toEqual(['single']);
    expect(englishWordsIn('tipo label')).toEqual(['label']);
    expect(englishWordsIn('confira CARRIER_SYNC_CARRIER_KEY e rode `carrier-sync resume`; veja failed/labels/x.pdf.error.json')).toEqual([]);
    expect(englishWordsIn('os processos com o papel worker; o comando carrier-sync dlq retry; a aba “Failed”')).toEqual([]);
  });
});

// Issue 44: numbers agree with their words, and "the valid records were sent" only when some were.
describe('pt-BR counts', () => {
  it.each([
    ['cli.validate.validRecords', { count: 0 }, 'nenhum registro válido'],
    ['cli.validate.validRecords', { count: 1 }, '1 registro válido'],
    ['cli.validate.validRecords', { count: 2 }, '2 registros válidos'],
    ['notify.refused.summary', { total: 1 }, '1 arquivo recusado localmente (inválido, nunca enviado) e movido para failed/'],
    ['notify.refused.summary', { total: 3 }, '3 arquivos recusados localmente (inválidos, nunca enviados) e movidos para failed/'],
    ['reason.events.noValidRecord', { count: 1 }, '1 linha inválida e nenhum registro válido: nada do arquivo foi enviado'],
  ] as const)('%s with %j reads "%s"', (key, values, text) => {
    expect(say('pt-BR', key, values)).toBe(text);
  });
});
