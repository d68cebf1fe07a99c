/**
 * A journey step as one line of a timeline a person reads (`carrier-sync history`, the history
 * page), in the reader's language: one message a step kind. A refusal's reason comes from its kept
 * key when it has one; what the API said is quoted as it said it.
 */
import { describeFailure } from '../i18n/reason.js';
import { say, type Lang, type MessageKey, type MessageValues } from '../i18n/translate.js';
import type { JourneyStep } from './journey-read.js';

/** An attempt's trace as the reader follows it: the template with `{traceId}` replaced, or the id itself. */
export function traceLinkOf(traceId: string, template: string | null): string {
  return template === null ? traceId : template.replaceAll('{traceId}', traceId);
}

/** How a step's text writes a time and a long internal number (sha256, generation): the CLI and the page differ. */
export interface StepFormat {
  time: (iso: string) => string;
  long: (value: string) => string;
}

const AS_STORED: StepFormat = { time: (iso) => iso, long: (value) => value };

export function describeStep(step: JourneyStep, lang: Lang = 'en', format: StepFormat = AS_STORED): string {
  const t = (key: MessageKey, values?: MessageValues): string => say(lang, key, values);
  const { time, long } = format;
  const codes = [step.code, step.apiCode].filter((c) => c !== undefined).join(' / ');
  switch (step.step) {
    case 'folded':
      return foldedText(step, t);
    case 'seen':
      if (step.compacted === true) return t('history.seenFolded', { size: String(step.size ?? '?'), sha256: step.sha256 ?? '?' });
      return t('history.seen', { size: String(step.size ?? '?'), sha256: long(step.sha256 ?? '?'), mtime: step.mtime === undefined ? '?' : time(step.mtime) });
    case 'claimed':
      return t('history.claimed', { host: step.host ?? '?', pid: String(step.pid ?? '?') });
    case 'valid':
      return step.paddingBytes === undefined ? t('history.valid') : t('history.validPadding', { bytes: String(step.paddingBytes) });
    case 'refused':
      return t('history.refused', {
        code: step.code ?? '?',
        reason: describeFailure(lang, { code: step.code ?? '?', message: step.message ?? '', reason: step.reason }),
      });
    case 'queued':
      return t('history.queued', { generation: step.generation === undefined ? '-' : long(step.generation) });
    case 'received':
      return step.source === 'file'
        ? t('history.receivedFile', { file: step.file ?? '?', line: String(step.line ?? '?') })
        : t('history.received', { source: step.source ?? '?' });
    case 'held':
      return t('history.held', { dueAt: step.dueAt === undefined ? '?' : time(step.dueAt) });
    case 'duplicate':
      if (step.duplicateOfRef !== undefined) return duplicateText(step.duplicateOfRef, t, time);
      if (step.duplicateOf !== undefined) return t('history.duplicateOf', { of: step.duplicateOf });
      return step.message === undefined ? t('history.duplicateTaken') : t('history.duplicate', { message: step.message });
    case 'attempt':
      return attemptText(step, t, codes, lang);
    case 'superseded':
      return step.supersededBy === undefined ? t('history.supersededNewer', { kind: step.kind }) : t('history.superseded', { by: step.supersededBy });
    case 'already-accepted':
      return t('history.alreadyAccepted');
    case 'resent':
      // The stored reason is this message's English text (gate/push-gate.ts RESENT_REASON).
      return t('history.resent');
    case 'accepted':
      return t('history.accepted');
    case 'dead-lettered':
      return t('history.deadLettered', { codes, message: step.message ?? '' }).trim();
    case 'replayed':
      return t(step.by === 'ui' ? 'history.replayedUi' : step.by === 'cli' ? 'history.replayedCli' : 'history.replayedFile');
    case 'webhook-set': {
      const answer =
        step.code === undefined ? `HTTP ${step.status ?? '?'}` : `${step.status === undefined ? '' : `HTTP ${step.status} `}${codes} ${step.message ?? ''}`;
      return t('history.webhookSet', { by: step.by ?? '?', sent: step.sent ?? '', answer: answer.trim() });
    }
    case 'archived':
    case 'failed':
      return t('history.moved', { path: step.path ?? '?' });
    default:
      return step.step;
  }
}

/** A compact record's `folded` step: which steps' detail is gone, how many requests and the last answer. */
function foldedText(step: JourneyStep, t: (key: MessageKey, values?: MessageValues) => string): string {
  const steps = (step.folded ?? []).map((name) => t('history.foldedStepName', { step: name })).join(', ');
  const folded = t('history.folded', { steps: steps === '' ? '-' : steps });
  if (step.attempt === undefined) return folded;
  return `${folded}; ${t('history.foldedRequests', { requests: step.attempt, status: step.status === undefined ? '?' : String(step.status) })}`;
}

/** `attempt 2 by host pid 7: HTTP 404 API_NOT_FOUND / DELIVERY_NOT_FOUND Delivery not found (12 ms)`; the API's words as it gave them. */
function attemptText(step: JourneyStep, t: (key: MessageKey, values?: MessageValues) => string, codes: string, lang: Lang): string {
  // An answer of ours kept with its reason (a request that did not leave, push/processor.ts) in the reader's words.
  const message =
    step.reason === undefined ? (step.message ?? '') : describeFailure(lang, { code: step.code ?? '', message: step.message ?? '', reason: step.reason });
  const answer =
    step.answer === 'none'
      ? t('history.noAnswer')
      : [
          step.status !== undefined ? `HTTP ${step.status}` : step.reason === undefined ? t('history.noResponse') : '',
          codes,
          message,
          step.durationMs === undefined ? '' : `(${step.durationMs} ms)`,
        ]
          .filter((part) => part !== '')
          .join(' ');
  const n = String(step.attempt ?? '');
  return step.host === undefined ? t('history.attempt', { n, answer }) : t('history.attemptBy', { n, host: step.host, pid: String(step.pid ?? '?'), answer });
}

/** `duplicate of first.ndjson line 1 (event_at …, <when it came>): not sent`, in the reader's words. */
function duplicateText(
  ref: NonNullable<JourneyStep['duplicateOfRef']>,
  t: (key: MessageKey, values?: MessageValues) => string,
  time: (iso: string) => string,
): string {
  const values = { eventAt: ref.eventAt, at: time(ref.at) };
  if (ref.file !== undefined) return t('history.duplicateOfLine', { ...values, file: ref.file, line: ref.line === undefined ? '?' : String(ref.line) });
  return t('history.duplicateOfSource', { ...values, source: ref.source ?? '?' });
}
