/**
 * The compact document record (src/gate/document-record.ts): its parts keep the
 * order and identity the push gate decides on, in far fewer bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactContentId, compactGeneration, documentBucketSec, documentField, documentGeneration } from '../../src/gate/document-record.js';

describe('document record', () => {
  it('a compact generation sorts byte by byte as the generation does', () => {
    const stamp = fc.tuple(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.integer({ min: 0, max: 4_102_444_800_000_000 }));
    fc.assert(
      fc.property(stamp, stamp, ([mtimeA, claimA], [mtimeB, claimB]) => {
        const a = documentGeneration(mtimeA, claimA);
        const b = documentGeneration(mtimeB, claimB);
        const byString = a < b ? -1 : a > b ? 1 : 0;
        expect(Buffer.compare(compactGeneration(a), compactGeneration(b))).toBe(byString);
        expect(compactGeneration(a)).toHaveLength(14);
      }),
    );
  });

  it('no generation is older than any', () => {
    expect(compactGeneration('')).toEqual(Buffer.alloc(14));
    expect(Buffer.compare(compactGeneration(''), compactGeneration(documentGeneration(0, 1)))).toBe(-1);
  });

  it('a content id is its 8 bytes; another shape is hashed to 8', () => {
    expect(compactContentId('0123456789abcdef')).toEqual(Buffer.from('0123456789abcdef', 'hex'));
    expect(compactContentId('c1')).toHaveLength(8);
    expect(compactContentId('c1')).not.toEqual(compactContentId('c2'));
  });

  it('a field names kind and delivery; a long delivery id is hashed to 12 bytes', () => {
    expect(documentField('label', 'dlv-1').toString()).toBe('ldlv-1');
    expect(documentField('cte', 'dlv-1').toString()).toBe('cdlv-1');
    const uuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    expect(documentField('label', uuid)).toHaveLength(13);
    expect(documentField('label', uuid)).not.toEqual(documentField('cte', uuid));
    expect(documentField('label', uuid)).not.toEqual(documentField('label', `${uuid}x`));
  });

  it('a retention bucket spans an eighth of the retention', () => {
    expect(documentBucketSec(604_800)).toBe(75_600);
    expect(documentBucketSec(1)).toBe(1);
  });
});
