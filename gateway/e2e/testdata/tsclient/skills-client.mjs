// The official TypeScript MCP SDK as a client of `gatehouse serve` that
// reads a plugin's skill, run by gateway/e2e TestTypeScriptClientSkills: it
// lists the resources and reads the skill's body and one of its files as
// resources, lists the prompts and gets the skill's prompt. Every request
// carries a static bearer token.
//
// Environment: GATEWAY_URL, TOKEN, BODY_URI, FILE_URI, PROMPT.
// Prints one JSON object on stdout: {resources, prompts, body, file, prompt}
// where a read or get that failed is {error} instead.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (k) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is not set`);
  return v;
};

const transport = new StreamableHTTPClientTransport(new URL(env('GATEWAY_URL')), {
  requestInit: { headers: { Authorization: `Bearer ${env('TOKEN')}` } },
});
const client = new Client({ name: 'gatehouse-e2e-ts-skills', version: '1.0.0' });
const attempt = async (f) => {
  try {
    return await f();
  } catch (err) {
    return { error: String(err?.message ?? err), code: err?.code };
  }
};

const timer = setTimeout(() => {
  console.error('skills-client: timed out');
  process.exit(2);
}, 60_000);
try {
  await client.connect(transport);
  const { resources } = await client.listResources();
  const { prompts } = await client.listPrompts();
  const body = await attempt(() => client.readResource({ uri: env('BODY_URI') }));
  const file = await attempt(() => client.readResource({ uri: env('FILE_URI') }));
  const prompt = await attempt(() => client.getPrompt({ name: env('PROMPT') }));
  process.stdout.write(JSON.stringify({ capabilities: client.getServerCapabilities(), resources, prompts, body, file, prompt }) + '\n');
  await client.close();
} catch (err) {
  console.error('skills-client:', err?.stack ?? err);
  process.stdout.write(JSON.stringify({ error: String(err) }) + '\n');
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
}
