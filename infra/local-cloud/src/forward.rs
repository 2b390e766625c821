//! `local-cloud forward`: byte-for-byte forwarding between TCP ports and Unix sockets, so that
//! the function containers of `sam local` reach the emulators while every server on the host
//! listens on loopback only.
//!
//! A container cannot reach the host's loopback, and nothing of the project listens anywhere
//! else. So the bridge has two halves: on the host, `forward unix:SOCKET=tcp:127.0.0.1:PORT`
//! turns a socket file into the emulator's port; in a container on the functions' Docker
//! network, `forward tcp:0.0.0.0:PORT=unix:SOCKET` (the socket's folder bind-mounted) turns it
//! back into a port that the functions reach by the container's name
//! (`infra/docker/bridge.sh`). Bytes go through untouched, so HTTP, the Redis protocol and
//! long polls all work.

use anyhow::{Context as _, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// Where a forward listens or connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl FromStr for Endpoint {
    type Err = anyhow::Error;

    fn from_str(raw: &str) -> anyhow::Result<Self> {
        if let Some(path) = raw.strip_prefix("unix:") {
            if path.is_empty() {
                bail!("unix: needs a socket path, as unix:/path/to/socket");
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        let address = raw.strip_prefix("tcp:").unwrap_or(raw);
        address
            .parse()
            .map(Self::Tcp)
            .with_context(|| format!("expected tcp:IP:PORT or unix:PATH, got {raw:?}"))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(address) => write!(f, "tcp:{address}"),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// One forward: what arrives at `listen` goes to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    pub listen: Endpoint,
    pub to: Endpoint,
}

impl FromStr for Forward {
    type Err = anyhow::Error;

    /// `LISTEN=TO`, e.g. `unix:/run/aws.sock=tcp:127.0.0.1:4566`.
    fn from_str(raw: &str) -> anyhow::Result<Self> {
        let (listen, to) = raw
            .split_once('=')
            .with_context(|| format!("expected LISTEN=TO, got {raw:?}"))?;
        Ok(Self {
            listen: listen.parse()?,
            to: to.parse()?,
        })
    }
}

/// A bound listener of either kind.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    async fn bind(endpoint: &Endpoint) -> anyhow::Result<Self> {
        match endpoint {
            Endpoint::Tcp(address) => {
                Ok(Self::Tcp(TcpListener::bind(address).await.with_context(
                    || format!("failed to listen on {address}"),
                )?))
            }
            Endpoint::Unix(path) => {
                // A socket file left by an earlier run refuses the bind; nobody listens on it.
                if std::fs::symlink_metadata(path).is_ok() {
                    std::fs::remove_file(path).with_context(|| {
                        format!("failed to remove the old socket {}", path.display())
                    })?;
                }
                let listener = UnixListener::bind(path)
                    .with_context(|| format!("failed to listen on {}", path.display()))?;
                Ok(Self::Unix(listener, path.clone()))
            }
        }
    }

    /// The address a TCP listener got (port 0 picks one), for tests.
    fn local_tcp_address(&self) -> Option<SocketAddr> {
        match self {
            Self::Tcp(listener) => listener.local_addr().ok(),
            Self::Unix(..) => None,
        }
    }

    async fn accept(&self) -> std::io::Result<Box<dyn Stream>> {
        match self {
            Self::Tcp(listener) => {
                let (stream, _) = listener.accept().await?;
                // Requests are small and answered one at a time: no Nagle delay.
                stream.set_nodelay(true)?;
                Ok(Box::new(stream))
            }
            Self::Unix(listener, _) => Ok(Box::new(listener.accept().await?.0)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Self::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn connect(endpoint: &Endpoint) -> std::io::Result<Box<dyn Stream>> {
    match endpoint {
        Endpoint::Tcp(address) => {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            Ok(Box::new(stream))
        }
        Endpoint::Unix(path) => Ok(Box::new(UnixStream::connect(path).await?)),
    }
}

/// Forwards that listen; [`Bound::run`] serves them.
pub struct Bound {
    listeners: Vec<(Listener, Endpoint)>,
}

/// Binds every forward's listener, so that a clash fails before anything is served.
pub async fn bind(forwards: &[Forward]) -> anyhow::Result<Bound> {
    let mut listeners = Vec::with_capacity(forwards.len());
    for forward in forwards {
        listeners.push((Listener::bind(&forward.listen).await?, forward.to.clone()));
    }
    Ok(Bound { listeners })
}

impl Bound {
    /// The TCP addresses listened on, in the order the forwards were given.
    pub fn tcp_addresses(&self) -> Vec<Option<SocketAddr>> {
        self.listeners
            .iter()
            .map(|(listener, _)| listener.local_tcp_address())
            .collect()
    }

    /// Serves every forward until the task is dropped. A connection whose target does not
    /// answer is closed at once (and logged): the client sees a reset, as it would from the
    /// target itself.
    pub async fn run(self) {
        let mut serving = tokio::task::JoinSet::new();
        for (listener, to) in self.listeners {
            serving.spawn(serve(listener, to));
        }
        while serving.join_next().await.is_some() {}
    }
}

async fn serve(listener: Listener, to: Endpoint) {
    loop {
        let mut inbound = match listener.accept().await {
            Ok(inbound) => inbound,
            // Out of file descriptors, or a client gone before it was accepted: the listener
            // itself is fine, so it goes on after a breath.
            Err(err) => {
                tracing::warn!(%to, %err, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let to = to.clone();
        tokio::spawn(async move {
            match connect(&to).await {
                Ok(mut outbound) => {
                    // Either side closing ends both: the bytes are not ours to judge.
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                Err(err) => tracing::warn!(%to, %err, "forward target refused"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_forwards_parse() {
        assert_eq!(
            "unix:/run/aws.sock=tcp:127.0.0.1:4566"
                .parse::<Forward>()
                .unwrap(),
            Forward {
                listen: Endpoint::Unix("/run/aws.sock".into()),
                to: Endpoint::Tcp("127.0.0.1:4566".parse().unwrap()),
            }
        );
        assert_eq!(
            "0.0.0.0:6379".parse::<Endpoint>().unwrap(),
            Endpoint::Tcp("0.0.0.0:6379".parse().unwrap())
        );
        assert!("unix:".parse::<Endpoint>().is_err());
        assert!("localhost".parse::<Endpoint>().is_err());
        assert!("tcp:127.0.0.1:1".parse::<Forward>().is_err());
    }

    #[tokio::test]
    async fn bytes_cross_a_socket_file_both_ways() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        // The emulator: echoes what it gets, upper-cased, so the answer is its own.
        let emulator = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let emulator_address = emulator.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = emulator.accept().await.unwrap();
            let mut buffer = [0u8; 4];
            stream.read_exact(&mut buffer).await.unwrap();
            stream
                .write_all(&buffer.to_ascii_uppercase())
                .await
                .unwrap();
        });
        let socket = std::env::temp_dir().join(format!("forward-{}.sock", uuid::Uuid::new_v4()));
        let host = bind(&[Forward {
            listen: Endpoint::Unix(socket.clone()),
            to: Endpoint::Tcp(emulator_address),
        }])
        .await
        .unwrap();
        let container = bind(&[Forward {
            listen: Endpoint::Tcp("127.0.0.1:0".parse().unwrap()),
            to: Endpoint::Unix(socket.clone()),
        }])
        .await
        .unwrap();
        let entry = container.tcp_addresses()[0].unwrap();
        let _host = tokio::spawn(host.run());
        let _container = tokio::spawn(container.run());

        let mut client = TcpStream::connect(entry).await.unwrap();
        client.write_all(b"ping").await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"PING");
    }

    #[tokio::test]
    async fn a_target_that_is_not_there_closes_the_connection() {
        use tokio::io::AsyncReadExt as _;
        let nowhere = std::env::temp_dir().join(format!("nowhere-{}.sock", uuid::Uuid::new_v4()));
        let bound = bind(&[Forward {
            listen: Endpoint::Tcp("127.0.0.1:0".parse().unwrap()),
            to: Endpoint::Unix(nowhere),
        }])
        .await
        .unwrap();
        let entry = bound.tcp_addresses()[0].unwrap();
        let _serving = tokio::spawn(bound.run());
        let mut client = TcpStream::connect(entry).await.unwrap();
        let mut answer = Vec::new();
        // Closed, not hung: the read ends (with nothing, or a reset).
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client.read_to_end(&mut answer),
        )
        .await
        .expect("the forward closes a connection it cannot pass on");
        assert!(read.is_err() || answer.is_empty());
    }
}
