/**
 * Reading the object tree fast-xml-parser builds (attributes prefixed `@_`, text in `#text` when an
 * element also has attributes, repeated elements as arrays). Every helper takes `unknown` and never
 * throws, so a validator can walk any document shape.
 */

export type XmlNode = Record<string, unknown>;

export function asNode(value: unknown): XmlNode | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as XmlNode) : undefined;
}

/** The first child element (or `@_attribute`) of that name. */
export function child(node: unknown, name: string): unknown {
  const value = asNode(Array.isArray(node) ? node[0] : node)?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Paths are constants of the validators: each is split once. */
const pathSteps = new Map<string, string[]>();

/** Follows a `a/b/c` path of first children. */
export function childAt(node: unknown, path: string): unknown {
  let steps = pathSteps.get(path);
  if (steps === undefined) pathSteps.set(path, (steps = path.split('/')));
  let current = node;
  for (const name of steps) current = child(current, name);
  return current;
}

/** An element's trimmed text; '' when empty; undefined when absent or when it holds elements. */
export function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim();
  const node = asNode(value);
  if (node === undefined) return undefined;
  if (typeof node['#text'] === 'string') return node['#text'].trim();
  return Object.keys(node).every((key) => key.startsWith('@_')) ? '' : undefined;
}

/** Whether any element named `name`, at any depth, holds exactly `wanted`. */
export function hasTextDeep(value: unknown, name: string, wanted: string): boolean {
  if (Array.isArray(value)) return value.some((item) => hasTextDeep(item, name, wanted));
  const node = asNode(value);
  if (node === undefined) return false;
  return Object.entries(node).some(
    ([key, inner]) => (key === name && [inner].flat().some((item) => text(item) === wanted)) || hasTextDeep(inner, name, wanted),
  );
}
