// A real OpenID provider for the sign-in tests: panva's oidc-provider (OpenID certified), one confidential client
// (the portal) that must use PKCE, RS256 ID tokens signed by a key made at start, and the accounts a test puts in.
//
//   PORT=0 REDIRECT_URIS=http://localhost:8081/oidc/callback/ POST_LOGOUT_REDIRECT_URIS=http://localhost:8081/login/ \
//     node tests/sso/provider.js
//
// Prints "listening <issuer>" once it serves discovery. Its login page is oidc-provider's own development form
// (any password; the login typed is the account's subject). A test tells it what to do under /__test__/ (JSON):
//   PUT /__test__/accounts/<subject>  the account's claims: {"email": …, "name": …, "groups": [...]}
//   PUT /__test__/config              {"idTokenTtl": seconds, "tokenDelayMs": ms, "idTokenAudience": "…"}
// idTokenAudience re-signs the ID token the token endpoint returns (with the provider's own key) for another
// audience, as a provider serving another application would; tokenDelayMs holds the token endpoint's answer.
import http from 'node:http';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const HOST = '127.0.0.1';
const CLIENT_ID = process.env.CLIENT_ID || 'fmportal';
const CLIENT_SECRET = process.env.CLIENT_SECRET || 'fmportal-test-secret';
const REDIRECT_URIS = (process.env.REDIRECT_URIS || '').split(',').filter(Boolean);
// Where the end-session endpoint may send someone signed out (RP-Initiated Logout): the portal's login page.
const POST_LOGOUT_REDIRECT_URIS = (process.env.POST_LOGOUT_REDIRECT_URIS || '').split(',').filter(Boolean);

const accounts = new Map();
const defaults = { idTokenTtl: 600, tokenDelayMs: 0, idTokenAudience: null };
let config = { ...defaults };

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'test-signing-key', alg: 'RS256', use: 'sig' };

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
}

// Claims of an ID token the token endpoint answered, signed again by the same key with another audience.
async function reissue(idToken, audience) {
  const claims = jose.decodeJwt(idToken);
  return new jose.SignJWT({ ...claims, aud: audience })
    .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid, typ: 'JWT' })
    .sign(privateKey);
}

// The port is known before the provider is made: the issuer names it.
const server = http.createServer();
server.listen(Number(process.env.PORT || 0), HOST);
await once(server, 'listening');
const issuer = `http://${HOST}:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: REDIRECT_URIS,
      post_logout_redirect_uris: POST_LOGOUT_REDIRECT_URIS,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'RS256',
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: ['test-provider-cookie-key'] },
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  ttl: { IdToken: () => config.idTokenTtl },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, sub) {
    const claims = accounts.get(sub);
    if (!claims) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...claims }) };
  },
});

provider.use(async (ctx, next) => {
  if (ctx.method === 'PUT' && ctx.path.startsWith('/__test__/')) {
    const body = await readJson(ctx.req);
    if (ctx.path === '/__test__/config') {
      config = { ...defaults, ...body };
    } else if (ctx.path.startsWith('/__test__/accounts/')) {
      accounts.set(decodeURIComponent(ctx.path.slice('/__test__/accounts/'.length)), body);
    } else {
      ctx.throw(404);
    }
    ctx.body = { ok: true };
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200) {
    if (config.idTokenAudience && ctx.body?.id_token) {
      ctx.body = { ...ctx.body, id_token: await reissue(ctx.body.id_token, config.idTokenAudience) };
    }
    if (config.tokenDelayMs) await sleep(config.tokenDelayMs);
  }
});

server.on('request', provider.callback());
process.stdout.write(`listening ${issuer}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
