/**
 * The built-in rules: the content-negotiation SEP's tag registry, used when the config has no
 * rules of its own (and after them unless `useDefaultRules: false`). A client that declares no
 * tags matches none of them.
 */
import type { RuleConfig } from './compile.js';

const RESULTS = ['tools/call', 'resources/read', 'prompts/get'] as const;
const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'] as const;

/**
 * Tools whose results are a file's bytes or a diff (server-filesystem, server-git, the GitHub
 * server): reshaping them would break an edit made from what was read. See verbatim.ts.
 */
export const EXACT_CONTENT_TOOLS = [
  'read_file',
  'read_text_file',
  'read_multiple_files',
  'edit_file',
  'get_file_contents',
  'git_diff*',
  'git_show',
];

export const DEFAULT_RULES: RuleConfig[] = [
  { name: 'file contents', when: { method: 'tools/call', name: EXACT_CONTENT_TOOLS, features: [] }, verbatim: true, onError: 'pass' },
  {
    name: 'agent audience',
    when: { method: ['tools/call', 'prompts/get'], features: ['agent', '!human'] },
    apply: [{ audience: {} }],
    onError: 'pass',
  },
  {
    name: 'human audience',
    when: { method: ['tools/call', 'prompts/get'], features: ['human', '!agent'] },
    apply: [{ audience: {} }],
    onError: 'pass',
  },
  // Trim first: it finds sections by their markdown headings, which format=text removes.
  {
    name: 'verbosity=compact',
    when: { method: [...RESULTS, ...LISTS], features: ['verbosity=compact'] },
    apply: [{ trim: {} }],
    onError: 'pass',
  },
  // tools/list too: a wrapped text's schema is shown with room for the data read from it.
  {
    name: 'format=json',
    when: { method: ['tools/call', 'resources/read', 'tools/list'], features: ['format=json'] },
    apply: [{ 'json-extract': {} }],
    onError: 'pass',
  },
  {
    name: 'format=markdown',
    when: { method: ['tools/call', 'resources/read'], features: ['format=markdown'] },
    apply: [{ markdown: {} }],
    onError: 'pass',
  },
  { name: 'format=text', when: { method: [...RESULTS], features: ['format=text'] }, apply: [{ 'plain-text': {} }], onError: 'pass' },
  // Last: format=json reads the JSON text first, and structuredContent stays JSON.
  {
    name: 'verbosity=compact tables',
    when: { method: ['tools/call', 'resources/read'], features: ['verbosity=compact'] },
    apply: [{ tabular: {} }],
    onError: 'pass',
  },
];
