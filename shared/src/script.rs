//! Redis Lua scripts, loaded once and then called by their SHA1 with `EVALSHA`.
//!
//! Sending the script's body with every call (`EVAL`) costs bandwidth and parsing on a hot
//! path; instead a function loads its scripts at cold start and calls them by hash. If Redis
//! forgets them (a restart, a failover, `SCRIPT FLUSH`), the call answers `NOSCRIPT` and the
//! `redis` crate loads the script again and retries once.

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, RedisResult, Script, ScriptInvocation};

/// A Lua script with a name for the logs.
#[derive(Clone, Debug)]
pub struct LuaScript {
    name: &'static str,
    script: Script,
}

impl LuaScript {
    pub fn new(name: &'static str, source: &str) -> Self {
        Self {
            name,
            script: Script::new(source),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The SHA1 that `EVALSHA` calls it by.
    pub fn sha(&self) -> &str {
        self.script.get_hash()
    }

    /// Loads the script into Redis (`SCRIPT LOAD`); call once at cold start.
    #[tracing::instrument(skip_all, fields(script = self.name))]
    pub async fn load(&self, connection: &mut ConnectionManager) -> RedisResult<()> {
        self.script.load_async(connection).await.map(|_| ())
    }

    /// Loads every script of `scripts` in one round trip: the `SCRIPT LOAD`s go out together
    /// on the one multiplexed connection, where one after the other would wait for each
    /// answer (a round trip to ElastiCache apiece, at every cold start).
    pub async fn load_all(
        scripts: &[&LuaScript],
        connection: &ConnectionManager,
    ) -> RedisResult<()> {
        let loads = scripts.iter().map(|script| {
            let mut connection = connection.clone();
            async move { script.load(&mut connection).await }
        });
        futures_util::future::try_join_all(loads).await.map(|_| ())
    }

    /// An invocation to add keys and arguments to; `invoke_async` on it sends `EVALSHA`.
    pub fn prepare(&self) -> ScriptInvocation<'_> {
        self.script.prepare_invoke()
    }

    /// Calls the script with `keys` and the arguments that `args` adds, on a clone of
    /// `connection` (a handle to the one multiplexed connection).
    pub async fn call<T: FromRedisValue>(
        &self,
        connection: &ConnectionManager,
        keys: &[&str],
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> RedisResult<T> {
        let mut invocation = self.prepare();
        for key in keys {
            invocation.key(*key);
        }
        args(&mut invocation);
        invocation.invoke_async(&mut connection.clone()).await
    }
}
