/** One API call per item kind: job payload in, the API's verdict out (or a SyncError thrown). */
import type { ApiClient } from '../api/index.js';
import type { ItemJob, ItemResult } from '../store/payloads.js';

export async function sendItem(client: ApiClient, item: ItemJob): Promise<Extract<ItemResult, 'accepted' | 'repeat'>> {
  switch (item.kind) {
    case 'label':
      await client.sendLabel({ deliveryId: item.deliveryId, pdfBase64: item.pdfBase64, externalId: item.externalId });
      return 'accepted';
    case 'cte':
      await client.putCte({ deliveryId: item.deliveryId, xml: item.xml });
      return 'accepted';
    case 'collecting': {
      const { isProcessed } = await client.sendCollecting({ deliveryId: item.deliveryId, eventAt: item.wire });
      return isProcessed ? 'accepted' : 'repeat';
    }
  }
}
