/**
 * `plain-text`: markdown to clean text with marked's lexer: no markup, lists keep their
 * bullets, tables become aligned `a | b` rows, links keep their target. Applies to tool result
 * text blocks, text/markdown resources (→ text/plain) and prompt message text.
 */
import { Lexer, type Token, type Tokens } from 'marked';
import { z } from 'zod';
import { mapTexts } from '../texts.js';
import type { Transformer } from '../../pipeline/types.js';

const options = z.object({}).strict().default({});

export const plainText: Transformer<z.infer<typeof options>> = {
  name: 'plain-text',
  description: 'Strip markdown from text (tool results, markdown resources, prompt messages), keeping lists and tables readable.',
  options,
  create() {
    return function plainTextFn(result, ctx) {
      return mapTexts(result, ctx.method, toPlainText, { from: 'text/markdown', to: 'text/plain' });
    };
  },
};

export function toPlainText(markdown: string): string {
  return blocks(new Lexer().lex(markdown)).join('\n\n').replace(/\n{3,}/g, '\n\n').trim();
}

function blocks(tokens: Token[]): string[] {
  const out: string[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case 'heading':
      case 'paragraph':
        out.push(inline((token as Tokens.Heading).tokens ?? []));
        break;
      case 'list': {
        const list = token as Tokens.List;
        const start = typeof list.start === 'number' ? list.start : 1;
        out.push(list.items.map((item, i) => `${list.ordered ? `${start + i}.` : '-'} ${blocks(item.tokens).join('\n  ')}`).join('\n'));
        break;
      }
      case 'table': {
        const table = token as Tokens.Table;
        const rows = [table.header.map((c) => inline(c.tokens)), ...table.rows.map((r) => r.map((c) => inline(c.tokens)))];
        const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
        out.push(rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join(' | ').trimEnd()).join('\n'));
        break;
      }
      case 'code':
        out.push((token as Tokens.Code).text);
        break;
      case 'blockquote':
        out.push(...blocks((token as Tokens.Blockquote).tokens));
        break;
      case 'text':
        out.push((token as Tokens.Text).tokens ? inline((token as Tokens.Text).tokens!) : (token as Tokens.Text).text);
        break;
      case 'html':
        out.push((token as Tokens.HTML).text.replace(/<[^>]*>/g, '').trim());
        break;
      default:
        break; // space, hr, def: nothing to say
    }
  }
  return out.filter((b) => b !== '');
}

function inline(tokens: Token[]): string {
  return tokens
    .map((t) => {
      switch (t.type) {
        case 'link': {
          const link = t as Tokens.Link;
          const text = inline(link.tokens);
          return text === link.href ? text : `${text} (${link.href})`;
        }
        case 'image':
          return (t as Tokens.Image).text;
        case 'br':
          return '\n';
        case 'codespan':
          return decode((t as Tokens.Codespan).text);
        case 'html':
          return '';
        default:
          return 'tokens' in t && Array.isArray(t.tokens) && t.tokens.length ? inline(t.tokens) : decode((t as Tokens.Text).text ?? '');
      }
    })
    .join('');
}

/** marked escapes these in text tokens. */
function decode(text: string): string {
  return text.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");
}
