/**
 * A strict reading of one JSON text: JSON.parse keeps the last of two equal keys without a word,
 * and so do Loki, Elasticsearch and jq in their own ways, so the check walks the syntax tree
 * (@humanwhocodes/momoa) and reports every object that names a key twice.
 */
import { parse, type AnyNode } from '@humanwhocodes/momoa';

/** `path: key` for every repeated key, e.g. `$: mod` or `$.err: type`; empty when there is none. Throws on text that is not JSON. */
export function repeatedKeysOf(text: string): string[] {
  const found: string[] = [];
  const walk = (node: AnyNode, path: string): void => {
    if (node.type === 'Object') {
      const seen = new Set<string>();
      for (const member of node.members) {
        const key = member.name.type === 'String' ? member.name.value : member.name.name;
        if (seen.has(key)) found.push(`${path}: ${key}`);
        seen.add(key);
        walk(member.value, `${path}.${key}`);
      }
    } else if (node.type === 'Array') {
      node.elements.forEach((element, index) => walk(element.value, `${path}[${index}]`));
    }
  };
  walk(parse(text).body, '$');
  return found;
}
