import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { SyncError, type ErrorCode } from '../errors.js';
import { reasonOf, refusal, renderReason, type Reason } from '../i18n/reason.js';
import { parseEventAt } from './event-at.js';
import { cteLookAlike, cteLookAlikeReason } from './look-alike.js';
import { accessKeyDigit, cnpjProblem, cpfProblem, isAllZeros, type ValueProblem } from './tax-id.js';
import { accept, reject, type Verdict } from './verdict.js';
import { decodeXml } from './xml-encoding.js';
import { asNode, child, childAt, hasTextDeep, text, type XmlNode } from './xml-tree.js';

/**
 * CT-e check for PUT /v1/delivery/cte (contract 4.2): the document must carry infCte with ide/cUF,
 * ide/nCT, ide/dhEmi, emit/CNPJ, vPrest/vTPrest and dest/CNPJ|CPF, filled in and well-formed.
 * Decisions:
 * - DOCTYPE/ENTITY anywhere is refused before parsing (no entity expansion, no XXE): a CT-e never needs one.
 * - CT-e OS (modelo 67, roots CTeOS/cteOSProc) has no dest element (it has toma), but the API requires
 *   dest: refused with CTE_FIELD_MISSING and a message that says a CT-e OS cannot be sent.
 * - A cteProc carrying a cancellation (procCancCTe, a cancellation event 110111, or protocol cStat 101)
 *   is refused with CTE_CANCELLED: a cancelled CT-e cannot document a delivery.
 * - dhEmi without a UTC offset (layout 2.00 wrote local time) is refused: we never guess a timezone.
 * - An all-zero CNPJ passes mod 11: accepted with a warning.
 * - The access key (infCte@Id) is not checked by the API: a mismatch with ide or a bad key check
 *   digit is a warning only.
 */

export interface CteSummary {
  /** The decoded text, BOM stripped, its declaration saying UTF-8: what is sent as xml_cte_string. */
  xml: string;
  /** The encoding its declaration named when that was not UTF-8 (the declaration sent says UTF-8); null otherwise. */
  declaredEncoding: string | null;
  root: string;
  model: '57' | '67' | null;
  version: string;
  cUF: string;
  nCT: string;
  dhEmi: string;
  emitCnpj: string;
  vTPrest: string;
  destDocument: { type: 'CNPJ' | 'CPF'; value: string };
  accessKey: string | null;
}

interface Problem {
  code: ErrorCode;
  reason: Reason;
}

type Rule = (value: string) => ValueProblem | null;

/** Accepted roots → the element that holds infCte. */
const DOCUMENT_OF: ReadonlyMap<string, string> = new Map([
  ['CTe', 'CTe'],
  ['cteProc', 'CTe'],
  ['CTeOS', 'CTeOS'],
  ['cteOSProc', 'CTeOS'],
]);
const STATE_CODES = new Set([11, 12, 13, 14, 15, 16, 17, 21, 22, 23, 24, 25, 26, 27, 28, 29, 31, 32, 33, 35, 41, 42, 43, 50, 51, 52, 53]);
const DH_EMI = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})?$/;
const DECIMAL = /^\d{1,13}(\.\d{1,2})?$/;
const ACCESS_KEY = /^CTe(\d{2})\d{4}([0-9A-Z]{14})(\d{2})\d{3}(\d{9})\d{9}(\d)$/;
const CTE_NAMESPACE = 'http://www.portalfiscal.inf.br/cte';

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // No callbacks here take a path: without this the parser spells out every element's path as a
  // string (a seventh of a CT-e check; ingest bench, BENCHMARKS.md item 6).
  jPath: false,
});

export function checkCte(bytes: Uint8Array, options: { maxBytes: number }): Verdict<CteSummary> {
  if (bytes.length > options.maxBytes) {
    return fail('CTE_TOO_LARGE', reasonOf('reason.cte.tooLarge', { bytes: String(bytes.length), max: String(options.maxBytes) }));
  }
  if (bytes.length === 0) return fail('CTE_NOT_XML', reasonOf('reason.cte.empty'));
  const decoded = decodeXml(bytes);
  if (decoded instanceof SyncError) return reject(decoded);
  const xml = decoded.text;
  if (/<!(DOCTYPE|ENTITY)/i.test(xml)) {
    return fail('CTE_DOCTYPE', reasonOf('reason.cte.doctype'));
  }
  const wellFormed = XMLValidator.validate(xml);
  if (wellFormed !== true) {
    const { msg, line, col } = wellFormed.err;
    const at = { detail: msg, line: String(line) };
    return fail(
      'CTE_NOT_XML',
      col === undefined ? reasonOf('reason.cte.notWellFormed', at) : reasonOf('reason.cte.notWellFormedAt', { ...at, column: String(col) }),
    );
  }
  let tree: XmlNode;
  try {
    tree = parser.parse(xml) as XmlNode;
  } catch (error) {
    return fail('CTE_NOT_XML', reasonOf('reason.cte.unreadable', { detail: error instanceof Error ? error.message : String(error) }));
  }
  const root = Object.keys(tree).find((key) => !key.startsWith('?')) ?? '';
  const verdict = checkDocument(xml, root, tree[root]);
  return verdict.ok ? accept({ ...verdict.value, declaredEncoding: decoded.declared }, verdict.warningReasons) : verdict;
}

