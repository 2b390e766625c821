// Deletes the Cognito users listed in a file (one username a line), what lib/auth.js records
// in COGNITO_USERS_FILE as it creates them and takes out again as it deletes them: after a
// run, whatever is left was not deleted by the scenario's after hook (a crash, an
// interrupted run). loadtest/load.sh runs it on the way out; the file is removed once empty.
//
//   node loadtest/artillery/lib/cleanup.js FILE      (COGNITO_USER_POOL_ID etc. as for the run)
'use strict';

const fs = require('node:fs');
const auth = require('./auth');

async function main(file) {
  if (!file) throw new Error('usage: node cleanup.js FILE');
  if (!fs.existsSync(file)) return;
  const usernames = [...new Set(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean))];
  if (usernames.length > 0) {
    console.log(`deleting ${usernames.length} Cognito load-test users the run left behind ...`);
    // deleteUsers takes the deleted ones out of COGNITO_USERS_FILE.
    process.env.COGNITO_USERS_FILE = file;
    const failed = await auth.deleteUsers(usernames);
    if (failed.length > 0) {
      throw new Error(`${failed.length} users could not be deleted; they are listed in ${file}`);
    }
  }
  fs.rmSync(file, { force: true });
}

main(process.argv[2]).catch((err) => {
  console.error(err.message);
  process.exit(1);
});
