/**
 * Every relative link of README.md, BENCHMARKS.md, docs/*.md and docs/benchmarks/*.md resolves:
 * the file (or folder) exists and, for a link to a heading (`page.md#anchor`, `#anchor`), the page
 * has that heading under GitHub's anchor rules. The README is the map to docs/; a moved section
 * must not leave a dead link behind. A page named in code (`docs/deploy.md`) must exist too: the
 * chart's README once sent readers to one that had been removed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;

const pages = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...readdirSync(join(ROOT, 'docs', 'benchmarks'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/benchmarks/${name}`),
  'deploy/helm/carrier-sync/README.md',
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutCode(markdown).split('\n')) {
    const heading = /^#{1,6} +(.*?) *#*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function withoutCode(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, (code) => code.replace(/[[\]()]/g, ' '));
}

function linksOf(markdown: string): string[] {
  const text = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/i.test(target));
}

it('README and docs/ have pages to check, and each links somewhere', () => {
  expect(pages).toContain('docs/configuration.md');
  expect(linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).length).toBeGreaterThan(10);
});

it.each(pages)('every relative link of %s resolves, #anchors included', (page) => {
  const source = readFileSync(join(ROOT, page), 'utf8');
  const broken: string[] = [];
  for (const target of linksOf(source)) {
    const [pathPart, anchor] = target.split('#') as [string, string | undefined];
    const file = pathPart === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(pathPart));
    const fromRoot = relative(ROOT, file);
    if (!existsSync(file)) {
      broken.push(`${target}: no file ${fromRoot}`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!file.endsWith('.md')) continue;
    if (!anchorsOf(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) broken.push(`${target}: no heading #${anchor} in ${fromRoot}`);
  }
  expect(broken, `${page}: broken links`).toEqual([]);
});

it.each(pages)('every docs/*.md that %s names in code exists', (page) => {
  const named = [...readFileSync(join(ROOT, page), 'utf8').matchAll(/`(docs\/[\w.-]+\.md)`/g)].map((match) => match[1]!);
  expect(named.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
});

it("the anchor rule is GitHub's", () => {
  const anchors = anchorsOf('## What happens when…\n## Metrics (`GET /metrics`)\n## Deploy with Docker / compose\n## Glossário pt-BR (x)\n## Logs\n## Logs\n');
  expect([...anchors]).toEqual(['what-happens-when', 'metrics-get-metrics', 'deploy-with-docker--compose', 'glossário-pt-br-x', 'logs', 'logs-1']);
});
