// mcp-proxy imports pipenet for --tunnel only; the bench runs it on 127.0.0.1 and never tunnels.
export async function pipenet() {
  throw new Error('public tunnels are not available in the benchmark');
}
