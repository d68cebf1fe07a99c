/**
 * The mixed drop's files (issue 14's mix; `scale` 10 makes issue 29's large drop): labels and
 * CT-e the API takes, refuses or does not know, files our checks refuse, and events files with
 * duplicates and malformed records, each with the outcome it must have.
 *   per scale unit: 840 labels (480 valid, 200 refused by our checks, 160 refused by the API),
 *   600 CT-e (360 valid, 160 refused by our checks, 80 by the API), 4 events files (560 unique
 *   events over 140 deliveries, 4 each, plus same-instant duplicates and malformed records).
 */
import { randomUUID } from 'node:crypto';
import type { startSandbox } from '../../../src/sandbox/server.js';
import { cnpj, cteXml, labelPdf, pastInstant, sameInstantOtherwise, shuffle } from './inputs.js';

export type Kind = 'labels' | 'cte' | 'events';
export type Expect = { outcome: 'accepted' } | { outcome: 'refused'; code: string } | { outcome: 'dead'; apiCode: string };
export interface DropFile {
  name: string;
  bytes: Buffer;
  kind: Kind;
  expect: Expect;
}

/**
 * The drop's files and what must become of each, `scale` times the mix (1: 1,444 files; 10: the
 * large drop, 14,440 files, same shares of each kind and outcome).
 */
