/**
 * docs/internals.md's map of `src/` names every module of src/ with its one idea, and nothing that is
 * not there: the map a newcomer reads first stays true (issue 20).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The `src/` tree of the Inside section: each line `<indent><name>[/]  <idea>`, two spaces a level. */
async function treeInReadme(): Promise<Array<{ path: string; idea: string }>> {
  const readme = await readFile(join(ROOT, 'docs/internals.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The map of'));
  const block = /```\n(src\/\n[\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('docs/internals.md: no src/ tree in "The map of src/"');
  const folders: string[] = [];
  const entries: Array<{ path: string; idea: string }> = [];
  for (const line of block.split('\n').slice(1)) {
    const match = /^( +)(\S+)(?: +(.*))?$/.exec(line);
    if (match === null) continue;
    const depth = match[1]!.length / 2 - 1;
    const name = match[2]!;
    folders.length = depth;
    if (name.endsWith('/')) folders.push(name.slice(0, -1));
    else entries.push({ path: ['src', ...folders, name].join('/'), idea: (match[3] ?? '').trim() });
  }
  return entries;
}

async function modules(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await modules(path)));
    else if (entry.name.endsWith('.ts')) out.push(relative(ROOT, path));
  }
  return out;
}

it("docs/internals.md's map of src/ names every module of src/ and its idea, and no module that is gone", async () => {
  const tree = await treeInReadme();
  const named = tree.map((entry) => entry.path).sort();
  expect(named).toEqual((await modules(join(ROOT, 'src'))).sort());
  expect(tree.filter((entry) => entry.idea === '').map((entry) => entry.path)).toEqual([]);
});
