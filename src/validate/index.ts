export { type Verdict } from './verdict.js';
export { checkLabel, type LabelSummary } from './label.js';
export { checkCte, type CteSummary } from './cte.js';
export { parseEventAt, type EventInstant } from './event-at.js';
export { checkEventRecord, checkDeliveryId, type CollectingEventRecord } from './event-record.js';
export {
  parseEventsFile,
  decodeEventsBytes,
  eventsFormatOf,
  type EventsFormat,
  type EventsFileOptions,
  type EventLineRecord,
  type EventLineReject,
  type EventsFileResult,
} from './events-file.js';
export { parseSpoolName, isIgnoredName, type SpoolKind, type SpoolName } from './spool-name.js';
