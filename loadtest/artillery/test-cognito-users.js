// The Cognito mode of lib/auth.js against moto's cognito-idp (AWS_ENDPOINT_URL), as
// loadtest/smoke-load.sh runs it in `make test`: a pool shaped like the template's
// (MfaScope=admins: MFA optional, TOTP; the admin group; an app client with
// ADMIN_USER_PASSWORD_AUTH and refresh tokens), then what a scenario's hooks do.
//
// Checks: only the operator is in the admin group and its token says admin, after TOTP was
// set up; buyers' tokens carry no group and renew with the refresh token; every user is
// deleted afterwards and taken out of COGNITO_USERS_FILE; a before hook that fails half-way
// leaves no user behind; lib/cleanup.js deletes what a crashed run left listed.
//
//   AWS_ENDPOINT_URL=http://127.0.0.1:PORT node loadtest/artillery/test-cognito-users.js
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const sdk = require('@aws-sdk/client-cognito-identity-provider');

async function main() {
  if (!process.env.AWS_ENDPOINT_URL) throw new Error('AWS_ENDPOINT_URL (moto) is not set');
  const region = process.env.AWS_REGION || 'us-east-1';
  const cognito = new sdk.CognitoIdentityProviderClient({ region });
  const pool = (
    await cognito.send(
      new sdk.CreateUserPoolCommand({
        PoolName: `loadtest-${Date.now()}`,
        UsernameAttributes: ['email'],
        MfaConfiguration: 'OPTIONAL',
        Policies: {
          PasswordPolicy: {
            MinimumLength: 8,
            RequireLowercase: true,
            RequireNumbers: true,
            RequireSymbols: false,
            RequireUppercase: true,
          },
        },
      })
    )
  ).UserPool.Id;
  const client = (
    await cognito.send(
      new sdk.CreateUserPoolClientCommand({
        UserPoolId: pool,
        ClientName: 'api',
        ExplicitAuthFlows: ['ALLOW_USER_SRP_AUTH', 'ALLOW_ADMIN_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
      })
    )
  ).UserPoolClient.ClientId;
  await cognito.send(new sdk.CreateGroupCommand({ UserPoolId: pool, GroupName: 'admin' }));
  const ledger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loadtest-cognito-')), 'users');
  fs.writeFileSync(ledger, '');
  Object.assign(process.env, {
    AUTH_MODE: 'cognito',
    COGNITO_USER_POOL_ID: pool,
    COGNITO_CLIENT_ID: client,
    COGNITO_USERS_FILE: ledger,
  });
  const auth = require('./lib/auth');
  const users = async () => (await cognito.send(new sdk.ListUsersCommand({ UserPoolId: pool }))).Users;
  const listed = () => fs.readFileSync(ledger, 'utf8').split('\n').filter(Boolean);

  // What seckill's before hook does: buyers and one operator.
  const { ids, sessions, usernames } = await auth.prepareUsers(['b0', 'b1', 'b2'], ['ops']);
  assert.equal(usernames.length, 4);
  assert.equal(new Set(Object.values(ids)).size, 4, 'each user has its own sub');
  assert.deepEqual(sessions.ops.groups, ['admin'], 'the operator signs in as admin');
  for (const buyer of ['b0', 'b1', 'b2']) assert.deepEqual(sessions[buyer].groups, [], `${buyer} is no admin`);
  const admins = await cognito.send(new sdk.ListUsersInGroupCommand({ UserPoolId: pool, GroupName: 'admin' }));
  assert.equal(admins.Users.length, 1, 'exactly one admin');
  const operator = await cognito.send(
    new sdk.AdminGetUserCommand({ UserPoolId: pool, Username: 'ops@loadtest.example.com' })
  );
  assert.deepEqual(operator.UserMFASettingList, ['SOFTWARE_TOKEN_MFA'], 'the operator has TOTP');
  assert.deepEqual(listed().sort(), [...usernames].sort());

  // A virtual user whose token is about to expire renews it with the refresh token.
  const stale = { ...sessions.b1, expiresAt: Date.now() };
  const renewed = await auth.session('b1', { sessions: { b1: stale } });
  assert.equal(renewed.id, ids.b1);
  assert.ok(renewed.expiresAt > Date.now() + 60_000);

  // The after hook.
  assert.deepEqual(await auth.deleteUsers(usernames), []);
  assert.equal((await users()).length, 0, 'every user is deleted');
  assert.deepEqual(listed(), [], 'and no longer listed for load.sh');

  // A before hook that fails half-way (a user whose password the pool refuses) leaves none.
  await cognito.send(
    new sdk.UpdateUserPoolCommand({
      UserPoolId: pool,
      MfaConfiguration: 'OPTIONAL',
      Policies: { PasswordPolicy: { MinimumLength: 99 } },
    })
  );
  await assert.rejects(auth.prepareUsers(['late0', 'late1'], []), /password/i);
  assert.equal((await users()).length, 0, 'a failed before hook deletes what it made');

  // A crashed run: users listed but never deleted; load.sh's cleanup deletes them.
  await cognito.send(
    new sdk.AdminCreateUserCommand({ UserPoolId: pool, Username: 'left@loadtest.example.com', MessageAction: 'SUPPRESS' })
  );
  fs.writeFileSync(ledger, 'left@loadtest.example.com\n');
  execFileSync(process.execPath, [path.join(__dirname, 'lib/cleanup.js'), ledger], { stdio: 'inherit' });
  assert.equal((await users()).length, 0, 'cleanup.js deletes what a crashed run left');
  assert.ok(!fs.existsSync(ledger), 'and removes the emptied list');
  console.log('cognito users: ok (one admin with TOTP, per-user sessions, all deleted, cleanup after a crash)');
}

main().catch((err) => {
  console.error(`cognito users: FAILED: ${err.stack || err.message}`);
  process.exit(1);
});
