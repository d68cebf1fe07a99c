/**
 * A warehouse with CARRIER_SYNC_LANG=pt-BR, end to end with the spawned daemon: each refused file's
 * `.error.json` keeps its code, English message and machine fields, and gains a Portuguese
 * `reason` (a dead letter's hint too); `validate`, `dlq list` and `history` print Portuguese. The
 * same file checked under the default language gives the English reason: the variable is the only
 * difference.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_KEYS } from '../../src/queue/failure-report.js';
import { makeCteXml, makePdf } from '../support/builders.js';
import { createE2eEnv, dropFile, listFiles, type E2eEnv } from '../support/e2e-env.js';
import { killAllDaemons, runCli, spawnDaemon, waitUntilStarted } from '../support/process.js';
import { englishWordsIn } from '../support/english-words.js';
import { waitFor } from '../support/wait.js';

const PT = { CARRIER_SYNC_LANG: 'pt-BR' };
const TRUNCATED = 'test/fixtures/labels/bad-no-eof.pdf';

let env: E2eEnv;
let opsUrl = '';
const ids = { truncated: 'CUT-0042', cte: randomUUID(), unknown: randomUUID() };

async function report(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(env.spool, 'failed', path), 'utf8')) as Record<string, unknown>;
}

beforeAll(async () => {
  env = await createE2eEnv();
  const daemon = spawnDaemon({ ...env.env, ...PT }, { args: env.args('start') });
  await waitUntilStarted(daemon);
  opsUrl = String(daemon.logs().find((line) => line.msg === 'carrier-sync started')?.['opsUrl']);
  const good = env.sandbox.state.addDelivery().id;
  await dropFile(join(env.spool, 'labels'), `${ids.truncated}.pdf`, await readFile(TRUNCATED));
  await dropFile(join(env.spool, 'cte'), `${ids.cte}.xml`, makeCteXml({ destCpf: '11111111111' }));
  await dropFile(join(env.spool, 'labels'), `${ids.unknown}.pdf`, await makePdf('a delivery the API does not know'));
  const events = [
    JSON.stringify({ delivery_id: good, event_at: '2026-03-01T10:00:00-03:00' }),
    JSON.stringify({ delivery_id: good, event_at: '2026-03-01T10:00:00' }),
  ];
  await dropFile(join(env.spool, 'events'), 'coletas.ndjson', `${events.join('\n')}\n`);
  const reports = [`labels/${ids.truncated}.pdf`, `cte/${ids.cte}.xml`, `labels/${ids.unknown}.pdf`, 'events/coletas.ndjson'].map((p) => `${p}.error.json`);
  await waitFor(
    async () => {
      const failed = await listFiles(join(env.spool, 'failed'));
      return reports.every((path) => failed.includes(path));
    },
    { what: 'the four reports in failed/', timeoutMs: 40_000 },
  );
}, 90_000);

afterAll(async () => {
  await killAllDaemons();
  await env?.close();
});

describe('CARRIER_SYNC_LANG=pt-BR', () => {
  it("a refused label's .error.json has the same code and English message, and a Portuguese reason", async () => {
    const body = await report(`labels/${ids.truncated}.pdf.error.json`);
    expect(Object.keys(body)).toEqual([...REPORT_KEYS]);
    expect(body).toMatchObject({ code: 'LABEL_TRUNCATED', deliveryId: ids.truncated, status: null });
    expect(body['message']).toMatch(/^the file has no %%EOF marker/);
    expect(body['reason']).toBe(
      'o arquivo não tem o marcador %%EOF: está cortado ou não terminou de ser gravado; a API exige que o arquivo TERMINE com %%EOF: exporte-o de novo por completo',
    );
  });

  it("a refused CT-e's reason names the field in the warehouse's words; the message stays English", async () => {
    const body = await report(`cte/${ids.cte}.xml.error.json`);
    expect(body['code']).toBe('CTE_FIELD_INVALID');
    expect(body['reason']).toBe(
      'infCte/dest/CPF "11111111111" repete um só dígito, o que nunca é um CPF real; a API valida estes campos: corrija-os e emita o CT-e de novo',
    );
    expect(body['message']).toMatch(/^infCte\/dest\/CPF "11111111111" repeats one digit, which is never a real CPF; the API validates/);
  });

  it("a dead letter's reason and hint are Portuguese, from its code and the API's answer", async () => {
    const body = await report(`labels/${ids.unknown}.pdf.error.json`);
    expect(body).toMatchObject({ code: 'API_NOT_FOUND', status: 404, apiCode: 'DELIVERY_NOT_FOUND' });
    expect(body['reason']).toBe(`a API não conhece a entrega (HTTP 404, DELIVERY_NOT_FOUND): ${String(body['apiMessage'])}`);
    expect(body['hint']).toMatch(/^a API não conhece este id de entrega: confira o nome do arquivo/);
  });

  it("an events file's report gives each invalid line a Portuguese reason", async () => {
    // The lines report is written again once the file is archived, saying where it went.
    const body = await waitFor(
      async () => {
        const read = await report('events/coletas.ndjson.error.json');
        return read['archivedTo'] === null ? null : read;
      },
      { what: "the lines report naming the archived file's place" },
    );
    expect(body['reason']).toBe('1 linha inválida; os registros válidos foram enviados');
    expect(body['archivedTo']).toMatch(/^archive\/events\/\d{4}-\d\d-\d\d\/coletas\.ndjson$/);
    expect(body['invalidLines']).toEqual([
      {
        line: 2,
        code: 'EVENT_BAD_TIME',
        message:
          'event_at "2026-03-01T10:00:00" has no UTC offset; add Z or ±hh:mm, or set CARRIER_SYNC_EVENTS_TIME_ZONE (e.g. America/Sao_Paulo) to the zone such times are written in (we never guess a timezone)',
        reason:
          'event_at "2026-03-01T10:00:00" não tem fuso horário (UTC); acrescente Z ou ±hh:mm, ou defina CARRIER_SYNC_EVENTS_TIME_ZONE (por exemplo America/Sao_Paulo) com o fuso em que essas horas são escritas (nunca adivinhamos o fuso)',
      },
    ]);
  });

  it("an events file's invalid lines are found by its name: history --file and the overview's refused list", async () => {
    const lines = await runCli(env.args('history', '--file', 'coletas.ndjson'), { env: { ...env.env, ...PT } });
    expect(lines.code, lines.stderr).toBe(0);
    expect(lines.stdout).toMatch(
      /^arquivo coletas\.ndjson, lido em \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d: 1 linha inválida, não enviada \(os registros válidos foram enviados\)\n/,
    );
    expect(lines.stdout).toContain('\n  linha 2: event_at "2026-03-01T10:00:00" não tem fuso horário (UTC)');
    expect(lines.stdout).toContain('recebido de coletas.ndjson linha 1');
    // --json keeps English keys and values, and has the file's record too.
    const json = await runCli(env.args('history', '--file', 'coletas.ndjson', '--json'), { env: { ...env.env, ...PT } });
    const steps = json.stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(steps.find((step) => step['step'] === 'invalid-lines')).toMatchObject({
      delivery_id: null,
      kind: 'collecting',
      file: 'coletas.ndjson',
      count: 1,
      lines: [{ line: 2, code: 'EVENT_BAD_TIME' }],
    });

    const overview = (await (await fetch(`${opsUrl}/ui/overview.json`)).json()) as { details: { refusals: { latest: Array<Record<string, unknown>> } } };
    const row = overview.details.refusals.latest.find((refusal) => refusal['file'] === 'coletas.ndjson');
    expect(row).toMatchObject({ kind: 'events', code: 'EVENT_BAD_TIME' });
    expect(row?.['reason']).toMatch(/^1 invalid line, not sent \(the valid records were sent\): line 2: event_at "2026-03-01T10:00:00" has no UTC offset/);
    const page = await (await fetch(`${opsUrl}/ui`, { headers: { 'accept-language': 'pt-BR' } })).text();
    expect(page).toContain('1 linha inválida, não enviada (os registros válidos foram enviados): linha 2: event_at');
    const search = await (await fetch(`${opsUrl}/ui/history?q=coletas.ndjson`, { headers: { 'accept-language': 'pt-BR' } })).text();
    expect(search).toContain('data-events-file="coletas.ndjson"');
    expect(search).toContain('data-invalid-line="2"');
  });

  it('validate, dlq list and history print Portuguese; the same validate without the variable prints English', async () => {
    const file = join(env.spool, 'failed', 'labels', `${ids.truncated}.pdf`);
    const pt = await runCli(env.args('validate', file), { env: { ...env.env, ...PT } });
    expect(pt.code).toBe(1);
    expect(pt.stdout).toContain(`INVÁLIDO ${file}\n        LABEL_TRUNCATED: o arquivo não tem o marcador %%EOF`);
    const en = await runCli(env.args('validate', '--json', file), { env: env.env });
    const [verdict] = JSON.parse(en.stdout) as Array<{ code: string; message: string; reason: string }>;
    expect(verdict?.code).toBe('LABEL_TRUNCATED');
    expect(verdict?.reason).toBe(verdict?.message);

    const dlq = await runCli(env.args('dlq', 'list'), { env: { ...env.env, ...PT } });
    expect(dlq.stdout).toContain(`tipo etiqueta  entrega ${ids.unknown}`);
    expect(dlq.stdout).toMatch(/API_NOT_FOUND \/ DELIVERY_NOT_FOUND \(HTTP 404\): a API não conhece a entrega: /);
    expect(dlq.stdout).toContain('1 falha definitiva');

    // The move's step is written after the move (journey-files.ts), within a flush.
    const history = await waitFor(
      async () => {
        const read = await runCli(env.args('history', ids.truncated), { env: { ...env.env, ...PT } });
        return read.stdout.includes('arquivo movido para failed/') ? read : null;
      },
      { what: 'the move in the journey' },
    );
    expect(history.stdout).toContain(`entrega ${ids.truncated}`);
    expect(history.stdout).toContain('recusado localmente: LABEL_TRUNCATED: o arquivo não tem o marcador %%EOF');
    expect(history.stdout).toContain(`arquivo movido para failed/labels/${ids.truncated}.pdf`);
    expect(history.stdout).toContain(`etiqueta ${ids.truncated}.pdf`);

    const status = await runCli(env.args('status'), { env: { ...env.env, ...PT } });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^fila +aguardando +adiados +enviando +concluídos/);
    expect(status.stdout).toMatch(/\netiqueta +\d+/);
    expect(status.stdout).toMatch(/\nlimite de requisições: \d+ de 300 por minuto na janela/);
    expect(status.stdout).toContain('\nRedis: servidor único, primário ');

    // No English beyond the kept terms, once the API's own words (quoted as it gave them) are set aside.
    const apiWords = [...new Set([...dlq.stdout.matchAll(/DELIVERY_NOT_FOUND \(HTTP 404\): a API não conhece a entrega: (.*)/g)].map((m) => m[1]!))];
    for (const [command, output] of Object.entries({ validate: pt.stdout, 'dlq list': dlq.stdout, history: history.stdout, status: status.stdout })) {
      const prose = apiWords.reduce((text, words) => text.split(words).join(' '), output);
      expect(englishWordsIn(prose), `English words in ${command}:\n${output}`).toEqual([]);
    }
  });
  it('enqueue and resume answer in Portuguese, resume with the local time and its offset (issue 45)', async () => {
    const deliveryId = randomUUID();
    const local = { ...env.env, ...PT, TZ: 'America/Sao_Paulo' };
    const queued = await runCli(env.args('enqueue', 'collecting', '--delivery-id', deliveryId, '--event-at', '2026-11-25T08:00:00-03:00'), { env: local });
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toMatch(new RegExp(`^na fila: collecting\\.${deliveryId}\\.`));
    const again = await runCli(env.args('enqueue', 'collecting', '--delivery-id', deliveryId, '--event-at', '2026-11-25T11:00:00Z'), { env: local });
    expect(again.stdout).toBe(`duplicado: um evento em 2026-11-25 08:00:00 -03:00 já foi registrado para a entrega ${deliveryId}; não é enviado de novo\n`);
    const resumed = await runCli(env.args('resume'), { env: local });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe('filas retomadas (nenhuma pausa por 401 estava registrada)\n');
    for (const output of [queued.stdout, again.stdout, resumed.stdout]) expect(englishWordsIn(output.replace(/collecting\.\S+/g, ''))).toEqual([]);
  });
});
