/**
 * Portuguese plurals as a Brazilian reads them (issue 45): CLDR files 0 under `one`, which wrote
 * `0 registro válido`; and a sentence whose words agree with its count throughout (`1 arquivo
 * recusado … e movidos` was half plural).
 */
import { expect, it } from 'vitest';
import { say } from '../../src/i18n/translate.js';

it('writes zero with the plural: 0 registros válidos, 0 falhas definitivas', () => {
  // This message says "nenhum" / "no" for zero (its own =0 form, issue 44); a message without one takes the plural.
  expect(say('pt-BR', 'cli.validate.validRecords', { count: 0 })).toBe('nenhum registro válido');
  expect(say('pt-BR', 'cli.validate.validRecords', { count: 1 })).toBe('1 registro válido');
  expect(say('pt-BR', 'cli.dlq.total', { count: 0 })).toBe('0 falhas definitivas');
  expect(say('en', 'cli.validate.validRecords', { count: 0 })).toBe('no valid record');
});

it('agrees in number through the whole sentence', () => {
  expect(say('pt-BR', 'notify.refused.summary', { total: 1 })).toBe('1 arquivo recusado localmente (inválido, nunca enviado) e movido para failed/');
  expect(say('pt-BR', 'notify.refused.summary', { total: 3 })).toBe('3 arquivos recusados localmente (inválidos, nunca enviados) e movidos para failed/');
  expect(say('pt-BR', 'notify.deadLetters.summary', { total: 1, since: 'X' })).toContain('a API o recusou');
});