function checkDocument(xml: string, root: string, rootNode: unknown): Verdict<Omit<CteSummary, 'declaredEncoding'>> {
  const documentName = DOCUMENT_OF.get(root);
  if (documentName === undefined) {
    const lookAlike = cteLookAlike(root);
    return fail('CTE_NOT_CTE', cteLookAlikeReason(lookAlike, root), { lookAlike, root });
  }
  const document = root === documentName ? rootNode : child(rootNode, documentName);
  if (document === undefined) return fail('CTE_NOT_CTE', reasonOf('reason.cte.noDocument', { root, document: documentName }));
  const infCte = child(document, 'infCte');
  if (infCte === undefined) return fail('CTE_FIELD_MISSING', reasonOf('reason.cte.noInfCte', { document: documentName }));
  const cancelled = cancellation(root, rootNode);
  if (cancelled !== null) return fail('CTE_CANCELLED', cancelled);
  const mod = text(childAt(infCte, 'ide/mod'));
  if (child(infCte, 'dest') === undefined && (documentName === 'CTeOS' || mod === '67')) {
    return fail('CTE_FIELD_MISSING', reasonOf('reason.cte.osWithoutDest'));
  }
  const problems: Problem[] = [];
  const field = (path: string, rule: Rule): string => {
    const value = text(childAt(infCte, path));
    if (value === undefined || value === '') problems.push({ code: 'CTE_FIELD_MISSING', reason: reasonOf('reason.cte.fieldMissing', { path }) });
    else {
      const problem = rule(value);
      if (problem !== null) {
        problems.push({ code: 'CTE_FIELD_INVALID', reason: reasonOf(problem.key, { ...problem.values, path, value: JSON.stringify(shorten(value)) }) });
      }
    }
    return value ?? '';
  };
  const cUF = field('ide/cUF', (v) => (/^\d{2}$/.test(v) && STATE_CODES.has(Number(v)) ? null : { key: 'reason.cte.stateCode' }));
  const nCT = field('ide/nCT', (v) => (/^\d{1,9}$/.test(v) && !isAllZeros(v) ? null : { key: 'reason.cte.number' }));
  const dhEmi = field('ide/dhEmi', dhEmiProblem);
  const emitCnpj = field('emit/CNPJ', cnpjProblem);
  const vTPrest = field('vPrest/vTPrest', (v) => (DECIMAL.test(v) ? null : { key: 'reason.cte.decimal' }));
  const destDocument = destOf(child(infCte, 'dest'), problems, field);
  if (problems.length > 0) {
    const reasons = problems.map((p) => p.reason);
    return fail(problems[0]?.code ?? 'CTE_FIELD_INVALID', reasonOf('reason.cte.fields', { problems: reasons }), {
      problems: reasons.map((r) => renderReason('en', r)),
    });
  }
  const warnings: Reason[] = [];
  for (const [name, value] of [
    ['emit/CNPJ', emitCnpj],
    [`dest/${destDocument.type}`, destDocument.value],
  ]) {
    if (value !== undefined && isAllZeros(value)) warnings.push(reasonOf('warning.cte.allZeros', { path: name ?? '' }));
  }
  const model = mod === '57' || mod === '67' ? mod : null;
  if (model === null) warnings.push(reasonOf('warning.cte.model', { value: JSON.stringify(mod ?? '') }));
  const protocolStatus = text(childAt(rootNode, 'protCTe/infProt/cStat'));
  if (protocolStatus !== undefined && protocolStatus !== '100' && protocolStatus !== '150') {
    warnings.push(reasonOf('warning.cte.protocolStatus', { status: protocolStatus }));
  }
  if (!xml.includes(CTE_NAMESPACE)) warnings.push(reasonOf('warning.cte.namespace', { namespace: CTE_NAMESPACE }));
  const accessKey = checkAccessKey(text(child(infCte, '@_Id')), { cUF, nCT, mod: mod ?? '', emitCnpj }, warnings);
  const version = text(child(infCte, '@_versao')) ?? text(child(document, '@_versao')) ?? '';
  return accept({ xml, root, model, version, cUF, nCT, dhEmi, emitCnpj, vTPrest, destDocument, accessKey }, warnings);
}

