// Bearer tokens for the load scenarios, in one of two modes:
//
// - local (default): HS256 tokens minted here exactly as `local-cloud token` mints them
//   (infra/local-cloud/src/jwt.rs), signed with LOCAL_JWT_SECRET or the runner's published
//   default. The user id the API sees (`sub`) is the key we pick.
// - cognito (AUTH_MODE=cognito, or COGNITO_USER_POOL_ID set): real users in the stack's
//   Cognito user pool, created with the admin API (AdminCreateUser, AdminSetUserPassword), each
//   with a random password of its own that never leaves the before hook, and signed in with
//   ADMIN_USER_PASSWORD_AUTH (IAM credentials; the prod app client allows no client-sent
//   password, only SRP and this). The pool makes up the `sub`, so callers must use the `id`
//   this module answers, never the key, in paths. Only a scenario's operator joins the admin
//   group, after setting up TOTP (the template's MfaScope: the guard trigger keeps admin out
//   of the tokens of an admin without MFA; with MfaScope=everyone every user sets it up at
//   the first sign-in, which this module answers too). Every user is deleted afterwards
//   (deleteUsers, from the scenarios' after hooks, or from a failed before hook); the
//   usernames are also appended to COGNITO_USERS_FILE when set, so that loadtest/load.sh
//   deletes what a crashed or interrupted run left behind.
//
// Tokens are cached per process (Artillery runs virtual users in worker threads, each with
// its own copy of this module) and renewed with the refresh token shortly before they
// expire: no password and no TOTP secret reaches a worker.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
// At most a few admin calls at a time: the admin API's default quotas are tens of requests
// per second.
const { forEachLimited } = require('./common');

const DEFAULT_LOCAL_SECRET = 'local-cloud-dev-secret'; // not a secret: see jwt.rs
const LOCAL_ISSUER = 'local-cloud';
const TOKEN_TTL_SECONDS = 3600;
// {"alg":"HS256","typ":"JWT"}: the runner (jsonwebtoken) accepts any HS256 header.
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
        'AdminSetUserPassword, AdminInitiateAuth, AdminRespondToAuthChallenge, ' +
        'AdminSetUserMFAPreference, AdminAddUserToGroup and AdminDeleteUser on the stack\'s user pool ' +
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

// A password that meets the template's policy (8+, upper, lower, digit) and Cognito's default
// one (a symbol too), new for every user; never printed, never handed to the virtual users.
function newPassword() {
  return `Lt1!${crypto.randomBytes(18).toString('base64url')}aZ9`;
}

// RFC 6238 TOTP (SHA-1, 6 digits, 30 s), what an authenticator app computes from the secret
// AssociateSoftwareToken answers (base32).
function totp(secretBase32, at = Date.now()) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secretBase32.replace(/=+$/, '').toUpperCase()) {
    const v = alphabet.indexOf(c);
    if (v < 0) throw new Error('the TOTP secret is not base32');
    bits += v.toString(2).padStart(5, '0');
  }
  const key = Buffer.alloc(Math.floor(bits.length / 8));
  for (let i = 0; i < key.length; i += 1) key[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / 30)));
  const mac = crypto.createHmac('sha1', key).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return String(code).padStart(6, '0');
}

// Appends a created user to COGNITO_USERS_FILE (usernames only), for load.sh's cleanup.
function record(username) {
  if (process.env.COGNITO_USERS_FILE) fs.appendFileSync(process.env.COGNITO_USERS_FILE, `${username}\n`);
}

// Creates a load-test user with a permanent password of its own.
async function createCognitoUser(key, password) {
  const { client, sdk, poolId } = cognitoConfig();
  const Username = cognitoUsername(key);
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
  record(Username);
  // Permanent, so that the sign-in answers tokens instead of a NEW_PASSWORD_REQUIRED challenge.
  await client.send(
    new sdk.AdminSetUserPasswordCommand({ UserPoolId: poolId, Username, Password: password, Permanent: true })
  );
  return Username;
}

function sessionOf(result, previous = {}) {
  const token = result.AccessToken;
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  return {
    token,
    id: claims.sub,
    groups: claims['cognito:groups'] || [],
    expiresAt: claims.exp * 1000,
    // REFRESH_TOKEN_AUTH answers no new refresh token: keep the one of the sign-in.
    refreshToken: result.RefreshToken || previous.refreshToken,
    username: previous.username,
  };
}

