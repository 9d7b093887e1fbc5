// A real OpenID provider for the sign-in tests: panva's oidc-provider (OpenID certified), one confidential client
// (the portal) that must use PKCE, RS256 ID tokens signed by a key made at start, and the accounts a test puts in.
//
//   PORT=0 REDIRECT_URIS=http://localhost:8081/oidc/callback/ POST_LOGOUT_REDIRECT_URIS=http://localhost:8081/login/ \
//     node tests/sso/provider.js
//
// Prints "listening <issuer>" once it serves discovery. Its login page is oidc-provider's own development form
// (any password; the login typed is the account's subject). A test tells it what to do under /__test__/ (JSON):
//   PUT /__test__/accounts/<subject>  the account's claims: {"email": …, "name": …, "groups": [...]}
//   PUT /__test__/config              {"idTokenTtl": seconds, "tokenDelayMs": ms, "idTokenAudience": "…",
//                                      "noKid": true, "discoveryIssuer": "…"}
//   POST /__test__/backchannel/<subject>  {"sid": "…"}: the provider's own back-channel logout token for that
//                                      account (and session), sent to BACKCHANNEL_LOGOUT_URI, as when the
//                                      institution ends the person's sessions; answers {"status": <the portal's>,
//                                      "logout_token": <the token sent>}
// idTokenAudience re-signs the ID token the token endpoint returns (with the provider's own key) for another
// audience, as a provider serving another application would; noKid re-signs it without a key id and publishes the
// key set without one, as a provider with a single key may; discoveryIssuer makes the discovery document name
// another issuer (a misconfigured provider); tokenDelayMs holds the token endpoint's answer.
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
// Where the provider posts logout tokens (OpenID Connect Back-Channel Logout 1.0), when set.
const BACKCHANNEL_LOGOUT_URI = process.env.BACKCHANNEL_LOGOUT_URI || '';

const accounts = new Map();
let lastLogoutToken = null; // the last logout token sent, for a test to send again (a replay)
const defaults = { idTokenTtl: 600, tokenDelayMs: 0, idTokenAudience: null, noKid: false, discoveryIssuer: null };
let config = { ...defaults };

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'test-signing-key', alg: 'RS256', use: 'sig' };

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
}

// Claims of an ID token the token endpoint answered, signed again by the same key with another audience.
async function reissue(idToken, audience, noKid) {
  const claims = jose.decodeJwt(idToken);
  const header = noKid ? { alg: 'RS256', typ: 'JWT' } : { alg: 'RS256', kid: signingKey.kid, typ: 'JWT' };
  return new jose.SignJWT({ ...claims, aud: audience || claims.aud }).setProtectedHeader(header).sign(privateKey);
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
      ...(BACKCHANNEL_LOGOUT_URI
        ? { backchannel_logout_uri: BACKCHANNEL_LOGOUT_URI, backchannel_logout_session_required: true }
        : {}),
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
  features: { devInteractions: { enabled: true }, backchannelLogout: { enabled: true } },
  // The portal under test listens on 127.0.0.1, which the provider's SSRF guard refuses: a test provider posts
  // its logout tokens there all the same.
  fetch: (url, { dispatcher, ...options }) => {
    if (String(url) === BACKCHANNEL_LOGOUT_URI) lastLogoutToken = new URLSearchParams(options.body).get('logout_token');
    return globalThis.fetch(url, options);
  },
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
    } else if (ctx.path.startsWith('/__test__/backchannel/')) {
      ctx.throw(405);
    } else if (ctx.path.startsWith('/__test__/accounts/')) {
      accounts.set(decodeURIComponent(ctx.path.slice('/__test__/accounts/'.length)), body);
    } else {
      ctx.throw(404);
    }
    ctx.body = { ok: true };
    return;
  }
  if (ctx.method === 'POST' && ctx.path.startsWith('/__test__/backchannel/')) {
    const { sid } = await readJson(ctx.req);
    const client = await provider.Client.find(CLIENT_ID);
    client.backchannelLogoutSessionRequired = Boolean(sid);
    try {
      await client.backchannelLogout(decodeURIComponent(ctx.path.slice('/__test__/backchannel/'.length)), sid);
      ctx.body = { status: 'ok', logout_token: lastLogoutToken };
    } catch (error) {
      ctx.body = { status: error.response?.status || String(error), logout_token: lastLogoutToken };
    }
    return;
  }
  await next();
  if (ctx.path === '/.well-known/openid-configuration' && config.discoveryIssuer && ctx.body) {
    ctx.body = { ...ctx.body, issuer: config.discoveryIssuer };
  }
  if (ctx.path === '/jwks' && config.noKid && ctx.body?.keys) {
    ctx.body = { keys: ctx.body.keys.map(({ kid, ...key }) => key) };
  }
  if (ctx.path === '/token' && ctx.status === 200) {
    if ((config.idTokenAudience || config.noKid) && ctx.body?.id_token) {
      ctx.body = { ...ctx.body, id_token: await reissue(ctx.body.id_token, config.idTokenAudience, config.noKid) };
    }
    if (config.tokenDelayMs) await sleep(config.tokenDelayMs);
  }
});

server.on('request', provider.callback());
process.stdout.write(`listening ${issuer}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
