/**
 * validators: throughput of the pure checks on generated inputs, each beside the cost of the
 * parser it is built on (measured on the same inputs in the same run): checkLabel vs pdf-lib's
 * PDFDocument.load, checkCte vs fast-xml-parser's validate + parse, parseEventsFile vs JSON.parse
 * of every line (CSV: csv-parse of the file).
 */
import { parse as parseCsvSync } from 'csv-parse/sync';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { PDFDocument, ParseSpeeds } from 'pdf-lib';
import { checkCte } from '../../../src/validate/cte.js';
import { parseEventsFile } from '../../../src/validate/events-file.js';
import { checkLabel } from '../../../src/validate/label.js';
import type { Figure, Scenario } from '../support/report.js';
import { cnpj, cteXml, labelPdf, ndjson, pastInstant } from '../support/inputs.js';
import { round } from '../support/wait.js';

interface Rate {
  opsPerSec: number;
  mbPerSec: number;
}

/** Runs `fn` over the inputs, round robin, for at least `ms` (and at least one full pass). */
async function measure(inputs: readonly Buffer[], ms: number, fn: (input: Buffer) => unknown): Promise<Rate> {
  for (const input of inputs.slice(0, 20)) await fn(input); // warm-up
  let ops = 0;
  let bytes = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < ms || ops < inputs.length) {
    const input = inputs[ops % inputs.length]!;
    await fn(input);
    ops += 1;
    bytes += input.length;
    if (ops % 16 === 0) elapsed = performance.now() - started;
  }
  elapsed = performance.now() - started;
  return { opsPerSec: (ops * 1000) / elapsed, mbPerSec: (bytes * 1000) / elapsed / 1024 / 1024 };
}

const xmlParser = new XMLParser({ ignoreAttributes: false, removeNSPrefix: true, parseTagValue: false, processEntities: false });

export const validatorsScenario: Scenario = {
  name: 'validators',
  async run(env) {
    const ms = env.isQuick ? 600 : 2500;
    const smallLabels = Array.from({ length: 200 }, (_, i) => labelPdf(`label ${i}`, 2048));
    const largeLabels = Array.from({ length: 20 }, (_, i) => labelPdf(`big label ${i}`, 200 * 1024));
    const smallCte = Array.from({ length: 200 }, (_, i) => Buffer.from(cteXml({ nCT: 1000 + i, emitCnpj: cnpj(String(112223330000 + i)) })));
    const largeCte = Array.from({ length: 20 }, (_, i) => Buffer.from(cteXml({ nCT: 5000 + i, cargoItems: 2000 })));
    const lines = env.isQuick ? 5000 : 20_000;
    const events = Buffer.from(
      ndjson(Array.from({ length: lines }, (_, i) => ({ delivery_id: `dlv-${i % 997}`, event_at: pastInstant(i).toISOString().replace('Z', '-00:00') }))),
    );
    const eventsCsv = Buffer.from(
      `delivery_id,event_at\n${Array.from({ length: lines }, (_, i) => `dlv-${i % 997},${pastInstant(i).toISOString()}`).join('\n')}\n`,
    );
    const limits = { maxBytes: 10 * 1024 * 1024 };

    const rows: Array<{ what: string; unit: string; ours: Rate; ref: Rate; refName: string; perOp?: number }> = [];
    const pdfLoad = (b: Buffer): Promise<PDFDocument> =>
      PDFDocument.load(b, { updateMetadata: false, ignoreEncryption: true, throwOnInvalidObject: true, parseSpeed: ParseSpeeds.Medium });
    rows.push({
      what: 'checkLabel 2 KB',
      unit: 'files',
      ours: await measure(smallLabels, ms, (b) => checkLabel(b, limits)),
      ref: await measure(smallLabels, ms, pdfLoad),
      refName: 'PDFDocument.load',
    });
    rows.push({
      what: 'checkLabel 200 KB',
      unit: 'files',
      ours: await measure(largeLabels, ms, (b) => checkLabel(b, limits)),
      ref: await measure(largeLabels, ms, pdfLoad),
      refName: 'PDFDocument.load',
    });
    const xmlRef = (b: Buffer): unknown => {
      const text = b.toString('utf8');
      XMLValidator.validate(text);
      return xmlParser.parse(text);
    };
    rows.push({
      what: `checkCte ${round(smallCte[0]!.length / 1024)} KB`,
      unit: 'files',
      ours: await measure(smallCte, ms, (b) => checkCte(b, limits)),
      ref: await measure(smallCte, ms, xmlRef),
      refName: 'fast-xml-parser validate+parse',
    });
    rows.push({
      what: `checkCte ${Math.round(largeCte[0]!.length / 1024)} KB`,
      unit: 'files',
      ours: await measure(largeCte, ms, (b) => checkCte(b, limits)),
      ref: await measure(largeCte, ms, xmlRef),
      refName: 'fast-xml-parser validate+parse',
    });
    const jsonLines = (b: Buffer): number =>
      b
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as unknown).length;
    const ev = await measure([events], ms, (b) => parseEventsFile(b.toString('utf8'), 'ndjson', { maxLineBytes: 8192 }));
    const evRef = await measure([events], ms, jsonLines);
    rows.push({
      what: `parseEventsFile NDJSON (${lines.toLocaleString('en-US')} lines)`,
      unit: 'lines',
      ours: { ...ev, opsPerSec: ev.opsPerSec * lines },
      ref: { ...evRef, opsPerSec: evRef.opsPerSec * lines },
      refName: 'JSON.parse per line',
    });
    const csv = await measure([eventsCsv], ms, (b) => parseEventsFile(b.toString('utf8'), 'csv', { maxLineBytes: 8192 }));
    const csvRef = await measure([eventsCsv], ms, (b) =>
      parseCsvSync(b.toString('utf8'), { bom: true, info: true, relax_column_count: true, skip_empty_lines: true, trim: true }),
    );
    rows.push({
      what: `parseEventsFile CSV (${lines.toLocaleString('en-US')} lines)`,
      unit: 'lines',
      ours: { ...csv, opsPerSec: csv.opsPerSec * lines },
      ref: { ...csvRef, opsPerSec: csvRef.opsPerSec * lines },
      refName: 'csv-parse (info) of the file',
    });

    const figures: Figure[] = rows.map((row) => ({
      metric: row.what,
      value: `${Math.round(row.ours.opsPerSec).toLocaleString('en-US')} ${row.unit}/s, ${round(row.ours.mbPerSec)} MB/s`,
      unit: '',
      reference: `${row.refName}: ${Math.round(row.ref.opsPerSec).toLocaleString('en-US')}/s (ours ${round(row.ours.opsPerSec / row.ref.opsPerSec, 2)}×)`,
    }));
    return {
      figures,
      notes: [
        `single thread, ${ms} ms per measurement after a warm-up; inputs generated in code (labels: one-page PDFs with a text stream; CT-e: CTe 4.00 with valid CNPJ/CPF, large ones with 2,000 infQ; events: one delivery_id/event_at object per line)`,
        'ratio < 1 means our check costs more than the bare parser it relies on (the extra is the header/trailer/encryption scans and field checks)',
      ],
      details: { rows },
    };
  },
};
