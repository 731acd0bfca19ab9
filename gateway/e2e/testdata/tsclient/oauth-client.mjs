// The official TypeScript MCP SDK as an OAuth client of `gatehouse serve`,
// run by gateway/e2e TestTypeScriptClientOAuth. It starts with no token: the
// SDK's transport must meet the gateway's 401, read resource_metadata from
// WWW-Authenticate, fetch the Protected Resource Metadata (RFC 9728), find
// the authorization server's metadata, obtain a token by the
// client_credentials grant with the gateway as its resource (RFC 8707), and
// retry. Then it lists the tools and calls one.
//
// Environment: GATEWAY_URL, CLIENT_ID, CLIENT_SECRET, SCOPE, TOOL, ARGS (JSON).
// Prints one JSON object on stdout: {requests, tools, result} where requests
// are every HTTP request the SDK made (method, url, status, bearer: whether it
// carried a token).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const env = (k) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is not set`);
  return v;
};

const requests = [];
const recording = async (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const res = await fetch(input, init);
  requests.push({
    method: init?.method ?? (input instanceof Request ? input.method : 'GET'),
    url,
    status: res.status,
    bearer: (headers.get('authorization') ?? '').startsWith('Bearer '),
    wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined,
  });
  return res;
};

const authProvider = new ClientCredentialsProvider({
  clientId: env('CLIENT_ID'),
  clientSecret: env('CLIENT_SECRET'),
  scope: env('SCOPE'),
});
const transport = new StreamableHTTPClientTransport(new URL(env('GATEWAY_URL')), { authProvider, fetch: recording });
const client = new Client({ name: 'gatehouse-e2e-ts', version: '1.0.0' });

const timer = setTimeout(() => {
  console.error('oauth-client: timed out');
  process.exit(2);
}, 60_000);
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: env('TOOL'), arguments: JSON.parse(env('ARGS')) });
  process.stdout.write(JSON.stringify({ requests, tools: tools.map((t) => t.name), result }) + '\n');
  await client.close();
} catch (err) {
  console.error('oauth-client:', err?.stack ?? err);
  process.stdout.write(JSON.stringify({ requests, error: String(err) }) + '\n');
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
}
