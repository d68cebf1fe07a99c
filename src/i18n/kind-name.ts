import type { Translate } from './translate.js';

/** A kind of item as a person calls it (etiqueta, CT-e, coleta); a name it does not know stays as it is. */
export function kindName(kind: string, t: Translate): string {
  return kind === 'label' ? t('ui.kind.label') : kind === 'cte' ? t('ui.kind.cte') : kind === 'collecting' ? t('ui.kind.collecting') : kind;
}
