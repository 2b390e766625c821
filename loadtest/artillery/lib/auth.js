// Bearer tokens for the load scenarios, in one of two modes:
//
// - local (default): HS256 tokens minted here exactly as `local-cloud token` mints them
//   (infra/local-cloud/src/jwt.rs), signed with LOCAL_JWT_SECRET or the runner's published
//   default. The user id the API sees (`sub`) is the key we pick.
// - cognito (AUTH_MODE=cognito, or COGNITO_USER_POOL_ID set): real users in the stack's
//   Cognito user pool, created with the admin API (AdminCreateUser, AdminSetUserPassword,
//   AdminAddUserToGroup for operators) and logged in with USER_PASSWORD_AUTH. The pool makes
//   up the `sub`, so callers must use the `id` this module answers, never the key, in paths.
//
// Tokens are cached per process (Artillery runs virtual users in worker threads, each with
// its own copy of this module) until shortly before they expire.
'use strict';

const crypto = require('node:crypto');

const DEFAULT_LOCAL_SECRET = 'local-cloud-dev-secret'; // not a secret: see jwt.rs
const LOCAL_ISSUER = 'local-cloud';
const TOKEN_TTL_SECONDS = 3600;
// {"alg":"HS256","typ":"JWT"}, the same bytes as jwt.rs's HEADER_B64.
const HEADER_B64 = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9';
const ADMIN_GROUP = 'admin';

function mode() {
  const m = process.env.AUTH_MODE || (process.env.COGNITO_USER_POOL_ID ? 'cognito' : 'local');
  if (m !== 'local' && m !== 'cognito') {
    throw new Error(`AUTH_MODE must be "local" or "cognito", not "${m}"`);
  }
  return m;
}

// ---------------------------------------------------------------- local HS256 tokens

