// Processor of follow.yml: many users following a small set of recently active posters.
//
// Settings (environment; defaults in brackets):
//   POSTERS [5]            posters, created with their profiles before the load
//   FOLLOWS_PER_USER [3]   posters each new user follows (at most POSTERS)
//   UNFOLLOW_PERCENT [20]  share of users who unfollow one of them again
//   FANS [0]               0: every virtual user is a new user; N: users drawn from a pool of N
//                          (Cognito mode: 0 means a pool of 100, one Cognito user per member).
//                          A member drawn often makes FOLLOWS_PER_USER + 1 attempts each time:
//                          past the stack's FollowRatePerMinute (30) in a minute they are 429s,
//                          so raise that parameter for a heavy run with a pool (docs/security.md, Follow limits)
//   THINK_TIME [0]         seconds between a user's requests
//   AUTH_MODE, LOCAL_JWT_SECRET, COGNITO_*: see lib/auth.js
'use strict';

const auth = require('./lib/auth');
const { envNumber, randomInt, sample, checkStatus, call, newRunId } = require('./lib/common');

const POSTERS = Math.max(1, Math.floor(envNumber('POSTERS', 5)));
const FOLLOWS_PER_USER = Math.max(1, Math.floor(envNumber('FOLLOWS_PER_USER', 3)));
const UNFOLLOW_PERCENT = envNumber('UNFOLLOW_PERCENT', 20);
const THINK_TIME = envNumber('THINK_TIME', 0);

function fanPoolSize() {
  const fans = Math.floor(envNumber('FANS', 0));
  return fans === 0 && auth.mode() === 'cognito' ? 100 : fans;
}

// before hook, once, in Artillery's main process: the posters (and, with Cognito, the fan
// pool) exist and the posters have profiles before any fan arrives. The variables set here
// reach every virtual user.
async function setupPosters(context) {
  const target = context.vars.target;
  const runId = newRunId();
  const posterKeys = Array.from({ length: POSTERS }, (_, i) => `poster-${runId}-${i}`);
  const fans = fanPoolSize();
  const fanKeys = Array.from({ length: fans }, (_, i) => `fan-${runId}-${i}`);
  const { ids, sessions, usernames } = await auth.prepareUsers([...posterKeys, ...fanKeys]);

  const posters = [];
  try {
    for (const key of posterKeys) {
      const { token, id } = await auth.session(key, { sessions });
      await call(target, 'PUT', '/users/me', { token, body: { displayName: `Poster ${key}` } });
      posters.push({ key, id });
    }
  } catch (err) {
    await auth.deleteUsers(usernames);
    throw err;
  }
  context.vars.runId = runId;
  context.vars.posters = posters;
  context.vars.fanIds = fans > 0 ? fanKeys.map((k) => ids[k]) : [];
  if (sessions) context.vars.cognitoSessions = sessions;
  if (usernames) context.vars.cognitoUsers = usernames;
  console.log(`follow: run ${runId}, ${POSTERS} posters with profiles, ${fans || 'a new'} fan${fans ? ' pool' : ' per virtual user'}`);
}

// What a virtual user needs to get a Cognito user's token (nothing, locally).
function credentials(context) {
  return { sessions: context.vars.cognitoSessions };
}

// A fan: who they are, whom they follow, whether they unfollow one of them afterwards.
async function pickFan(context) {
  const { runId, posters } = context.vars;
  const fans = fanPoolSize();
  const key = fans > 0 ? `fan-${runId}-${randomInt(fans)}` : `fan-${runId}-${context._uid.slice(0, 13)}`;
  const { token, id } = await auth.session(key, credentials(context));
  const targets = sample(posters, FOLLOWS_PER_USER).map((p) => p.id);
  context.vars.token = token;
  context.vars.myId = id;
  context.vars.displayName = `Fan ${key}`;
  context.vars.targets = targets;
  context.vars.firstTarget = targets[0];
  context.vars.thinkTime = THINK_TIME;
  context.vars.unfollowTarget = Math.random() * 100 < UNFOLLOW_PERCENT ? targets[targets.length - 1] : '';
}

// A poster coming back to read who followed them.
async function pickPoster(context) {
  const poster = context.vars.posters[randomInt(context.vars.posters.length)];
  const { token, id } = await auth.session(poster.key, credentials(context));
  context.vars.token = token;
  context.vars.myId = id;
  context.vars.thinkTime = THINK_TIME;
}

// after hook: the run's Cognito users are deleted (nothing to do locally).
async function deleteUsers(context) {
  await auth.deleteUsers(context.vars.cognitoUsers);
}

module.exports = { setupPosters, pickFan, pickPoster, deleteUsers, checkStatus };
