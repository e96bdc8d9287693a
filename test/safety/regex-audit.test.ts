/**
 * Every regular expression in the product runs in linear time: upstream output and client
 * input reach many of them, and one backtracking pattern is enough to pin the event loop. The
 * audit parses every source file, collects each regular-expression literal and every
 * `new RegExp(…)`, and has recheck (a ReDoS checker) analyse them; anything not proven safe
 * fails, naming file, line and pattern.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { checkSync } from 'recheck';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { TAG } from '../../src/mcp/features.js';
import { SECRET_SHAPE } from '../../src/ops/mask.js';
import { ROOT } from '../helpers/processes.js';

/** RegExps built at run time, by file, and the value they are built to (checked here instead). */
const BUILT: Record<string, RegExp[]> = { 'src/mcp/features.ts': [TAG], 'src/ops/mask.ts': [SECRET_SHAPE] };

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

interface Found {
  where: string;
  pattern: RegExp | 'dynamic';
}

function regexesIn(file: string): Found[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Found[] = [];
  const where = (n: ts.Node) => `${relative(ROOT, file)}:${source.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  const visit = (n: ts.Node) => {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const text = n.getText();
      const end = text.lastIndexOf('/');
      found.push({ where: where(n), pattern: new RegExp(text.slice(1, end), text.slice(end + 1)) });
    } else if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && n.expression.getText() === 'RegExp') {
      found.push({ where: where(n), pattern: 'dynamic' });
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

describe('regular-expression audit', () => {
  const files = sources(join(ROOT, 'src'));
  const all = files.flatMap(regexesIn);

  it('finds the patterns it audits', () => {
    expect(files.length).toBeGreaterThan(40);
    expect(all.filter((f) => f.pattern !== 'dynamic').length).toBeGreaterThan(10);
  });

  it('has recheck prove every literal pattern linear', () => {
    const unsafe = all
      .filter((f): f is Found & { pattern: RegExp } => f.pattern !== 'dynamic')
      .map((f) => ({ ...f, result: checkSync(f.pattern.source, f.pattern.flags, { timeout: 10_000 }) }))
      .filter((f) => f.result.status !== 'safe')
      .map(
        (f) =>
          `${f.where} /${f.pattern.source}/${f.pattern.flags}: ${f.result.status}${f.result.status === 'vulnerable' ? ` (${f.result.complexity.type})` : ''}`,
      );
    expect(unsafe).toEqual([]);
  });

  it('allows patterns built at run time only where the built value is audited too', () => {
    const dynamic = [...new Set(all.filter((f) => f.pattern === 'dynamic').map((f) => f.where.split(':')[0]))];
    expect(dynamic.sort()).toEqual(Object.keys(BUILT).sort());
    for (const pattern of Object.values(BUILT).flat()) expect(checkSync(pattern.source, pattern.flags).status).toBe('safe');
  });
});
