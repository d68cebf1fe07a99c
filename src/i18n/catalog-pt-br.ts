/**
 * The Brazilian Portuguese catalog, for the warehouse staff who read carrier-sync most. Every key of
 * catalog-en.ts, with the same placeholders (a unit test checks it), in the words of Brazilian
 * logistics: etiqueta, CT-e, DACTE, chave de acesso, remetente/destinatário, CNPJ/CPF, coleta,
 * transportadora, entrega (README, "Glossário pt-BR"). Field paths (infCte/dest/CNPJ), codes and
 * commands stay as they are: they are what a person types or looks for.
 */
import type { MessageKey } from './catalog-en.js';

export const PT_BR: Readonly<Record<MessageKey, string>> = {
  'code.LABEL_NOT_PDF': 'a etiqueta não é um PDF',
  'code.LABEL_TRUNCATED': 'o PDF da etiqueta está incompleto (sem %%EOF no fim)',
  'code.LABEL_UNREADABLE': 'o PDF da etiqueta não pode ser lido',
  'code.LABEL_ENCRYPTED': 'o PDF da etiqueta está criptografado',
  'code.LABEL_TOO_LARGE': 'a etiqueta passa do tamanho máximo',
  'code.LABEL_EMPTY': 'o arquivo da etiqueta está vazio',
  'code.LABEL_TRAILING_DATA': 'há bytes depois do último %%EOF do PDF da etiqueta',
  'code.CTE_NOT_XML': 'o CT-e não é um XML bem formado',
  'code.CTE_DOCTYPE': 'o XML do CT-e traz uma declaração DOCTYPE ou ENTITY',
  'code.CTE_NOT_CTE': 'o XML não é um CT-e',
  'code.CTE_FIELD_MISSING': 'falta no CT-e um campo que a API exige',
  'code.CTE_FIELD_INVALID': 'um campo do CT-e está mal preenchido',
  'code.CTE_TOO_LARGE': 'o CT-e passa do tamanho máximo',
  'code.CTE_CANCELLED': 'o CT-e foi cancelado',
  'code.EVENT_BAD_RECORD': 'um registro de evento de coleta está mal formado',
  'code.EVENT_BAD_DELIVERY_ID': 'o id da entrega de um evento falta ou não é válido',
  'code.EVENT_BAD_TIME': 'o event_at de um evento falta, não é um instante real ou não tem fuso horário',
  'code.EVENT_LINE_TOO_LONG': 'uma linha do arquivo de eventos passa do comprimento máximo',
  'code.EVENT_FILE_TOO_LARGE': 'o arquivo de eventos passa do tamanho máximo',
  'code.SPOOL_BAD_NAME': 'o nome do arquivo não traz um id de entrega ou uma extensão válidos',
  'code.SPOOL_NOT_REGULAR_FILE': 'um link simbólico, FIFO ou pasta foi colocado numa pasta de entrada',
  'code.API_REJECTED': 'a API recusou o item',
  'code.API_NOT_FOUND': 'a API não conhece a entrega',
  'code.API_UNAUTHORIZED': 'a API recusa a nossa chave de API (HTTP 401)',
  'code.API_RATE_LIMITED': 'a API pediu para enviarmos mais devagar (HTTP 429)',
  'code.API_UNAVAILABLE': 'a API está indisponível ou respondeu algo ilegível',
  'code.NETWORK': 'não foi possível alcançar a API (erro de rede)',
  'code.TIMEOUT': 'a API não respondeu a tempo',
  'code.CONFIG_INVALID': 'uma configuração está errada',
  'code.UNKNOWN': 'o item falhou',
  'reason.withDetail': '{meaning}: {detail}',
  'reason.api': '{meaning} (HTTP {status}, {apiCode}): {apiMessage}',
  'reason.apiNoCode': '{meaning} (HTTP {status}): {apiMessage}',
  'reason.notFoundHint':
    'a API não conhece este id de entrega: confira o nome do arquivo, ou reenvie com `carrier-sync dlq retry` quando a entrega existir na transportadora',
  'reason.label.tooLarge': 'a etiqueta tem {bytes} bytes, acima do limite de {max}; exporte-a menor (menos páginas, imagens comprimidas)',
  'reason.label.empty': 'o arquivo da etiqueta está vazio; grave o PDF por completo antes de movê-lo para a pasta de entrada',
  'reason.label.unreadableStructure': 'a estrutura do PDF não pode ser lida ({detail}); exporte ou salve a etiqueta de novo',
  'reason.label.unreadablePages': 'a árvore de páginas do PDF não pode ser lida ({detail}); exporte ou salve a etiqueta de novo',
  'reason.label.noPages': 'o PDF não tem páginas; exporte a etiqueta com pelo menos uma página',
  'reason.label.dataUriTooLarge': 'o data URI da etiqueta tem {bytes} bytes, então o PDF passa do limite de {max} bytes',
  'reason.label.dataUriNotBase64':
    'o arquivo começa com data:application/pdf;base64, mas o que vem depois não é base64 válido; salve o PDF puro no lugar',
  'reason.label.noEof':
    'o arquivo não tem o marcador %%EOF: está cortado ou não terminou de ser gravado; a API exige que o arquivo TERMINE com %%EOF: exporte-o de novo por completo',
  'reason.label.trailingData':
    'há {bytes} bytes além de quebras de linha, tabulações e espaços depois do último %%EOF; a API exige que o arquivo TERMINE com %%EOF: remova-os (ou salve o PDF de novo)',
  'reason.label.bytesBeforeHeader':
    '{bytes, plural, one {# byte vem} other {# bytes vêm}} antes do cabeçalho %PDF-; a API exige que o arquivo COMECE com %PDF: remova-os',
  'reason.label.headerNoVersion': 'o cabeçalho {header} não tem versão no formato %PDF-<dígito>.<dígito>; exporte o PDF de novo',
  'reason.label.notPdf': 'isto não é um PDF (sem cabeçalho %PDF-); a API exige um arquivo PDF que comece com %PDF',
  'reason.label.encrypted':
    'o PDF está criptografado; a plataforma precisa imprimi-lo sem senha: exporte a etiqueta sem criptografia nem restrições de segurança',
  'reason.cte.tooLarge': 'o CT-e tem {bytes} bytes, acima do limite de {max}',
  'reason.cte.empty': 'o arquivo do CT-e está vazio; grave o XML por completo antes de movê-lo para a pasta de entrada',
  'reason.cte.doctype': 'o XML traz uma declaração <!DOCTYPE> ou <!ENTITY>, que um CT-e nunca tem e que nunca expandimos; remova-a',
  'reason.cte.notWellFormed': 'o arquivo não é um XML bem formado: {detail} (linha {line}); corrija-o ou exporte-o de novo',
  'reason.cte.notWellFormedAt': 'o arquivo não é um XML bem formado: {detail} (linha {line}, coluna {column}); corrija-o ou exporte-o de novo',
  'reason.cte.unreadable': 'o XML não pode ser lido ({detail})',
  'reason.cte.encodingUnknown': 'o XML declara a codificação "{encoding}", que não lemos; salve o CT-e em UTF-8 (ou ISO-8859-1)',
  'reason.cte.encodingInvalid':
    'o arquivo não é {encoding} válido (primeiro byte inválido na linha {line}); salve-o em UTF-8 ou declare a codificação real, por exemplo <?xml version="1.0" encoding="ISO-8859-1"?>',
  'reason.cte.rootIsEvent':
    'o elemento raiz <{root}> é um evento de CT-e (por exemplo uma carta de correção), não um CT-e; esperado CTe, cteProc, CTeOS ou cteOSProc',
  'reason.cte.rootNotCte': 'o elemento raiz <{root}> não é um CT-e; esperado CTe, cteProc, CTeOS ou cteOSProc',
  'reason.cte.noDocument': '<{root}> não contém <{document}>; envie o CT-e processado como foi emitido',
  'reason.cte.noInfCte': 'falta infCte em <{document}>; a API exige o infCte do CT-e',
  'reason.cte.cancelledProc':
    'o {root} traz procCancCTe (um cancelamento): um CT-e cancelado não pode documentar uma entrega; envie o CT-e que o substituiu',
  'reason.cte.cancelledStatus':
    'o protocolo do {root} tem cStat 101 (cancelado): um CT-e cancelado não pode documentar uma entrega; envie o CT-e que o substituiu',
  'reason.cte.cancelledEvent':
    'o {root} traz um evento de cancelamento (tpEvento 110111): um CT-e cancelado não pode documentar uma entrega; envie o CT-e que o substituiu',
  'reason.cte.osWithoutDest':
    'falta infCte/dest: este é um CT-e OS (modelo 67), que não tem destinatário (só tomador), e a API exige dest/CNPJ ou dest/CPF; um CT-e OS não pode ser enviado',
  'reason.cte.fields': '{problems}; a API valida estes campos: corrija-os e emita o CT-e de novo',
  'reason.cte.fieldMissing': 'infCte/{path} falta ou está vazio',
  'reason.cte.stateCode': 'infCte/{path} {value} não é um código de UF do IBGE (11–17, 21–29, 31–33, 35, 41–43, 50–53)',
  'reason.cte.number': 'infCte/{path} {value} deve ter de 1 a 9 dígitos, não todos zero',
  'reason.cte.decimal': 'infCte/{path} {value} deve ser um decimal como 1234.56 (até 13 dígitos, um ponto, até 2 casas decimais)',
  'reason.cte.dateShape': 'infCte/{path} {value} deve ser uma data e hora com fuso, AAAA-MM-DDThh:mm:ss±hh:mm',
  'reason.cte.dateNoOffset':
    'infCte/{path} {value} não tem fuso horário (UTC); a API exige um como -03:00 (o leiaute 2.00 gravava a hora local) e nunca adivinhamos o fuso',
  'reason.cte.dateNotReal': 'infCte/{path} {value} não é uma data e hora reais do calendário',
  'reason.cte.cnpjShape':
    'infCte/{path} {value} deve ter 14 caracteres: 12 de 0–9 ou A–Z (maiúsculas) e depois 2 dígitos verificadores, sem pontos, barras nem traços',
  'reason.cte.cpfShape': 'infCte/{path} {value} deve ter 11 dígitos, sem pontos nem traços',
  'reason.cte.cpfRepeated': 'infCte/{path} {value} repete um só dígito, o que nunca é um CPF real',
  'reason.cte.checkDigits': 'infCte/{path} {value} tem dígitos verificadores errados (esperado {expected})',
  'reason.cte.destBoth': 'infCte/dest traz CNPJ e CPF ao mesmo tempo; o destinatário deve ter exatamente um',
  'reason.cte.destNone': 'falta infCte/dest/CNPJ (ou dest/CPF); a API exige o CNPJ ou CPF do destinatário',
  'reason.event.notIso':
    'event_at {value} não é uma data e hora ISO 8601; escreva AAAA-MM-DDTHH:MM:SS(.fração)(Z|±hh:mm), por exemplo 2026-03-01T09:30:00-03:00',
  'reason.event.noOffset': 'event_at {value} não tem fuso horário (UTC); acrescente Z ou ±hh:mm (nunca adivinhamos o fuso)',
  'reason.event.month': 'event_at {value} tem mês {month}; use 01–12',
  'reason.event.day': 'event_at {value} tem dia {day}, que o mês {month} de {year} não tem',
  'reason.event.hour': 'event_at {value} tem hora {hour}; use 00–23',
  'reason.event.minute': 'event_at {value} tem minuto {minute}; use 00–59',
  'reason.event.second': 'event_at {value} tem segundo {second}; use 00–59',
  'reason.event.offset': 'event_at {value} tem fuso {offset}; um fuso vai no máximo a ±18:00',
  'reason.event.years': 'event_at {value} cai fora dos anos 0000–9999 quando convertido para UTC',
  'reason.event.badDeliveryId': 'delivery_id {value} não é válido: use de 1 a 128 caracteres entre A–Z, a–z, 0–9, "_" e "-"',
  'reason.event.notObject': 'um evento deve ser um objeto com delivery_id e event_at',
  'reason.event.fieldMissing': 'falta {field}; todo evento de coleta precisa de delivery_id e event_at como texto',
  'reason.event.fieldNotString': '{field} deve ser texto, não {type}; todo evento de coleta precisa de delivery_id e event_at como texto',
  'reason.event.lineTooLong': 'a linha tem {bytes} bytes, acima do limite de {max}; divida-a ou encurte-a',
  'reason.event.notJson': 'não é um JSON válido ({detail}); escreva um objeto JSON por linha',
  'reason.event.badCsv': 'CSV mal formado ({detail}); coloque entre aspas os campos que contêm vírgulas ou aspas',
  'reason.event.headerLacksBoth': 'faltam no cabeçalho delivery_id e event_at (encontrado: {found}); a primeira linha deve nomear delivery_id e event_at',
  'reason.event.headerLacks': 'falta no cabeçalho {missing} (encontrado: {found}); a primeira linha deve nomear delivery_id e event_at',
  'reason.event.rowTooWide': '{fields, plural, one {# campo} other {# campos}}, o cabeçalho tem {columns}; coloque entre aspas um valor que contém vírgula',
  'reason.event.rowTooNarrow':
    '{fields, plural, one {# campo} other {# campos}}, o cabeçalho tem {columns}; dê a cada linha um campo por coluna do cabeçalho',
  'reason.event.fileInvalidLines': '{count, plural, one {# linha inválida} other {# linhas inválidas}}',
  'reason.spool.extension': '{kind}/{file}: o nome deve terminar em {extension}; nomeie o arquivo {shape}',
  'reason.spool.deliveryId':
    '{kind}/{file}: o id da entrega {value} deve ter de 1 a 128 caracteres entre A–Z, a–z, 0–9, "_" e "-"; nomeie o arquivo {shape}',
  'reason.spool.externalId':
    '{kind}/{file}: o id externo {value} deve ter de 1 a 128 caracteres entre A–Z, a–z, 0–9, "_", "-" e "." sem ".."; nomeie o arquivo {shape}',
  'reason.spool.eventsExtension': '{file}: arquivos de eventos de coleta devem terminar em .ndjson, .jsonl ou .csv',
  'reason.spool.tooLarge': '{file} tem {bytes} bytes; o limite é {max}',
  'reason.spool.symlink': '{file} é um link simbólico; coloque só arquivos comuns',
  'reason.spool.directory': '{file} é uma pasta; coloque só arquivos comuns',
  'reason.spool.fifo': '{file} é um FIFO; coloque só arquivos comuns',
  'reason.spool.notRegular': '{file} não é um arquivo comum; coloque só arquivos comuns',
};
