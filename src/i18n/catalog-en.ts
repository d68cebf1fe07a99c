/**
 * The English catalog: one key per message a person reads, in ICU MessageFormat (plurals with
 * `{n, plural, one {…} other {…}}`, values with `{name}`). It is the reference: its keys are the
 * `MessageKey` type, and catalog-pt-br.ts must hold every one of them with the same placeholders
 * (a unit test checks it). Adding a message is one line here and one line there.
 * Reasons (`reason.*`) are the texts of refusals; `code.*` says what each error code means, for a
 * reason stored without its own key (a dead letter of the API, an item of an earlier version).
 */
export const EN = {
  // What each code means, when nothing more precise is known.
  'code.LABEL_NOT_PDF': 'the label is not a PDF',
  'code.LABEL_TRUNCATED': 'the label PDF is truncated (no %%EOF at its end)',
  'code.LABEL_UNREADABLE': 'the label PDF cannot be read',
  'code.LABEL_ENCRYPTED': 'the label PDF is encrypted',
  'code.LABEL_TOO_LARGE': 'the label is over the size limit',
  'code.LABEL_EMPTY': 'the label file is empty',
  'code.LABEL_TRAILING_DATA': 'bytes follow the last %%EOF of the label PDF',
  'code.CTE_NOT_XML': 'the CT-e is not well-formed XML',
  'code.CTE_DOCTYPE': 'the CT-e XML holds a DOCTYPE or ENTITY declaration',
  'code.CTE_NOT_CTE': 'the XML is not a CT-e',
  'code.CTE_FIELD_MISSING': 'a field the API requires is missing from the CT-e',
  'code.CTE_FIELD_INVALID': 'a field of the CT-e is malformed',
  'code.CTE_TOO_LARGE': 'the CT-e is over the size limit',
  'code.CTE_CANCELLED': 'the CT-e was cancelled',
  'code.EVENT_BAD_RECORD': 'a collecting event record is malformed',
  'code.EVENT_BAD_DELIVERY_ID': 'the delivery id of an event is missing or not valid',
  'code.EVENT_BAD_TIME': 'the event_at of an event is missing, not a real instant, or without an offset',
  'code.EVENT_LINE_TOO_LONG': 'a line of the events file is over the length limit',
  'code.EVENT_FILE_TOO_LARGE': 'the events file is over the size limit',
  'code.SPOOL_BAD_NAME': 'the file name does not carry a valid delivery id or extension',
  'code.SPOOL_NOT_REGULAR_FILE': 'a symbolic link, FIFO or folder was dropped in an inbox',
  'code.API_REJECTED': 'the API refused the item',
  'code.API_NOT_FOUND': 'the API does not know the delivery',
  'code.API_UNAUTHORIZED': 'the API refuses our key (HTTP 401)',
  'code.API_RATE_LIMITED': 'the API asked us to slow down (HTTP 429)',
  'code.API_UNAVAILABLE': 'the API is unavailable or answered something unreadable',
  'code.NETWORK': 'the API could not be reached (network error)',
  'code.TIMEOUT': 'the API did not answer in time',
  'code.CONFIG_INVALID': 'a setting is wrong',
  'code.UNKNOWN': 'the item failed',
  // A reason known only by its code, with the original (English) detail beside it.
  'reason.withDetail': '{meaning}: {detail}',
  // A dead letter: the API's answer, rendered from the code, the HTTP status and the API's own code and message.
  'reason.api': '{meaning} (HTTP {status}, {apiCode}): {apiMessage}',
  'reason.apiNoCode': '{meaning} (HTTP {status}): {apiMessage}',
  'reason.notFoundHint': 'the API does not know this delivery id: check the file name, or replay with `carrier-sync dlq retry` once the delivery exists',
  // Labels.
  'reason.label.tooLarge': 'the label is {bytes} bytes, over the limit of {max}; export it smaller (fewer pages, compressed images)',
  'reason.label.empty': 'the label file is empty; write the PDF completely before moving it into the inbox',
  'reason.label.unreadableStructure': 'the PDF structure cannot be read ({detail}); re-export or re-save the label',
  'reason.label.unreadablePages': 'the PDF page tree cannot be read ({detail}); re-export or re-save the label',
  'reason.label.noPages': 'the PDF has no pages; export the label with at least one page',
  'reason.label.dataUriTooLarge': 'the label data URI is {bytes} bytes, so its PDF is over the limit of {max} bytes',
  'reason.label.dataUriNotBase64': 'the file starts with data:application/pdf;base64, but what follows is not valid base64; save the raw PDF instead',
  'reason.label.noEof':
    'the file has no %%EOF marker: it is truncated or was not finished; the API requires the file to END with %%EOF: export it again completely',
  'reason.label.trailingData':
    '{bytes} bytes other than line ends, tabs and spaces follow the last %%EOF; the API requires the file to END with %%EOF: remove them (or re-save the PDF)',
  'reason.label.bytesBeforeHeader':
    '{bytes, plural, one {# byte precedes} other {# bytes precede}} the %PDF- header; the API requires the file to START with %PDF: remove them',
  'reason.label.headerNoVersion': 'the header {header} has no version of the form %PDF-<digit>.<digit>; re-export the PDF',
  'reason.label.notPdf': 'this is not a PDF (no %PDF- header); the API requires a PDF file that starts with %PDF',
  'reason.label.encrypted': 'the PDF is encrypted; the platform must print it without a password: export the label without encryption or security settings',
  // CT-e.
  'reason.cte.tooLarge': 'the CT-e is {bytes} bytes, over the limit of {max}',
  'reason.cte.empty': 'the CT-e file is empty; write the XML completely before moving it into the inbox',
  'reason.cte.doctype': 'the XML holds a <!DOCTYPE> or <!ENTITY> declaration, which a CT-e never has and we never expand; remove it',
  'reason.cte.notWellFormed': 'the file is not well-formed XML: {detail} (line {line}); fix or re-export it',
  'reason.cte.notWellFormedAt': 'the file is not well-formed XML: {detail} (line {line}, column {column}); fix or re-export it',
  'reason.cte.unreadable': 'the XML cannot be read ({detail})',
  'reason.cte.encodingUnknown': 'the XML declares encoding "{encoding}", which we do not read; save the CT-e as UTF-8 (or ISO-8859-1)',
  'reason.cte.encodingInvalid':
    'the file is not valid {encoding} (first bad byte on line {line}); save it as UTF-8 or declare its real encoding, e.g. <?xml version="1.0" encoding="ISO-8859-1"?>',
  'reason.cte.rootIsEvent': 'the root element <{root}> is a CT-e event (e.g. a carta de correção), not a CT-e; expected CTe, cteProc, CTeOS or cteOSProc',
  'reason.cte.rootNotCte': 'the root element <{root}> is not a CT-e; expected CTe, cteProc, CTeOS or cteOSProc',
  'reason.cte.noDocument': '<{root}> holds no <{document}>; send the processed CT-e as issued',
  'reason.cte.noInfCte': "infCte is missing from <{document}>; the API requires the CT-e's infCte",
  'reason.cte.cancelledProc': 'the {root} carries procCancCTe (a cancellation): a cancelled CT-e cannot document a delivery; send the CT-e that replaced it',
  'reason.cte.cancelledStatus': 'the {root} protocol has cStat 101 (cancelled): a cancelled CT-e cannot document a delivery; send the CT-e that replaced it',
  'reason.cte.cancelledEvent':
    'the {root} carries a cancellation event (tpEvento 110111): a cancelled CT-e cannot document a delivery; send the CT-e that replaced it',
  'reason.cte.osWithoutDest':
    'infCte/dest is missing: this is a CT-e OS (modelo 67), which has no dest (only toma), and the API requires dest/CNPJ or dest/CPF; a CT-e OS cannot be sent',
  'reason.cte.fields': '{problems}; the API validates these fields: correct them and re-issue the CT-e',
  'reason.cte.fieldMissing': 'infCte/{path} is missing or empty',
  'reason.cte.stateCode': 'infCte/{path} {value} is not an IBGE state code (11–17, 21–29, 31–33, 35, 41–43, 50–53)',
  'reason.cte.number': 'infCte/{path} {value} must be 1–9 digits, not all zero',
  'reason.cte.decimal': 'infCte/{path} {value} must be a decimal such as 1234.56 (up to 13 digits, a dot, up to 2 decimals)',
  'reason.cte.dateShape': 'infCte/{path} {value} must be a date-time with offset, YYYY-MM-DDThh:mm:ss±hh:mm',
  'reason.cte.dateNoOffset':
    'infCte/{path} {value} has no UTC offset; the API needs one such as -03:00 (layout 2.00 wrote local time) and we never guess a timezone',
  'reason.cte.dateNotReal': 'infCte/{path} {value} is not a real calendar date and time',
  'reason.cte.cnpjShape': 'infCte/{path} {value} must be 14 characters: 12 of 0–9 or A–Z (upper case) then 2 check digits, without dots, slashes or dashes',
  'reason.cte.cpfShape': 'infCte/{path} {value} must be 11 digits, without dots or dashes',
  'reason.cte.cpfRepeated': 'infCte/{path} {value} repeats one digit, which is never a real CPF',
  'reason.cte.checkDigits': 'infCte/{path} {value} has wrong check digits (expected {expected})',
  'reason.cte.destBoth': 'infCte/dest holds both CNPJ and CPF; it must hold exactly one',
  'reason.cte.destNone': 'infCte/dest/CNPJ (or dest/CPF) is missing; the API requires the recipient tax id',
  // Collecting events.
  'reason.event.notIso': 'event_at {value} is not an ISO 8601 date-time; write it as YYYY-MM-DDTHH:MM:SS(.fraction)(Z|±hh:mm), e.g. 2026-03-01T09:30:00-03:00',
  'reason.event.noOffset': 'event_at {value} has no UTC offset; add Z or ±hh:mm (we never guess a timezone)',
  'reason.event.month': 'event_at {value} has month {month}; use 01–12',
  'reason.event.day': 'event_at {value} has day {day}, which month {month} of {year} does not have',
  'reason.event.hour': 'event_at {value} has hour {hour}; use 00–23',
  'reason.event.minute': 'event_at {value} has minute {minute}; use 00–59',
  'reason.event.second': 'event_at {value} has second {second}; use 00–59',
  'reason.event.offset': 'event_at {value} has offset {offset}; an offset is at most ±18:00',
  'reason.event.years': 'event_at {value} falls outside the years 0000–9999 once moved to UTC',
  'reason.event.badDeliveryId': 'delivery_id {value} is not valid: use 1–128 characters of A–Z, a–z, 0–9, "_" and "-"',
  'reason.event.notObject': 'an event must be an object with delivery_id and event_at',
  'reason.event.fieldMissing': '{field} is missing; every event needs delivery_id and event_at as strings',
  'reason.event.fieldNotString': '{field} must be a string, not {type}; every event needs delivery_id and event_at as strings',
  'reason.event.lineTooLong': 'line is {bytes} bytes, over the limit of {max}; split it or shorten it',
  'reason.event.notJson': 'not valid JSON ({detail}); write one JSON object per line',
  'reason.event.badCsv': 'malformed CSV ({detail}); quote fields that hold commas or quotes',
  'reason.event.headerLacksBoth': 'the header row lacks delivery_id and event_at (found: {found}); the first row must name delivery_id and event_at',
  'reason.event.headerLacks': 'the header row lacks {missing} (found: {found}); the first row must name delivery_id and event_at',
  'reason.event.rowTooWide': '{fields, plural, one {# field} other {# fields}}, the header has {columns}; quote a value that holds a comma',
  'reason.event.rowTooNarrow': '{fields, plural, one {# field} other {# fields}}, the header has {columns}; give every row one field per header column',
  'reason.event.fileInvalidLines': '{count, plural, one {# invalid line} other {# invalid lines}}',
  // Spool names and files.
  'reason.spool.extension': '{kind}/{file}: it must end in {extension}; name the file {shape}',
  'reason.spool.deliveryId': '{kind}/{file}: the delivery id {value} must be 1–128 characters of A–Z, a–z, 0–9, "_" and "-"; name the file {shape}',
  'reason.spool.externalId':
    '{kind}/{file}: the external id {value} must be 1–128 characters of A–Z, a–z, 0–9, "_", "-" and "." without ".."; name the file {shape}',
  'reason.spool.eventsExtension': '{file}: events files must end in .ndjson, .jsonl or .csv',
  'reason.spool.tooLarge': '{file} is {bytes} bytes; the limit is {max}',
  'reason.spool.symlink': '{file} is a symbolic link; drop regular files only',
  'reason.spool.directory': '{file} is a directory; drop regular files only',
  'reason.spool.fifo': '{file} is a FIFO; drop regular files only',
  'reason.spool.notRegular': '{file} is not a regular file; drop regular files only',
  // carrier-sync validate (text output).
  'cli.validate.valid': 'valid   {file}',
  'cli.validate.invalid': 'INVALID {file}',
  'cli.validate.note': 'note: {note}',
  'cli.validate.pdf': 'PDF {version}, {pages, plural, one {# page} other {# pages}}',
  'cli.validate.validRecords': '{count, plural, one {# valid record} other {# valid records}}',
  'cli.validate.line': 'line {line}: {code}: {reason}',
  'cli.validate.unreadable': 'the file cannot be read: {detail}',
  'cli.validate.unknownType': 'unknown file type: expected .pdf, .xml, .ndjson, .jsonl or .csv',
} as const;

export type MessageKey = keyof typeof EN;