export function buildDrop(
  sandbox: Awaited<ReturnType<typeof startSandbox>>,
  scale = 1,
): {
  files: DropFile[];
  events: { unique: number; duplicates: number; malformed: number; deliveries: number };
} {
  const carriers = [...sandbox.state.carriers.keys()];
  const other = carriers[1] ?? '';
  const known = Array.from({ length: 480 * scale }, () => sandbox.state.addDelivery({}).id);
  const cancelled = Array.from({ length: 50 * scale }, () => sandbox.state.addDelivery({ status_name: 'CANCELLED' }).id);
  const foreign = Array.from({ length: 90 * scale }, () => sandbox.state.addDelivery({ carrier_id: other }).id);
  const unknown = Array.from({ length: 100 * scale }, () => randomUUID());
  const files: DropFile[] = [];
  const accepted: Expect = { outcome: 'accepted' };
  const refused = (code: string): Expect => ({ outcome: 'refused', code });
  const label = (id: string, i: number, expect: Expect, bytes?: Buffer): void => {
    files.push({
      name: i % 3 === 0 ? `${id}__ext-${i}.pdf` : `${id}.pdf`,
      bytes: bytes ?? labelPdf(`drop ${i}`, 1500 + (i % 7) * 300),
      kind: 'labels',
      expect,
    });
  };
  const cte = (id: string, i: number, expect: Expect, xml?: string): void => {
    files.push({
      name: `${id}.xml`,
      bytes: Buffer.from(xml ?? cteXml({ nCT: 7000 * scale + i, emitCnpj: cnpj(String(112223330000 + i)) })),
      kind: 'cte',
      expect,
    });
  };
  // Labels: 480 valid, 160 refused by the API, 200 refused by our checks.
  known.forEach((id, i) => label(id, i, accepted));
  cancelled.forEach((id, i) => label(id, 1000 * scale + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_ELIGIBLE' }));
  foreign.slice(0, 50 * scale).forEach((id, i) => label(id, 1100 * scale + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
  unknown.slice(0, 60 * scale).forEach((id, i) => label(id, 1200 * scale + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
  const good = labelPdf('broken');
  for (let i = 0; i < 50 * scale; i += 1) {
    label(randomUUID(), 3000 * scale + i, refused('LABEL_NOT_PDF'), Buffer.from(`not a pdf ${i}\n`));
    label(randomUUID(), 3100 * scale + i, refused('LABEL_TRUNCATED'), good.subarray(0, good.length - 200));
    label(randomUUID(), 3200 * scale + i, refused('LABEL_TRAILING_DATA'), Buffer.concat([good, Buffer.from(`junk after the end ${i}`)]));
    files.push({ name: `bad name ${i}!.pdf`, bytes: labelPdf(`bad name ${i}`), kind: 'labels', expect: refused('SPOOL_BAD_NAME') });
  }
  // CT-e: 360 valid (some of cancelled deliveries: the API takes a CT-e whatever the status), 80 refused by the API, 160 by our checks.
  known.slice(0, 330 * scale).forEach((id, i) => cte(id, i, accepted));
  cancelled.slice(0, 30 * scale).forEach((id, i) => cte(id, 400 * scale + i, accepted));
  foreign.slice(50 * scale).forEach((id, i) => cte(id, 1100 * scale + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
  unknown.slice(60 * scale).forEach((id, i) => cte(id, 1200 * scale + i, { outcome: 'dead', apiCode: 'DELIVERY_NOT_FOUND' }));
  for (let i = 0; i < 40 * scale; i += 1) {
    cte(randomUUID(), 3000 * scale + i, refused('CTE_NOT_XML'), `<CTe><infCte>${i}</CTe>`);
    cte(randomUUID(), 3100 * scale + i, refused('CTE_DOCTYPE'), cteXml({ nCT: 3100 * scale + i, doctype: true }));
    cte(randomUUID(), 3200 * scale + i, refused('CTE_FIELD_MISSING'), cteXml({ nCT: 3200 * scale + i, hasDest: false }));
    const valid = cnpj(String(112223330000 + i));
    cte(
      randomUUID(),
      3300 * scale + i,
      refused('CTE_FIELD_INVALID'),
      cteXml({ nCT: 3300 * scale + i, emitCnpj: `${valid.slice(0, 13)}${(Number(valid.slice(13)) + 1) % 10}` }),
    );
  }
  // Events: 4 files × 35 deliveries × 4 events, + 10 same-instant duplicates and 5 malformed records each.
  const perFile = 35;
  const perDelivery = 4;
  let instant = 0;
  for (let f = 0; f < 4 * scale; f += 1) {
    const isCsv = f % 2 === 1;
    const rows: Array<{ delivery_id: string; event_at: string }> = [];
    for (const deliveryId of known.slice(f * perFile, (f + 1) * perFile)) {
      for (let e = 0; e < perDelivery; e += 1) rows.push({ delivery_id: deliveryId, event_at: pastInstant(instant++).toISOString() });
    }
    const repeats = rows.slice(0, 10).map((row, k) => ({ delivery_id: row.delivery_id, event_at: sameInstantOtherwise(new Date(row.event_at), k) }));
    const lines = shuffle([...rows, ...repeats], 14 + f).map((row) => (isCsv ? `${row.delivery_id},${row.event_at}` : JSON.stringify(row)));
    const malformed = isCsv
      ? [
          `${known[0] ?? ''},yesterday`,
          'not/a valid id,2026-01-10T08:00:00Z',
          `${known[1] ?? ''},`,
          `${known[2] ?? ''},2026-01-10T08:00:00`,
          `${known[3] ?? ''},"unclosed`,
        ]
      : [
          '{"delivery_id": "x"',
          JSON.stringify({ delivery_id: known[0] }),
          JSON.stringify({ delivery_id: known[1], event_at: 'yesterday' }),
          '[1,2]',
          JSON.stringify({ delivery_id: 'not/a valid id', event_at: '2026-01-10T08:00:00Z' }),
        ];
    malformed.forEach((line, k) => lines.splice(7 + k * 23, 0, line));
    const text = `${isCsv ? 'delivery_id,event_at\n' : ''}${lines.join('\n')}\n`;
    files.push({ name: `drop-events-${f}.${isCsv ? 'csv' : 'ndjson'}`, bytes: Buffer.from(text), kind: 'events', expect: accepted });
  }
  return { files, events: { unique: 4 * scale * perFile * perDelivery, duplicates: 40 * scale, malformed: 20 * scale, deliveries: 4 * scale * perFile } };
}