// Signs a user in with ADMIN_USER_PASSWORD_AUTH and answers the MFA challenges a pool may
// ask: MFA_SETUP (MfaScope=everyone, first sign-in: TOTP is set up on the spot) and
// SOFTWARE_TOKEN_MFA (a user with TOTP). `user` is { username, password, totpSecret }, and
// gets the TOTP secret when one is set up here.
// AdminInitiateAuth with `flow` and its parameters, on the load test's pool and client.
function adminInitiateAuth(flow, parameters) {
  const { client, sdk, poolId, clientId } = cognitoConfig();
  return client.send(
    new sdk.AdminInitiateAuthCommand({
      UserPoolId: poolId,
      ClientId: clientId,
      AuthFlow: flow,
      AuthParameters: parameters,
    })
  );
}

async function cognitoSignIn(user) {
  const { client, sdk, poolId, clientId } = cognitoConfig();
  let out = await adminInitiateAuth('ADMIN_USER_PASSWORD_AUTH', {
    USERNAME: user.username,
    PASSWORD: user.password,
  });
  for (let step = 0; !out.AuthenticationResult && step < 3; step += 1) {
    const respond = (ChallengeResponses) =>
      client.send(
        new sdk.AdminRespondToAuthChallengeCommand({
          UserPoolId: poolId,
          ClientId: clientId,
          ChallengeName: out.ChallengeName,
          Session: out.Session,
          ChallengeResponses: { USERNAME: user.username, ...ChallengeResponses },
        })
      );
    if (out.ChallengeName === 'MFA_SETUP') {
      const associated = await client.send(new sdk.AssociateSoftwareTokenCommand({ Session: out.Session }));
      user.totpSecret = associated.SecretCode;
      const verified = await client.send(
        new sdk.VerifySoftwareTokenCommand({ Session: associated.Session, UserCode: totp(user.totpSecret) })
      );
      out = { ...out, Session: verified.Session };
      out = await respond({});
    } else if (out.ChallengeName === 'SOFTWARE_TOKEN_MFA' && user.totpSecret) {
      out = await respond({ SOFTWARE_TOKEN_MFA_CODE: totp(user.totpSecret) });
    } else {
      throw new Error(`Cognito asked ${user.username} for ${out.ChallengeName}, which the load test cannot answer`);
    }
  }
  if (!out.AuthenticationResult) throw new Error(`Cognito answered no tokens for ${user.username}`);
  return sessionOf(out.AuthenticationResult, { username: user.username });
}

// New tokens from the refresh token: no password, no MFA code; the pool's Pre Token
// Generation trigger runs again, so a new group membership shows.
async function cognitoRefresh(session) {
  const out = await adminInitiateAuth('REFRESH_TOKEN_AUTH', { REFRESH_TOKEN: session.refreshToken });
  return sessionOf(out.AuthenticationResult, session);
}

// Makes a signed-in user an operator: TOTP set up (unless the sign-in just did) and preferred,
// then the admin group, then fresh tokens, which carry admin only because TOTP is on.
async function makeOperator(user, session) {
  const { client, sdk, poolId } = cognitoConfig();
  if (!user.totpSecret) {
    const associated = await client.send(new sdk.AssociateSoftwareTokenCommand({ AccessToken: session.token }));
    user.totpSecret = associated.SecretCode;
    await client.send(
      new sdk.VerifySoftwareTokenCommand({ AccessToken: session.token, UserCode: totp(user.totpSecret) })
    );
  }
  await client.send(
    new sdk.AdminSetUserMFAPreferenceCommand({
      UserPoolId: poolId,
      Username: user.username,
      SoftwareTokenMfaSettings: { Enabled: true, PreferredMfa: true },
    })
  );
  await client.send(
    new sdk.AdminAddUserToGroupCommand({ UserPoolId: poolId, Username: user.username, GroupName: ADMIN_GROUP })
  );
  const refreshed = await cognitoRefresh(session);
  if (!refreshed.groups.includes(ADMIN_GROUP)) {
    throw new Error(
      `the operator ${user.username} has TOTP and is in the admin group, but its token lacks admin: ` +
        'is the pool\'s Pre Token Generation trigger (AdminMfaGuardFunction) failing? See its logs'
    );
  }
  return refreshed;
}

