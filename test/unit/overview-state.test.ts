/**
 * The overview agrees with itself (issue 45): its headline is computed from the counts its tiles
 * show (never a green "nothing waiting" beside a backlog or dead letters), the refused-files tile
 * agrees with the rows under it, the 401 headline says what to do in the page's language (not the
 * English message with its kind twice), and dead-letter reasons are whole.
 */
import { describe, expect, it } from 'vitest';
import { stateOf, type BacklogRow, type DeadLetterRow, type Overview, type OverviewDetails } from '../../src/ops/overview-data.js';
import { renderPage, renderParts } from '../../src/ops/overview-page.js';
import { englishWordsIn } from '../support/english-words.js';

const NOW = '2026-11-25T10:00:00.000Z';
const row = (kind: BacklogRow['kind'], over: Partial<BacklogRow> = {}): BacklogRow => ({
  kind,
  spoolKind: kind === 'label' ? 'labels' : kind === 'cte' ? 'cte' : 'events',
  queue: `q-${kind}`,
  inbox: 0,
  queued: 0,
  active: 0,
  delayed: 0,
  deadLetters: 0,
  ...over,
});
const LONG_MESSAGE =
  'Delivery not found: the delivery id 93818ca0-e0f0-41c5-b3db-07bad5c1decf is unknown to the platform; create the delivery first, then send its documents again';
const deadLetter = (n: number): DeadLetterRow => ({
  id: `label:${n}`,
  kind: 'label',
  queue: 'q-label',
  deliveryId: `d-${n}`,
  fileName: `d-${n}.pdf`,
  code: 'DELIVERY_NOT_FOUND',
  errorCode: 'API_NOT_FOUND',
  message: `label: the API does not know the resource (HTTP 404) DELIVERY_NOT_FOUND: ${LONG_MESSAGE}`,
  status: 404,
  attempts: 8,
  lastFailureAt: NOW,
});

function details(backlog: BacklogRow[], deadLetters: number, refusals: Partial<OverviewDetails['refusals']> = {}): OverviewDetails {
  const latest = Array.from({ length: deadLetters }, (_, i) => deadLetter(i));
  return {
    spoolHolder: null,
    topology: null,
    activity: { at: [0], requests: [0], sent: [0], rateLimited: [0], deadLettered: [0], refused: [0] },
    backlog,
    refusals: { total: 0, lineFiles: 0, byCode: [], latest: [], ...refusals },
    deadLetters: { total: deadLetters, byCode: deadLetters === 0 ? [] : [{ code: 'DELIVERY_NOT_FOUND', count: deadLetters }], codesOf: deadLetters, latest },
    notifications: [],
  };
}

const sources = { isDraining: () => false };
function overviewOf(d: OverviewDetails, failure: Parameters<typeof stateOf>[1] = null): Overview {
  return { at: NOW, state: stateOf(sources, failure, d), ratePerMinute: 300, maxQueued: 5000, spoolId: null, version: '0.0.0', node: 'v20', details: d };
}
/** The text of an HTML part, tags dropped, entities of the escape function read back. */
const textOf = (html: string): string =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)))
    .replace(/\s+/g, ' ')
    .trim();

describe('the overview headline', () => {
  it('counts what the Backlog tile counts: 4 delayed items and 2 dead letters are not "nothing waiting"', () => {
    const o = overviewOf(details([row('label', { delayed: 3 }), row('cte', { delayed: 1 }), row('collecting')], 2));
    expect(o.state.code).toBe('working');
    expect(o.state.counts).toMatchObject({ pending: 4, inbox: 0, deadLetters: 2 });
    const parts = renderParts(o, '/ui', 'pt-BR');
    const headline = textOf(parts.state);
    expect(headline).toContain('Trabalhando: 4 itens para enviar');
    expect(headline).toContain('2 falhas definitivas aguardam uma pessoa');
    expect(headline).not.toContain('nada aguardando');
    expect(parts.figures).toMatch(/data-figure="backlog">4</);
    // Dead letters are waiting for a person: the dot is not green.
    expect(parts.state).toContain('state-attention');
  });

  it('with nothing to send but dead letters, says that a person is needed (not green)', () => {
    const o = overviewOf(details([row('label'), row('cte'), row('collecting')], 2));
    expect(o.state.code).toBe('attention');
    expect(textOf(renderParts(o, '/ui', 'pt-BR').state)).toContain('Nada para enviar; 2 falhas definitivas aguardam uma pessoa');
    expect(textOf(renderParts(o, '/ui', 'en').state)).toContain('Nothing to send; 2 dead letters wait for a person');
  });

  it('is idle (green, nothing waiting) only when the tiles and the table say nothing waits', () => {
    const o = overviewOf(details([row('label'), row('cte'), row('collecting')], 0));
    expect(o.state.code).toBe('idle');
    const busy = overviewOf(details([row('label', { inbox: 3 }), row('cte'), row('collecting')], 0));
    expect(busy.state.code).toBe('working');
    expect(textOf(renderParts(busy, '/ui', 'pt-BR').state)).toContain('3 na pasta de entrada');
  });

  it('in the 401 state says what to do, in the page language, without the kind twice', () => {
    const failure = { at: NOW, endpoint: 'label', message: 'label: the API refused the key (HTTP 401) Unauthorized', probes: 5 };
    const o = overviewOf(details([row('label', { queued: 4 }), row('cte'), row('collecting')], 0), failure);
    expect(o.state.code).toBe('paused');
    const pt = textOf(renderParts(o, '/ui', 'pt-BR').state);
    expect(pt).toContain('Pausado: a API recusou a nossa chave de API (401)');
    expect(pt).toContain('O que fazer: corrija a chave (CARRIER_SYNC_CARRIER_KEY');
    expect(pt).toContain('o envio retoma sozinho quando a API aceitá-la');
    expect(pt).toContain('a API respondeu HTTP 401 ao envio de etiqueta: “Unauthorized”; 5 sondagens recusadas desde então');
    expect(pt).not.toContain('label:');
    expect(englishWordsIn(pt)).toEqual([]);
    const en = textOf(renderParts(o, '/ui', 'en').state);
    expect(en).toContain('What to do: fix the key');
    expect(en).toContain('the API answered HTTP 401 to a label sent: “Unauthorized”');
    expect(en).not.toContain('label: label:');
  });
});

