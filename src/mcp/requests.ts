/** What an MCP request names: a tool or prompt name, or a resource URI (what rules, variants and logs key on). */
export function targetOf(params: Record<string, unknown> | undefined): string | undefined {
  return typeof params?.name === 'string' ? params.name : typeof params?.uri === 'string' ? params.uri : undefined;
}