// The claims of jwt.rs's local_token: sub, iat, exp, iss, token_use and, for operators,
// cognito:groups (a list, as Cognito puts it).
function localToken(sub, groups) {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub,
    iat: now,
    exp: now + TOKEN_TTL_SECONDS,
    iss: LOCAL_ISSUER,
    token_use: 'access',
  };
  if (groups.length > 0) claims['cognito:groups'] = groups;
  const signed = `${HEADER_B64}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = crypto
    .createHmac('sha256', process.env.LOCAL_JWT_SECRET || DEFAULT_LOCAL_SECRET)
    .update(signed)
    .digest('base64url');
  return `${signed}.${signature}`;
}

// ---------------------------------------------------------------- Cognito

let cognito; // { client, sdk, poolId, clientId }, built on first use

function cognitoConfig() {
  if (cognito) return cognito;
  const poolId = process.env.COGNITO_USER_POOL_ID;
  const clientId = process.env.COGNITO_CLIENT_ID;
  if (!poolId || !clientId) {
    throw new Error(
      'AUTH_MODE=cognito needs COGNITO_USER_POOL_ID and COGNITO_CLIENT_ID ' +
        '(the stack outputs UserPoolId and UserPoolClientId; loadtest/load.sh STACK=... sets them)'
    );
  }
  // Loaded only here so that local runs never pay for the SDK.
  const sdk = require('@aws-sdk/client-cognito-identity-provider');
  // A pool id is "<region>_<id>", so the region needs no separate setting.
  const region = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || poolId.split('_')[0];
  cognito = { sdk, poolId, clientId, client: new sdk.CognitoIdentityProviderClient({ region }) };
  return cognito;
}

// Fails early, with a message that says what to do, when no AWS credentials are found.
async function checkCognitoCredentials() {
  const { client } = cognitoConfig();
  try {
    const creds = await client.config.credentials();
    if (!creds || !creds.accessKeyId) throw new Error('empty credentials');
  } catch (err) {
    throw new Error(
      'Cognito mode needs AWS credentials that may call cognito-idp:AdminCreateUser, ' +
        'AdminSetUserPassword and AdminAddUserToGroup on the stack\'s user pool ' +
        '(set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); none were usable: ' +
        err.message
    );
  }
}

// The pool's usernames are e-mail addresses (UsernameAttributes: email). example.com never
// receives mail, and MessageAction SUPPRESS sends none anyway.
function cognitoUsername(key) {
  return `${key}@loadtest.example.com`;
}

// Creates (or resets) a load-test user with a permanent password, in the admin group if asked.
async function ensureCognitoUser(key, password, admin) {
  const { client, sdk, poolId } = cognitoConfig();
  const Username = cognitoUsername(key);
  try {
    await client.send(
      new sdk.AdminCreateUserCommand({
        UserPoolId: poolId,
        Username,
        MessageAction: 'SUPPRESS',
        UserAttributes: [
          { Name: 'email', Value: Username },
          { Name: 'email_verified', Value: 'true' },
        ],
      })
    );
  } catch (err) {
    if (err.name !== 'UsernameExistsException') throw err;
  }
  // Permanent, so that USER_PASSWORD_AUTH answers tokens instead of a NEW_PASSWORD_REQUIRED
  // challenge.
  await client.send(
    new sdk.AdminSetUserPasswordCommand({ UserPoolId: poolId, Username, Password: password, Permanent: true })
  );
  if (admin) {
    await client.send(
      new sdk.AdminAddUserToGroupCommand({ UserPoolId: poolId, Username, GroupName: ADMIN_GROUP })
    );
  }
}

async function cognitoLogin(key, password) {
  const { client, sdk, clientId } = cognitoConfig();
  const out = await client.send(
    new sdk.InitiateAuthCommand({
      AuthFlow: 'USER_PASSWORD_AUTH',
      ClientId: clientId,
      AuthParameters: { USERNAME: cognitoUsername(key), PASSWORD: password },
    })
  );
  const token = out.AuthenticationResult && out.AuthenticationResult.AccessToken;
  if (!token) throw new Error(`Cognito answered a challenge instead of tokens for ${key}`);
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  return { token, id: claims.sub, expiresAt: claims.exp * 1000 };
}

// A password that meets the template's policy (8+, upper, lower, digit), new for every run
// and handed to the workers through the before hook's variables; never printed.
function newPassword() {
  return `Lt1${crypto.randomBytes(18).toString('base64url')}aZ9`;
}

// ---------------------------------------------------------------- the interface

const cache = new Map(); // key -> { token, id, expiresAt }

// Prepares users once, before the load (the before hook). Answers { ids: { key: id } } and,
// in Cognito mode, { password, sessions: { key: { token, id, expiresAt } } }: the before hook
// hands both to the virtual users through its variables, so that the load itself makes no
// Cognito calls (its default quotas are far below a load test's arrival rates).
async function prepareUsers(keys, adminKeys = []) {
  const ids = {};
  if (mode() === 'local') {
    for (const key of [...keys, ...adminKeys]) ids[key] = key;
    return { ids };
  }
  await checkCognitoCredentials();
  const password = process.env.LOADTEST_PASSWORD || newPassword();
  const all = [...keys.map((k) => [k, false]), ...adminKeys.map((k) => [k, true])];
  const sessions = {};
  // A few at a time: the admin API's default quotas are tens of requests per second.
  const parallel = 4;
  for (let i = 0; i < all.length; i += parallel) {
    await Promise.all(
      all.slice(i, i + parallel).map(async ([key, admin]) => {
        await ensureCognitoUser(key, password, admin);
        const fresh = await cognitoLogin(key, password);
        cache.set(key, fresh);
        sessions[key] = fresh;
        ids[key] = fresh.id;
      })
    );
    if (i > 0 && i % 100 === 0) console.log(`  ${i} of ${all.length} Cognito users ready`);
  }
  return { password, ids, sessions };
}

// Answers { token, id } for a user key. Cognito mode: `sessions` and `password` come from
// prepareUsers (through the before hook's variables); a token close to expiry is renewed.
async function session(key, { admin = false, password, sessions } = {}) {
  if (mode() === 'local') {
    return { token: localToken(key, admin ? [ADMIN_GROUP] : []), id: key };
  }
  const fresh = (s) => s && s.expiresAt - Date.now() > 60_000;
  const cached = cache.get(key) || (sessions && sessions[key]);
  if (fresh(cached)) return cached;
  if (!password) throw new Error(`no password for Cognito user ${key}: was it prepared in the before hook?`);
  const renewed = await cognitoLogin(key, password);
  cache.set(key, renewed);
  return renewed;
}

module.exports = { mode, prepareUsers, session, localToken };