describe('the lists under the tiles', () => {
  it('the refused-files tile agrees with its rows: files refused, and files sent with some lines refused, told apart', () => {
    const refusal = (file: string, lines?: number) => ({
      at: NOW,
      kind: lines === undefined ? 'labels' : 'events',
      file,
      code: lines === undefined ? 'LABEL_TRUNCATED' : 'EVENT_BAD_TIME',
      reason: 'r',
      ...(lines === undefined ? {} : { lines }),
    });
    const d = details([row('label'), row('cte'), row('collecting')], 0, {
      total: 2,
      lineFiles: 2,
      byCode: [{ code: 'LABEL_TRUNCATED', count: 2 }],
      latest: [refusal('a.ndjson', 3), refusal('b.pdf'), refusal('c.csv', 1), refusal('d.pdf')],
    });
    const parts = renderParts(overviewOf(d), '/ui', 'pt-BR');
    expect(parts.figures).toMatch(/data-figure="refused-total">2</);
    expect(textOf(parts.figures)).toContain('+2 arquivos com linhas recusadas');
    expect(parts.refusals.match(/data-refusal="lines"/g)).toHaveLength(2);
    expect(textOf(parts.refusals)).toContain('2 arquivos recusados, 2 arquivos com linhas recusadas');
    expect(textOf(parts.refusals)).toContain('arquivo enviado; 3 linhas recusadas');
    expect(textOf(parts.refusals)).toContain('arquivo enviado; 1 linha recusada');
  });

  it('does not say "never sent" of an events file refused after its records were sent', () => {
    const refusal = (file: string, code: string) => ({ at: NOW, kind: 'events', file, code, reason: 'r' });
    const d = details([row('label'), row('cte'), row('collecting')], 0, {
      total: 2,
      lineFiles: 0,
      byCode: [
        { code: 'EVENT_FILE_CHANGED', count: 1 },
        { code: 'EVENT_BAD_TIME', count: 1 },
      ],
      latest: [refusal('scanner.ndjson', 'EVENT_FILE_CHANGED'), refusal('bad.csv', 'EVENT_BAD_TIME')],
    });
    for (const lang of ['en', 'pt-BR'] as const) {
      const parts = renderParts(overviewOf(d), '/ui', lang);
      const text = textOf(parts.refusals) + textOf(parts.figures);
      expect(text).not.toMatch(/never|nunca/);
      expect(parts.refusals.match(/data-refusal="sent"/g)).toHaveLength(1);
      expect(/<tr[^>]*>(?:(?!<\/tr>).)*scanner\.ndjson(?:(?!<\/tr>).)*<\/tr>/s.exec(parts.refusals)?.[0]).toContain('data-refusal="sent"');
    }
    expect(textOf(renderParts(overviewOf(d), '/ui', 'en').refusals)).toContain('its records as read were sent');
    expect(textOf(renderParts(overviewOf(d), '/ui', 'pt-BR').refusals)).toContain('os registros lidos foram enviados');
  });

  it('shows a dead letter reason whole, wrapped in its cell, not cut to two lines', () => {
    const page = renderPage(overviewOf(details([row('label'), row('cte'), row('collecting')], 1)), '/ui', 'en');
    const cell = /<tr class="reason-row" data-dead-reason="label:0"><td><\/td><td colspan="3" class="reason">([^]*?)<\/td>/.exec(page)?.[1] ?? '';
    expect(textOf(cell)).toContain(LONG_MESSAGE);
    expect(cell).not.toContain('clamp');
  });
});
