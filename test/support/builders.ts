/** Inputs built in code: tiny valid PDFs and CT-e XMLs, with valid tax ids; collecting events' jobs. */
import { deflateRawSync } from 'node:zlib';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { collectingJobOf, type CollectingJob } from '../../src/store/payloads.js';

/**
 * A collecting event's job as the CLI queues it, for the push gate's own tests: the delivery's
 * `minute`-th event (event_at 2026-01-01 12:<minute> UTC), and its job id.
 */
export function cliEventJob(deliveryId: string, minute = 0): { job: CollectingJob; jobId: string } {
  const epochMs = Date.UTC(2026, 0, 1, 12, minute);
  const at = new Date(epochMs).toISOString();
  const job = collectingJobOf(
    { deliveryId, eventAt: at, wire: at, instantKey: String(epochMs), epochMs },
    `test:${deliveryId}:${minute}`,
    { source: 'cli' },
    new Date().toISOString(),
  );
  return { job, jobId: `collecting.${deliveryId}.${minute}` };
}

export async function makePdf(text = 'label', pages = 1): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < pages; i += 1) doc.addPage([288, 432]).drawText(`${text} p${i + 1}`, { x: 20, y: 400, size: 12, font });
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

function mod11Digit(digits: number[], weights: number[]): number {
  const sum = digits.reduce((acc, d, i) => acc + d * weights[i]!, 0);
  const rest = sum % 11;
  return rest < 2 ? 0 : 11 - rest;
}

/** A valid numeric CNPJ from 12 base digits. */
export function cnpj(base12: string): string {
  const digits = base12.split('').map(Number);
  const d1 = mod11Digit(digits, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  const d2 = mod11Digit([...digits, d1], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  return `${base12}${d1}${d2}`;
}

/** A valid CPF from 9 base digits. */
export function cpf(base9: string): string {
  const digits = base9.split('').map(Number);
  const d1 = mod11Digit(digits, [10, 9, 8, 7, 6, 5, 4, 3, 2]);
  const d2 = mod11Digit([...digits, d1], [11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  return `${base9}${d1}${d2}`;
}

export interface CteFields {
  cUF?: string;
  nCT?: string;
  dhEmi?: string;
  emitCnpj?: string;
  vTPrest?: string;
  destCpf?: string;
}

export function makeCteXml(fields: CteFields = {}): string {
  const f = {
    cUF: '35',
    nCT: '123',
    dhEmi: '2026-03-01T10:00:00-03:00',
    emitCnpj: cnpj('112223330001'),
    vTPrest: '150.00',
    destCpf: cpf('123456789'),
    ...fields,
  };
  return `<?xml version="1.0" encoding="UTF-8"?>
<CTe xmlns="http://www.portalfiscal.inf.br/cte"><infCte versao="4.00" Id="CTe35260311222333000181570010000001231000001234">
<ide><cUF>${f.cUF}</cUF><mod>57</mod><serie>1</serie><nCT>${f.nCT}</nCT><dhEmi>${f.dhEmi}</dhEmi></ide>
<emit><CNPJ>${f.emitCnpj}</CNPJ><xNome>Transportes Teste</xNome></emit>
<vPrest><vTPrest>${f.vTPrest}</vTPrest><vRec>${f.vTPrest}</vRec></vPrest>
<dest><CPF>${f.destCpf}</CPF><xNome>Fulano</xNome></dest>
</infCte></CTe>`;
}

/** A one-entry ZIP: its local header and data only, enough for its magic and its entry's name. */
export function zipWith(entryName: string): Buffer {
  const data = deflateRawSync(Buffer.from('<x/>'));
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(8, 8);
  header.writeUInt32LE(data.length, 18);
  header.writeUInt32LE(4, 22);
  header.writeUInt16LE(entryName.length, 26);
  return Buffer.concat([header, Buffer.from(entryName), data]);
}

/**
 * A hostile label: a valid one-page PDF followed by `objects` tiny objects (`N 0 obj [N] endobj`),
 * all parsed by pdf-lib before it finds the pages. 300,000 of them make ~7.6 MB (under the 10 MB
 * limit) that cost seconds of CPU and hundreds of MB to parse (issue 39's hostile label).
 */
export function manyObjectsPdf(objects: number): Buffer {
  const parts = [
    '%PDF-1.7\n',
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 432] >>\nendobj\n',
  ];
  for (let n = 4; n < objects + 4; n += 1) parts.push(`${n} 0 obj\n<</K ${n}>>\nendobj\n`);
  parts.push(`trailer\n<< /Size ${objects + 4} /Root 1 0 R >>\n%%EOF\n`);
  return Buffer.from(parts.join(''), 'latin1');
}