/** dest holds exactly one of CNPJ and CPF (an XSD choice). */
function destOf(dest: unknown, problems: Problem[], field: (path: string, rule: Rule) => string): CteSummary['destDocument'] {
  const hasCnpj = text(child(dest, 'CNPJ')) !== undefined;
  const hasCpf = text(child(dest, 'CPF')) !== undefined;
  if (hasCnpj && hasCpf) problems.push({ code: 'CTE_FIELD_INVALID', reason: reasonOf('reason.cte.destBoth') });
  if (!hasCnpj && !hasCpf) {
    problems.push({ code: 'CTE_FIELD_MISSING', reason: reasonOf('reason.cte.destNone') });
    return { type: 'CNPJ', value: '' };
  }
  return hasCnpj ? { type: 'CNPJ', value: field('dest/CNPJ', cnpjProblem) } : { type: 'CPF', value: field('dest/CPF', cpfProblem) };
}

function dhEmiProblem(value: string): ValueProblem | null {
  const shape = DH_EMI.exec(value);
  if (shape === null) return { key: 'reason.cte.dateShape' };
  if (shape[1] === undefined) return { key: 'reason.cte.dateNoOffset' };
  return parseEventAt(value) instanceof SyncError ? { key: 'reason.cte.dateNotReal' } : null;
}

/** A cancellation travels with the processed CT-e, outside the signed CTe element. */
function cancellation(root: string, rootNode: unknown): Reason | null {
  if (root !== 'cteProc' && root !== 'cteOSProc') return null;
  if (child(rootNode, 'procCancCTe') !== undefined) return reasonOf('reason.cte.cancelledProc', { root });
  if (text(childAt(rootNode, 'protCTe/infProt/cStat')) === '101') return reasonOf('reason.cte.cancelledStatus', { root });
  const others = Object.entries(asNode(rootNode) ?? {}).filter(([key]) => key !== 'CTe' && key !== 'CTeOS');
  if (others.some(([, value]) => hasTextDeep(value, 'tpEvento', '110111'))) return reasonOf('reason.cte.cancelledEvent', { root });
  return null;
}

function checkAccessKey(id: string | undefined, ide: { cUF: string; nCT: string; mod: string; emitCnpj: string }, warnings: Reason[]): string | null {
  if (id === undefined) {
    warnings.push(reasonOf('warning.cte.noId'));
    return null;
  }
  const key = ACCESS_KEY.exec(id);
  if (key === null) {
    warnings.push(reasonOf('warning.cte.idShape', { value: JSON.stringify(shorten(id)) }));
    return null;
  }
  const [, keyUF, keyCnpj, keyMod, keyNumber, keyDigit] = key;
  if (keyUF !== ide.cUF) warnings.push(reasonOf('warning.cte.keyUf', { key: keyUF ?? '', field: ide.cUF }));
  if (keyMod !== ide.mod) warnings.push(reasonOf('warning.cte.keyModel', { key: keyMod ?? '', field: ide.mod }));
  if (keyNumber !== ide.nCT.padStart(9, '0')) warnings.push(reasonOf('warning.cte.keyNumber', { key: keyNumber ?? '', field: ide.nCT }));
  if (keyCnpj !== ide.emitCnpj) warnings.push(reasonOf('warning.cte.keyCnpj', { key: keyCnpj ?? '', field: ide.emitCnpj }));
  const digits = id.slice(3);
  if (String(accessKeyDigit(digits.slice(0, 43))) !== keyDigit) warnings.push(reasonOf('warning.cte.keyDigit', { digit: keyDigit ?? '' }));
  return digits;
}

function shorten(value: string): string {
  return value.length > 60 ? `${value.slice(0, 60)}…` : value;
}

function fail<T = CteSummary>(code: ErrorCode, reason: Reason, params?: Record<string, unknown>): Verdict<T> {
  return reject(refusal(code, reason, params === undefined ? {} : { params }));
}
