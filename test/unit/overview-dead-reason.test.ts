/**
 * The overview's dead-letter reason is rendered as `dlq list` renders it: from our code (what it
 * means, in the reader's language) and the API's words. It was rendered from the API's code
 * (DELIVERY_NOT_FOUND), which has no meaning in the catalogs, and read "o item falhou: Delivery not found".
 */
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../../src/i18n/reason.js';
import type { DeadLetterRow } from '../../src/ops/overview-data.js';
import { deadReason } from '../../src/ops/overview-page.js';

const row: DeadLetterRow = {
  id: 'label.d1.x',
  kind: 'label',
  queue: 'label',
  deliveryId: 'd1',
  fileName: 'd1.pdf',
  code: 'DELIVERY_NOT_FOUND',
  errorCode: 'API_NOT_FOUND',
  message: 'Delivery not found',
  status: 404,
  attempts: 4,
  lastFailureAt: '2026-11-26T16:10:30.970Z',
};

describe("the overview's dead-letter reason", () => {
  it('says what our code means in Portuguese, with the API message, as dlq list does', () => {
    expect(deadReason(row, 'pt-BR')).toBe('a API não conhece a entrega: Delivery not found');
    expect(deadReason(row, 'pt-BR')).toBe(describeFailure('pt-BR', { code: row.errorCode, message: row.message }));
  });

  it('is the message itself in English', () => {
    expect(deadReason(row, 'en')).toBe('Delivery not found');
  });
});
