//! The runner's console: what the functions print, prefixed with `[Function#n]`, and one line
//! per invocation, all through one buffer that a thread of its own writes to stdout.
//!
//! A function's stdout also goes, line by line, to the dashboard, which keeps the metrics of
//! its CloudWatch Embedded Metric Format lines; the lines are printed all the same, as in the
//! cloud they are log lines too.
//!
//! Writers only append under a short lock (one per line, or one per read of a function's
//! pipe), never block on the terminal: under load a slow terminal or pipe must not slow the
//! invocations down. The writer thread flushes every few milliseconds.

use super::log_filter;
use crate::model::LogLevel;
use std::io::Write as _;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt as _};

/// How often the writer thread flushes, at most this late.
const FLUSH_EVERY: Duration = Duration::from_millis(20);
/// Wake the writer early past this much.
const FLUSH_AT: usize = 64 * 1024;
/// Past this much unwritten output (stdout is stuck), lines are dropped and counted.
const MAX_BUFFERED: usize = 16 * 1024 * 1024;
/// A function's line longer than this is cut into several.
const MAX_LINE: usize = 64 * 1024;

pub(crate) struct Console {
    buffer: Mutex<Buffer>,
    wake: Condvar,
    /// Held while writing to stdout, so that an explicit flush and the writer thread never
    /// write out of order.
    writing: Mutex<Vec<u8>>,
}

#[derive(Default)]
struct Buffer {
    data: Vec<u8>,
    dropped: u64,
}

/// The process-wide console; its writer thread starts on first use.
pub(crate) fn console() -> &'static Console {
    static CONSOLE: OnceLock<&'static Console> = OnceLock::new();
    CONSOLE.get_or_init(|| {
        let console: &'static Console = Box::leak(Box::new(Console {
            buffer: Mutex::new(Buffer::default()),
            wake: Condvar::new(),
            writing: Mutex::new(Vec::new()),
        }));
        std::thread::Builder::new()
            .name("local-cloud-console".into())
            .spawn(move || console.run())
            .expect("failed to start the console thread");
        console
    })
}

impl Console {
    /// Appends what `write` writes; it must write whole lines.
    pub(crate) fn append(&self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut buffer = self.lock();
        if buffer.data.len() >= MAX_BUFFERED {
            buffer.dropped += 1;
            return;
        }
        let before = buffer.data.len();
        write(&mut buffer.data);
        // Only on crossing: a notification is a syscall.
        if before < FLUSH_AT && buffer.data.len() >= FLUSH_AT {
            self.wake.notify_one();
        }
    }

    /// Writes everything appended so far to stdout now.
    pub(crate) fn flush(&self) {
        let mut out = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let dropped = {
            let mut buffer = self.lock();
            std::mem::swap(&mut buffer.data, &mut *out);
            std::mem::take(&mut buffer.dropped)
        };
        if dropped > 0 {
            let _ = writeln!(
                out,
                "[local-cloud] stdout could not keep up: {dropped} lines were dropped"
            );
        }
        if !out.is_empty() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&out);
            let _ = stdout.flush();
            out.clear();
            // Keep the allocation for the next swap unless a burst made it huge.
            if out.capacity() > 4 * FLUSH_AT {
                *out = Vec::new();
            }
        }
    }

    fn run(&self) {
        loop {
            {
                let buffer = self.lock();
                if buffer.data.len() < FLUSH_AT {
                    let _unused = self
                        .wake
                        .wait_timeout(buffer, FLUSH_EVERY)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            self.flush();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where the lines of a function's stdout go besides the console: the dashboard's metrics.
pub(crate) struct MetricLines {
    pub(crate) dashboard: std::sync::Arc<crate::dashboard::Dashboard>,
    pub(crate) function: Box<str>,
}

impl MetricLines {
    fn line(&self, line: &[u8]) {
        self.dashboard.function_line(&self.function, line);
    }
}

/// Copies a function's stdout or stderr to the console, each line after `prefix`, until EOF;
/// and each line to `metrics`, if any. With a `filter` (Lambda's log-level filter, the
/// function's `ApplicationLogLevel`), a line Lambda would drop goes nowhere, as in the cloud
/// where CloudWatch Logs never sees it ([`super::log_filter`]).
pub(crate) async fn pump(
    mut from: impl AsyncRead + Unpin,
    prefix: std::sync::Arc<[u8]>,
    metrics: Option<MetricLines>,
    filter: Option<LogLevel>,
) {
    let console = console();
    let mut chunk = vec![0u8; 16 * 1024];
    // The start of a line that the last read cut.
    let mut partial: Vec<u8> = Vec::new();
    // The lines of one read that pass the filter, as ranges of `text`.
    let mut text: Vec<u8> = Vec::new();
    let mut lines: Vec<std::ops::Range<usize>> = Vec::new();
    loop {
        let read = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let chunk = &chunk[..read];
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                text.clear();
                lines.clear();
                for (i, line) in chunk[..last].split(|&b| b == b'\n').enumerate() {
                    let start = text.len();
                    if i == 0 {
                        text.extend_from_slice(&partial);
                    }
                    text.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
                    if log_filter::passes(&text[start..], filter) {
                        lines.push(start..text.len());
                    } else {
                        text.truncate(start);
                    }
                }
                if !lines.is_empty() {
                    console.append(|out| {
                        for range in &lines {
                            line(out, &prefix, &text[range.clone()]);
                        }
                    });
                }
                // Outside the console's lock: parsing a metric line takes a while.
                if let Some(metrics) = &metrics {
                    for range in &lines {
                        metrics.line(&text[range.clone()]);
                    }
                }
                partial.clear();
                partial.extend_from_slice(&chunk[last + 1..]);
            }
            None => partial.extend_from_slice(chunk),
        }
        if partial.len() >= MAX_LINE {
            rest(console, &prefix, metrics.as_ref(), filter, &partial);
            partial.clear();
        }
    }
    if !partial.is_empty() {
        rest(console, &prefix, metrics.as_ref(), filter, &partial);
    }
}

/// A line that ended without a newline (at EOF, or cut at [`MAX_LINE`]).
fn rest(
    console: &Console,
    prefix: &[u8],
    metrics: Option<&MetricLines>,
    filter: Option<LogLevel>,
    text: &[u8],
) {
    if !log_filter::passes(text, filter) {
        return;
    }
    console.append(|out| line(out, prefix, text));
    if let Some(metrics) = metrics {
        metrics.line(text);
    }
}

fn line(out: &mut Vec<u8>, prefix: &[u8], text: &[u8]) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(text);
    out.push(b'\n');
}

/// A line of the runner's own about one instance, e.g. why it restarts.
pub(crate) fn note(prefix: &[u8], text: std::fmt::Arguments<'_>) {
    console().append(|out| {
        out.extend_from_slice(prefix);
        let _ = out.write_fmt(text);
        out.push(b'\n');
    });
}
