// The official TypeScript MCP SDK as a client of several `gatehouse serve`
// replicas behind a load balancer that picks a replica per request, run by
// gateway/e2e TestTypeScriptClientAcrossReplicas: one session, ROUNDS rounds
// of a tool call, a resource list and read, a prompt get, a call that
// reports progress and a call whose server asks the client (elicitation):
// the client answers with "re:" and the message it was asked.
//
// Environment: GATEWAY_URL, TOKEN, TOOL, BODY_URI, PROMPT, ROUNDS,
// PROGRESS_TOOL, ELICIT_TOOL.
// Prints one JSON object on stdout: {sessionId, rounds: [{text, resources,
// body, prompt, progress, elicited}]}, or {error}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const env = (k) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is not set`);
  return v;
};

const transport = new StreamableHTTPClientTransport(new URL(env('GATEWAY_URL')), {
  requestInit: { headers: { Authorization: `Bearer ${env('TOKEN')}` } },
});
const client = new Client({ name: 'gatehouse-e2e-ts-replicas', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => ({
  action: 'accept',
  content: { answer: `re:${request.params.message}` },
}));

const timer = setTimeout(() => {
  console.error('replicas-client: timed out');
  process.exit(2);
}, 60_000);
try {
  await client.connect(transport);
  const rounds = [];
  for (let i = 0; i < Number(env('ROUNDS')); i++) {
    const call = await client.callTool({ name: env('TOOL'), arguments: { text: `round ${i}` } });
    const { resources } = await client.listResources();
    const body = await client.readResource({ uri: env('BODY_URI') });
    const prompt = await client.getPrompt({ name: env('PROMPT') });
    let progress = 0;
    await client.callTool({ name: env('PROGRESS_TOOL'), arguments: { steps: 3 } }, undefined, {
      onprogress: () => { progress++; },
    });
    const asked = await client.callTool({ name: env('ELICIT_TOOL'), arguments: { message: `ask ${i}` } });
    rounds.push({
      text: call.content?.[0]?.text,
      resources: resources.length,
      body: body.contents?.[0]?.text?.length ?? 0,
      prompt: prompt.messages?.length ?? 0,
      progress,
      elicited: asked.content?.[0]?.text,
    });
  }
  process.stdout.write(JSON.stringify({ sessionId: transport.sessionId, rounds }) + '\n');
  await client.close();
} catch (err) {
  console.error('replicas-client:', err?.stack ?? err);
  process.stdout.write(JSON.stringify({ error: String(err) }) + '\n');
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
}
