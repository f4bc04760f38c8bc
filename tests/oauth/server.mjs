// A real OAuth 2.1 / OpenID Connect authorization server for the CLI's auth tests:
// panva's oidc-provider (certified), with the device flow (RFC 8628), client
// credentials, refresh tokens, and JWT access tokens for one resource (RFC 8707: the
// protected agent's URL, their audience), signed by an RSA key it makes at start and
// publishes at /jwks — the key set the Switchboard under test trusts (`jwks_url`).
//
//   RESOURCE=http://127.0.0.1:PORT/agents/NAME node server.mjs
//
// It listens on a free loopback port and prints one line of JSON, {"issuer": URL}, when
// ready. Clients: `a2a-cli` (public: device code, refresh) and `machine` / `machine-secret`
// (confidential: client credentials). The people are oidc-provider's development
// interactions (any login name is accepted), which a test drives with form posts
// (approve.mjs).
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const resource = process.env.RESOURCE;
if (!resource) {
  console.error('RESOURCE (the protected agent\'s URL) is required');
  process.exit(2);
}
const accessTtl = Number(process.env.ACCESS_TTL || 600);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' };

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'a2a-cli',
        token_endpoint_auth_method: 'none',
        grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: 'machine',
        client_secret: 'machine-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    jwks: { keys: [signingKey] },
    scopes: ['openid', 'offline_access', 'a2a'],
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Tokens are for the agent whether or not the client names it.
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
          return {
            scope: 'a2a',
            audience: resource,
            accessTokenTTL: accessTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // A person's login may be renewed without them (the CLI's refresh path).
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Consent for the device client's scopes and the resource is given at the consent
    // page the test submits; nothing is remembered between runs.
    ttl: { DeviceCode: 600, RefreshToken: 3600, Grant: 3600, Interaction: 600, Session: 3600 },
  });
  provider.proxy = false;
  server.on('request', provider.callback());
  console.log(JSON.stringify({ issuer }));
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
