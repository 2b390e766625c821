//! Lua scripts: loaded once, called by hash with EVALSHA, recovered after Redis forgets them.

use crate::support::{redis, unique};
use app::script::LuaScript;
use redis::AsyncCommands;

/// Takes one unit while fewer than `limit` are taken; answers 1 when it took one.
const TAKE_ONE: &str = r#"
local taken = tonumber(redis.call('GET', KEYS[1]) or '0')
if taken >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
return 1
"#;

async fn evalsha_calls(connection: &mut redis::aio::ConnectionManager) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map(|calls| calls.parse().unwrap())
        .unwrap_or(0)
}

/// Takes one unit of `key` with `script` while fewer than `limit` are taken.
async fn take_one(
    script: &LuaScript,
    connection: &mut redis::aio::ConnectionManager,
    key: &str,
    limit: u32,
) -> u32 {
    let mut invocation = script.prepare();
    invocation.key(key).arg(limit);
    invocation.invoke_async(connection).await.unwrap()
}

/// A connection, a fresh key, and the loaded script.
async fn loaded() -> (redis::aio::ConnectionManager, String, LuaScript) {
    let mut connection = redis().await;
    let script = LuaScript::new("take_one", TAKE_ONE);
    script.load(&mut connection).await.unwrap();
    (connection, unique("test-script"), script)
}

#[tokio::test]
async fn a_loaded_script_is_called_by_hash_and_is_atomic() {
    let (mut connection, key, script) = loaded().await;
    let exists: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(script.sha())
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(exists, [true]);

    let before = evalsha_calls(&mut connection).await;
    let mut handles = Vec::new();
    for _ in 0..20 {
        let script = script.clone();
        let mut connection = connection.clone();
        let key = key.clone();
        handles.push(tokio::spawn(async move {
            take_one(&script, &mut connection, &key, 5).await
        }));
    }
    let mut took = 0;
    for handle in handles {
        took += handle.await.unwrap();
    }
    assert_eq!(took, 5);
    let taken: u32 = connection.get(&key).await.unwrap();
    assert_eq!(taken, 5);
    assert!(evalsha_calls(&mut connection).await >= before + 20);
    let _: () = connection.del(&key).await.unwrap();
}

#[tokio::test]
async fn a_script_that_redis_forgot_is_loaded_again() {
    let (mut connection, key, script) = loaded().await;
    // What a restart or failover does to the script cache.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(take_one(&script, &mut connection, &key, 1).await, 1);
    let _: () = connection.del(&key).await.unwrap();
}

#[tokio::test]
async fn load_all_loads_every_script_it_is_given() {
    let connection = redis().await;
    // Sources of this test's own, so that no other test has loaded them already.
    let marker = unique("load-all");
    let scripts: Vec<LuaScript> = (0..3)
        .map(|i| LuaScript::new("numbered", &format!("return {i} -- {marker}")))
        .collect();
    let shas: Vec<&str> = scripts.iter().map(LuaScript::sha).collect();
    let exists = |shas: Vec<String>| {
        let mut connection = connection.clone();
        async move {
            redis::cmd("SCRIPT")
                .arg("EXISTS")
                .arg(shas)
                .query_async::<Vec<bool>>(&mut connection)
                .await
                .unwrap()
        }
    };
    let owned = || shas.iter().map(|sha| sha.to_string()).collect::<Vec<_>>();
    assert_eq!(exists(owned()).await, [false, false, false]);

    let refs: Vec<&LuaScript> = scripts.iter().collect();
    LuaScript::load_all(&refs, &connection).await.unwrap();
    assert_eq!(exists(owned()).await, [true, true, true]);
    LuaScript::load_all(&[], &connection).await.unwrap();
}
