import { describe, expect, it } from 'vitest';
import { testContext } from '../_shared/test-context.js';
import { plainText, toPlainText } from './index.js';

describe('plain-text', () => {
  it('strips markup but keeps lists, tables and link targets readable', () => {
    const md =
      '# Title\n\nSome **bold** and _em_ and `code` with [a link](http://x.test).\n\n1. one\n2. two\n\n| A | Bee |\n|---|---|\n| 1 | 2 |';
    expect(toPlainText(md)).toBe('Title\n\nSome bold and em and code with a link (http://x.test).\n\n1. one\n2. two\n\nA | Bee\n1 | 2');
  });

  it("keeps every line's leading whitespace and the final line break: indentation is meaning in preformatted output", () => {
    const status =
      'On branch main\nChanges not staged for commit:\n  (use "git add <file>..." to update what will be committed)\n\tmodified:   status.json\n';
    expect(toPlainText(status)).toBe(status);
    expect(toPlainText('  PID TTY\n  412 pts/0  **bash**\n')).toBe('  PID TTY\n  412 pts/0  bash\n');
    expect(toPlainText('\n\n# Title\n\n  indented\n\n')).toBe('Title\n\n  indented\n');
  });

  it('leaves a unified diff whole: a removed line is no list item, an added one no bullet', () => {
    const diff =
      'diff --git a/notes.md b/notes.md\n--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n # Notes\n- - first **item**\n+ + second item\n \n';
    expect(toPlainText(diff)).toBe(diff);
  });

  it('turns markdown resources into text/plain and leaves blobs alone', async () => {
    const out = await plainText.create({})(
      {
        contents: [
          { uri: 'g', mimeType: 'text/markdown', text: '## Hi' },
          { uri: 'b', blob: 'AA==' },
        ],
      },
      testContext('resources/read'),
    );
    expect(out).toEqual({
      contents: [
        { uri: 'g', mimeType: 'text/plain', text: 'Hi' },
        { uri: 'b', blob: 'AA==' },
      ],
    });
  });

  it('rewrites prompt messages and returns undefined when nothing changes', async () => {
    const out = await plainText.create({})(
      { messages: [{ role: 'user', content: { type: 'text', text: '**Go**' } }] },
      testContext('prompts/get'),
    );
    expect(out).toEqual({ messages: [{ role: 'user', content: { type: 'text', text: 'Go' } }] });
    expect(await plainText.create({})({ content: [{ type: 'text', text: 'plain' }] }, testContext('tools/call'))).toBeUndefined();
  });
});