// Deletes the given Cognito users (usernames); a user already gone counts as deleted.
// Answers the usernames that could not be deleted.
async function deleteUsers(usernames) {
  if (mode() !== 'cognito' || !usernames || usernames.length === 0) return [];
  const { client, sdk, poolId } = cognitoConfig();
  const failed = [];
  const deleted = new Set();
  await forEachLimited(usernames, 4, async (Username) => {
    try {
      await client.send(new sdk.AdminDeleteUserCommand({ UserPoolId: poolId, Username }));
      deleted.add(Username);
    } catch (err) {
      if (err.name === 'UserNotFoundException') deleted.add(Username);
      else failed.push(Username);
    }
  });
  // What is deleted leaves COGNITO_USERS_FILE, so load.sh's cleanup only retries the rest.
  const ledger = process.env.COGNITO_USERS_FILE;
  if (ledger && fs.existsSync(ledger)) {
    const left = fs
      .readFileSync(ledger, 'utf8')
      .split('\n')
      .filter((name) => name && !deleted.has(name));
    fs.writeFileSync(ledger, left.map((name) => `${name}\n`).join(''));
  }
  console.log(`  ${deleted.size} Cognito load-test users deleted${failed.length ? `, ${failed.length} could not be` : ''}`);
  return failed;
}

// ---------------------------------------------------------------- the interface

const cache = new Map(); // key -> { token, id, expiresAt, refreshToken }

// Prepares users once, before the load (the before hook); `adminKeys` become operators.
// Answers { ids: { key: id } } and, in Cognito mode, { sessions: { key: session }, usernames }:
// the before hook hands both to the virtual users and the after hook through its variables,
// so that the load itself makes no sign-in (the admin API's default quotas are far below a
// load test's arrival rates), and the after hook deletes `usernames` with deleteUsers. When
// preparing fails half-way, the users made so far are deleted before the error is thrown.
async function prepareUsers(keys, adminKeys = []) {
  const ids = {};
  if (mode() === 'local') {
    for (const key of [...keys, ...adminKeys]) ids[key] = key;
    return { ids };
  }
  await checkCognitoCredentials();
  const all = [...keys.map((k) => [k, false]), ...adminKeys.map((k) => [k, true])];
  const sessions = {};
  const usernames = [];
  let done = 0;
  try {
    await forEachLimited(all, 4, async ([key, admin]) => {
      const user = { username: cognitoUsername(key), password: newPassword() };
      // Listed before it exists: a user whose password is then refused is deleted too.
      usernames.push(user.username);
      await createCognitoUser(key, user.password);
      let fresh = await cognitoSignIn(user);
      if (admin) fresh = await makeOperator(user, fresh);
      cache.set(key, fresh);
      sessions[key] = fresh;
      ids[key] = fresh.id;
      done += 1;
      if (done % 100 === 0) console.log(`  ${done} of ${all.length} Cognito users ready`);
    });
  } catch (err) {
    console.error(`preparing the Cognito users failed (${err.message}); deleting the ${usernames.length} made so far`);
    await deleteUsers(usernames);
    throw err;
  }
  return { ids, sessions, usernames };
}

// Answers { token, id } for a user key. Cognito mode: `sessions` come from prepareUsers
// (through the before hook's variables); a token close to expiry is renewed with its refresh
// token.
async function session(key, { admin = false, sessions } = {}) {
  if (mode() === 'local') {
    return { token: localToken(key, admin ? [ADMIN_GROUP] : []), id: key };
  }
  const fresh = (s) => s && s.expiresAt - Date.now() > 60_000;
  const known = cache.get(key) || (sessions && sessions[key]);
  if (!known) throw new Error(`no session for Cognito user ${key}: was it prepared in the before hook?`);
  if (fresh(known)) return known;
  const renewed = await cognitoRefresh(known);
  cache.set(key, renewed);
  return renewed;
}

module.exports = { mode, prepareUsers, session, deleteUsers, localToken, totp };
