/**
 * The one format of `.error.json`: every builder gives every key, null where there is no value,
 * in one order. The paths that write reports are driven end to end in
 * test/integration/failure-reports.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  deadLetterFactsOfOutcome,
  deadLetterReport,
  errorReport,
  EVENTS_REPORT_KEYS,
  eventsFileReport,
  refusalReport,
  REPORT_KEYS,
} from '../../src/queue/failure-report.js';
import type { OutcomeMessage } from '../../src/store/payloads.js';
import { reasonOf, refusal } from '../../src/i18n/reason.js';

const PLACE = { file: 'x.pdf', kind: 'labels', at: '2026-11-23T10:00:00.000Z', claim: null };
const BODY_KEYS = REPORT_KEYS.filter((key) => !['file', 'kind', 'at', 'claim'].includes(key));

const notFound: OutcomeMessage = {
  kind: 'label',
  jobId: 'label.dlv-1.0123456789abcdef',
  deliveryId: 'dlv-1',
  result: 'dead-lettered',
  origin: { source: 'spool', spoolId: 's', fileName: 'dlv-1.pdf', contentId: '0123456789abcdef' },
  attempts: 4,
  at: '2026-11-23T10:00:03.000Z',
  error: {
    code: 'API_NOT_FOUND',
    message: 'HTTP 404',
    disposition: 'retry',
    status: 404,
    apiCode: 'DELIVERY_NOT_FOUND',
    apiMessage: 'Delivery not found',
    params: { delivery_id: 'dlv-1' },
    body: '{"…"}',
  },
  firstFailureAt: '2026-11-23T10:00:00.000Z',
  lastFailureAt: '2026-11-23T10:00:03.000Z',
};

describe('the .error.json format', () => {
  it('a local refusal has every key, the API ones null', () => {
    const report = errorReport(PLACE, refusalReport({ code: 'LABEL_NOT_PDF', message: 'no %PDF header' }, 'dlv-1'));
    expect(Object.keys(report)).toEqual([...REPORT_KEYS]);
    expect(report).toEqual({
      ...PLACE,
      code: 'LABEL_NOT_PDF',
      message: 'no %PDF header',
      reason: 'no %PDF header',
      status: null,
      apiCode: null,
      apiMessage: null,
      params: null,
      attempts: null,
      firstFailureAt: null,
      lastFailureAt: null,
      jobId: null,
      deliveryId: 'dlv-1',
      hint: null,
    });
  });

  it('a dead letter carries the API answer, attempts, times, job, delivery and hint, and nothing else of the error', () => {
    const report = errorReport({ ...PLACE, claim: '0123456789abcdef-01234567' }, deadLetterReport(deadLetterFactsOfOutcome(notFound)));
    expect(Object.keys(report)).toEqual([...REPORT_KEYS]);
    expect(report).toMatchObject({
      code: 'API_NOT_FOUND',
      message: 'Delivery not found',
      status: 404,
      apiCode: 'DELIVERY_NOT_FOUND',
      apiMessage: 'Delivery not found',
      params: { delivery_id: 'dlv-1' },
      attempts: 4,
      firstFailureAt: '2026-11-23T10:00:00.000Z',
      lastFailureAt: '2026-11-23T10:00:03.000Z',
      jobId: 'label.dlv-1.0123456789abcdef',
      deliveryId: 'dlv-1',
      hint: expect.stringMatching(/dlq retry/),
      claim: '0123456789abcdef-01234567',
    });
  });

  it('a dead letter without an API answer keeps the keys, with nulls (and the last failure at the outcome time)', () => {
    const bare: OutcomeMessage = { ...notFound, error: { code: 'TIMEOUT', message: 'headers timeout' } };
    delete bare.firstFailureAt;
    delete bare.lastFailureAt;
    const report = errorReport(PLACE, deadLetterReport(deadLetterFactsOfOutcome(bare)));
    expect(Object.keys(report)).toEqual([...REPORT_KEYS]);
    expect(report).toMatchObject({
      code: 'TIMEOUT',
      message: 'headers timeout',
      status: null,
      apiCode: null,
      params: null,
      hint: null,
      firstFailureAt: null,
      lastFailureAt: notFound.at,
    });
  });

  it('a dead letter whose error has no code is UNKNOWN, never an API refusal (API_* only from an answer of the API)', () => {
    // What the in-flight reconcile read from a failed job whose reason was not the processor's: the incident's MOVED.
    const report = errorReport(PLACE, deadLetterReport({ ...deadLetterFactsOfOutcome(notFound), error: { message: 'MOVED 7684 127.0.0.1:46093' } }), 'pt-BR');
    expect(report.code).toBe('UNKNOWN');
    expect(report.code).not.toMatch(/^API_/);
    expect(report.reason).not.toMatch(/API/);
  });

  it("an events file's report adds its lines, and lists each dead-lettered event in the dead-letter format", () => {
    const dead = { line: 7, ...deadLetterReport(deadLetterFactsOfOutcome({ ...notFound, kind: 'collecting' })) };
    const report = errorReport(
      { ...PLACE, file: 'a.ndjson', kind: 'events' },
      eventsFileReport(
        { code: 'API_REJECTED', message: '1 of 3 events were dead-lettered', reason: reasonOf('reason.events.deadLettered', { count: '1', total: '3' }) },
        {
          invalidLines: [{ line: 2, code: 'EVENT_BAD_TIME', message: 'no offset' }],
          deadLettered: [dead],
          duplicates: 0,
          accepted: 2,
          archivedTo: null,
        },
      ),
    );
    expect(Object.keys(report)).toEqual([...REPORT_KEYS, ...EVENTS_REPORT_KEYS]);
    expect(report).toMatchObject({ code: 'API_REJECTED', deliveryId: null, jobId: null, attempts: null, accepted: 2 });
    expect(report.deadLettered?.map((entry) => Object.keys(entry))).toEqual([['line', ...BODY_KEYS]]);
    expect(report.invalidLines).toEqual([{ line: 2, code: 'EVENT_BAD_TIME', message: 'no offset', reason: 'no offset' }]);
  });

  it('under pt-BR the code, the English message and every machine field stay; reason and hint are Portuguese', () => {
    const refused = refusal('LABEL_ENCRYPTED', reasonOf('reason.label.encrypted'));
    const english = errorReport(PLACE, refusalReport(refused, 'dlv-1'), 'en');
    const portuguese = errorReport(PLACE, refusalReport(refused, 'dlv-1'), 'pt-BR');
    expect(Object.keys(portuguese)).toEqual([...REPORT_KEYS]);
    expect({ ...portuguese, reason: null }).toEqual({ ...english, reason: null });
    expect(english.reason).toBe(english.message);
    expect(portuguese.reason).toBe(
      'o PDF está criptografado; a plataforma precisa imprimi-lo sem senha: exporte a etiqueta sem criptografia nem restrições de segurança',
    );
    const dead = errorReport(PLACE, deadLetterReport(deadLetterFactsOfOutcome(notFound)), 'pt-BR');
    expect(dead).toMatchObject({ code: 'API_NOT_FOUND', message: 'Delivery not found', apiCode: 'DELIVERY_NOT_FOUND' });
    expect(dead.reason).toBe('a API não conhece a entrega (HTTP 404, DELIVERY_NOT_FOUND): Delivery not found');
    expect(dead.hint).toMatch(/^a API não conhece este id de entrega/);
  });
});
