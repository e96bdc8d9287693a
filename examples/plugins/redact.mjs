// An example content-negotiation plugin: a transformer that masks text matching patterns
// (e-mail addresses by default) in tool results. Load it from a config file:
//
//   contentNegotiation:
//     plugins: [../../examples/plugins/redact.mjs]     # relative to the config file
//     rules:
//       - when: { method: tools/call, features: [x-redact] }
//         apply: [{ redact: { replacement: "[hidden]" } }]
//
// A plugin is an ES module whose exports include one or more transformers: objects with a
// unique `name` (the YAML key), a `description`, `options` (a zod schema; it validates the
// rule's options at start-up) and `create(options)`, which returns the function that runs per
// result. That function returns a new result, or undefined to leave the result as it is; it
// must not modify its input.
import { z } from 'zod';

const EMAIL = '[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+';

export const redact = {
  name: 'redact',
  description: 'Mask text that matches patterns (e-mail addresses by default) in tool results.',
  options: z
    .object({ patterns: z.array(z.string()).default([EMAIL]), replacement: z.string().default('[redacted]') })
    .strict()
    .default({ patterns: [EMAIL], replacement: '[redacted]' }),
  create({ patterns, replacement }) {
    const regexes = patterns.map((p) => new RegExp(p, 'g'));
    return function redactFn(result, ctx) {
      if (ctx.method !== 'tools/call' || !Array.isArray(result.content)) return undefined;
      let changed = false;
      const content = result.content.map((block) => {
        if (block?.type !== 'text') return block;
        const text = regexes.reduce((t, re) => t.replace(re, replacement), block.text);
        if (text === block.text) return block;
        changed = true;
        return { ...block, text };
      });
      return changed ? { ...result, content } : undefined;
    };
  },
};
