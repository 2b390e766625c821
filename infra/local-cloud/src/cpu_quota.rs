//! Lambda's CPU share for a local process: a cgroup per process whose CPU quota is what Lambda
//! gives a function of that memory size, so that durations measured locally read like
//! Lambda's.
//!
//! Lambda allocates CPU in proportion to the configured memory: 1,769 MB is one vCPU, so
//! 128 MB gets about 0.072 of one, and sizes above 1,769 MB get more than one (up to 6 at
//! 10,240 MB). Here the kernel's CFS bandwidth control enforces that share: every `period`,
//! the group may run for `period × memory_mb / 1769`, then waits for the next period.
//!
//! The period is an assumption: Lambda does not publish how it meters the share. The default
//! [`DEFAULT_PERIOD`] of 20 ms is a choice, shorter than the kernel's 100 ms so that a small
//! function's stalls stay short (at 128 MB, 1.4 ms of CPU then 18.6 ms of waiting, rather than
//! 7 ms then 93 ms). It matters for short invocations: within one period a process runs at
//! full speed until its quota is spent, so an invocation shorter than the quota pays nothing
//! and a longer one stalls until the next period. Averages over many invocations follow the
//! share whatever the period.
//!
//! Both cgroup hierarchies work, whichever [`Hierarchy::detect`] finds mounted: cgroup v1's
//! `cpu` controller (`cpu.cfs_quota_us` and `cpu.cfs_period_us`) and cgroup v2 (`cpu.max`)
//! when v2 is what is mounted at `/sys/fs/cgroup`. Groups live under one parent group per
//! tool and stack, e.g. `local-cloud.<stack>/<function>-<instance>.<pid>.<n>`.
//!
//! A process enters its group between `fork` and `exec` ([`Group::confine`]), so even its
//! first instruction runs under the quota: init is throttled as Lambda throttles it.

#![expect(
    unsafe_code,
    reason = "joining a cgroup between fork and exec (pre_exec) and reaping with wait4 need libc"
)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The memory size that Lambda gives one full vCPU.
pub const MB_PER_VCPU: u32 = 1769;
/// The CFS period when none is given. An assumption (see the module's documentation).
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(20);
/// The kernel's bounds: a quota of at least 1 ms, a period of 1 ms to 1 s.
const MIN_QUOTA_US: u64 = 1_000;
const MIN_PERIOD_US: u64 = 1_000;
const MAX_PERIOD_US: u64 = 1_000_000;
/// Where cgroup v2 must be mounted for it to be used.
const UNIFIED_ROOT: &str = "/sys/fs/cgroup";
/// How long dropping a group waits for its last task to leave before giving up.
const RMDIR_ATTEMPTS: u32 = 100;
const RMDIR_PAUSE: Duration = Duration::from_millis(10);

/// A CPU bandwidth limit: `quota_us` of CPU time every `period_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub period_us: u64,
    pub quota_us: u64,
}

impl Quota {
    /// Lambda's share for `memory_mb`: `period × memory_mb / 1769`, rounded to the
    /// microsecond. The period is clamped to the kernel's 1 ms to 1 s and the quota raised to
    /// its 1 ms minimum (which only a period under about 14 ms reaches at 128 MB).
    pub fn for_memory(memory_mb: u32, period: Duration) -> Self {
        let period_us = u64::try_from(period.as_micros())
            .unwrap_or(MAX_PERIOD_US)
            .clamp(MIN_PERIOD_US, MAX_PERIOD_US);
        let per_vcpu = u64::from(MB_PER_VCPU);
        let quota_us = (period_us * u64::from(memory_mb) + per_vcpu / 2) / per_vcpu;
        Self {
            period_us,
            quota_us: quota_us.max(MIN_QUOTA_US),
        }
    }

    /// The share in vCPUs.
    pub fn vcpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }
}

/// Which cgroup hierarchy has the CPU controller, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1: the `cpu` controller's own mount (e.g. `/sys/fs/cgroup/cpu`).
    V1 { root: PathBuf },
    /// cgroup v2, the unified hierarchy mounted at `/sys/fs/cgroup`.
    V2 { root: PathBuf },
}

impl Hierarchy {
    /// The hierarchy this machine has mounted, from `/proc/self/mounts`.
    pub fn detect() -> Option<Self> {
        Self::from_mounts(&std::fs::read_to_string("/proc/self/mounts").ok()?)
    }

    /// The hierarchy in a `/proc/mounts` text: cgroup v2 when it is mounted at
    /// `/sys/fs/cgroup` (the unified layout); otherwise a cgroup v1 mount with the `cpu`
    /// controller (the legacy and hybrid layouts, where a v2 mount, if any, has no
    /// controllers).
    pub fn from_mounts(mounts: &str) -> Option<Self> {
        let mut v1 = None;
        for line in mounts.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, mount_point, fs_type, options, ..] = fields[..] else {
                continue;
            };
            match fs_type {
                "cgroup2" if mount_point == UNIFIED_ROOT => {
                    return Some(Self::V2 {
                        root: mount_point.into(),
                    });
                }
                "cgroup" if v1.is_none() && options.split(',').any(|option| option == "cpu") => {
                    v1 = Some(Self::V1 {
                        root: mount_point.into(),
                    });
                }
                _ => {}
            }
        }
        v1
    }

    pub fn root(&self) -> &Path {
        match self {
            Self::V1 { root } | Self::V2 { root } => root,
        }
    }

    /// The files that set `quota` on a group, with their contents, in the order to write.
    fn quota_files(&self, quota: Quota) -> Vec<(&'static str, String)> {
        match self {
            // The period first: a quota is checked against the period in place.
            Self::V1 { .. } => vec![
                ("cpu.cfs_period_us", quota.period_us.to_string()),
                ("cpu.cfs_quota_us", quota.quota_us.to_string()),
            ],
            Self::V2 { .. } => vec![("cpu.max", format!("{} {}", quota.quota_us, quota.period_us))],
        }
    }

    /// The quota set on the group at `dir`; `None` when unlimited or unreadable.
    pub fn read_quota(&self, dir: &Path) -> Option<Quota> {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let (quota, period) = match self {
            Self::V1 { .. } => (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?),
            Self::V2 { .. } => {
                let max = read("cpu.max")?;
                let (quota, period) = max.trim().split_once(' ')?;
                (quota.to_owned(), period.to_owned())
            }
        };
        Some(Quota {
            quota_us: quota.trim().parse().ok()?,
            period_us: period.trim().parse().ok()?,
        })
    }
}

/// Why processes cannot get Lambda's CPU share here.
#[derive(Debug, thiserror::Error)]
pub enum CpuQuotaError {
    #[error(
        "Lambda's CPU share needs a writable cgroup cpu controller (neither a cgroup v1 `cpu` \
         hierarchy nor cgroup v2 at /sys/fs/cgroup is mounted); run without {option}"
    )]
    NoController { option: String },
    #[error(
        "Lambda's CPU share needs a writable cgroup cpu controller (cannot {action} {}: \
         {cause}); run without {option}",
        path.display()
    )]
    NotWritable {
        action: &'static str,
        path: PathBuf,
        cause: io::Error,
        option: String,
    },
}

/// The parent group of one tool's processes; makes a [`Group`] per process. Removes the
/// parent when dropped, if no other user of the same name still has groups in it.
#[derive(Debug)]
pub struct CpuQuota {
    hierarchy: Hierarchy,
    parent: PathBuf,
    period: Duration,
    /// The option that turns this on, named in errors ("run without ...").
    option: String,
    next: AtomicU64,
}

impl CpuQuota {
    /// Creates (or reuses) the parent group `name` at the root of the detected hierarchy, e.g.
    /// `local-cloud.<stack>`. `option` is how the user turns this off, for the error.
    pub fn new(name: &str, period: Duration, option: &str) -> Result<Self, CpuQuotaError> {
        let hierarchy = Hierarchy::detect().ok_or_else(|| CpuQuotaError::NoController {
            option: option.to_owned(),
        })?;
        let parent = hierarchy.root().join(path_safe(name));
        let quota = Self {
            hierarchy,
            parent,
            period,
            option: option.to_owned(),
            next: AtomicU64::new(0),
        };
        match std::fs::create_dir(&quota.parent) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(quota.not_writable("create", &quota.parent, error)),
        }
        if let Hierarchy::V2 { root } = &quota.hierarchy {
            // v2 gives a group's children a controller only when its parent enables it.
            for dir in [root.as_path(), quota.parent.as_path()] {
                let control = dir.join("cgroup.subtree_control");
                std::fs::write(&control, "+cpu")
                    .map_err(|error| quota.not_writable("write", &control, error))?;
            }
        }
        Ok(quota)
    }

    /// The parent group's directory.
    pub fn dir(&self) -> &Path {
        &self.parent
    }

    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    /// A new group for one process of a function of `memory_mb`, named after `label`.
    pub fn group(&self, label: &str, memory_mb: u32) -> Result<Group, CpuQuotaError> {
        let quota = Quota::for_memory(memory_mb, self.period);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self
            .parent
            .join(format!("{}.{}.{n}", path_safe(label), std::process::id()));
        std::fs::create_dir(&dir).map_err(|error| self.not_writable("create", &dir, error))?;
        // From here on, dropping the group removes the directory.
        let procs = dir.join("cgroup.procs");
        let group = Group {
            procs: CString::new(procs.as_os_str().as_bytes())
                .expect("a path read from the mounts has no NUL byte"),
            dir,
            quota,
        };
        for (name, value) in self.hierarchy.quota_files(quota) {
            let file = group.dir.join(name);
            std::fs::write(&file, value)
                .map_err(|error| self.not_writable("write", &file, error))?;
        }
        Ok(group)
    }

    fn not_writable(&self, action: &'static str, path: &Path, cause: io::Error) -> CpuQuotaError {
        CpuQuotaError::NotWritable {
            action,
            path: path.to_owned(),
            cause,
            option: self.option.clone(),
        }
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Fails while another runner of the same stack still has groups there: it removes it.
        let _ = std::fs::remove_dir(&self.parent);
    }
}

/// One process's group. Create it before spawning the process, [`confine`](Self::confine)
/// the command, and drop it once the process has ended: dropping removes the group.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    /// `<dir>/cgroup.procs`, ready for `open(2)` in the child.
    procs: CString,
    quota: Quota,
}

impl Group {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// Makes the process that `command` spawns join this group before it executes its first
    /// instruction; if it cannot, the spawn fails with the reason.
    pub fn confine(&self, command: &mut std::process::Command) {
        let procs = self.procs.clone();
        // SAFETY: `join` makes only async-signal-safe calls (getpid, open, write, close) on
        // memory prepared before the fork, and allocates nothing.
        unsafe {
            command.pre_exec(move || join(&procs));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // rmdir fails with EBUSY until the last task has left, which a killed process does a
        // moment after its parent has seen it exit.
        for attempt in 1..=RMDIR_ATTEMPTS {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return,
                Err(error) if attempt == RMDIR_ATTEMPTS => {
                    tracing::warn!(group = %self.dir.display(), %error, "cannot remove the cgroup");
                }
                Err(_) => std::thread::sleep(RMDIR_PAUSE),
            }
        }
    }
}

/// Writes the calling process's id to `procs`. Runs in the child between fork and exec:
/// raw system calls only, the number formatted by hand on the stack.
fn join(procs: &CStr) -> io::Result<()> {
    let mut digits = [0u8; 20];
    // SAFETY: getpid cannot fail and is async-signal-safe.
    let mut pid = unsafe { libc::getpid() } as u64;
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    let text = &digits[start..];
    // SAFETY: `procs` is a valid NUL-terminated path; open, write and close are
    // async-signal-safe; `text` is a live buffer of `text.len()` bytes.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, text.as_ptr().cast(), text.len());
        let result = if written == text.len() as isize {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        libc::close(fd);
        result
    }
}

/// A name usable as one path component.
fn path_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    #[test]
    fn the_quota_is_the_period_times_memory_over_1769() {
        let period = Duration::from_millis(20);
        assert_eq!(
            Quota::for_memory(1769, period),
            Quota {
                period_us: 20_000,
                quota_us: 20_000
            }
        );
        // 20,000 × 128 / 1769 = 1447.2
        assert_eq!(Quota::for_memory(128, period).quota_us, 1_447);
        // 20,000 × 512 / 1769 = 5788.6, rounded up.
        assert_eq!(Quota::for_memory(512, period).quota_us, 5_789);
        // Above 1769 MB, more than one vCPU: 10,240 MB is 5.79 (115,771.6 µs).
        let largest = Quota::for_memory(10_240, period);
        assert_eq!(largest.quota_us, 115_772);
        assert!((largest.vcpus() - 5.789).abs() < 0.001);
        assert!((Quota::for_memory(128, period).vcpus() - 0.0724).abs() < 0.0001);
    }

    #[test]
    fn the_kernel_bounds_hold() {
        // 10 ms × 128 / 1769 = 724 µs, under the kernel's 1 ms minimum.
        assert_eq!(
            Quota::for_memory(128, Duration::from_millis(10)).quota_us,
            1_000
        );
        assert_eq!(
            Quota::for_memory(1769, Duration::from_micros(10)).period_us,
            1_000
        );
        assert_eq!(
            Quota::for_memory(1769, Duration::from_secs(5)),
            Quota {
                period_us: 1_000_000,
                quota_us: 1_000_000
            }
        );
    }

    const LEGACY: &str = "\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
";

    #[test]
    fn v1_is_the_mount_with_the_cpu_controller() {
        assert_eq!(
            Hierarchy::from_mounts(LEGACY),
            Some(Hierarchy::V1 {
                root: "/sys/fs/cgroup/cpu".into()
            })
        );
        // systemd's layout: cpu and cpuacct share a mount.
        let joint = "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n";
        assert_eq!(
            Hierarchy::from_mounts(joint),
            Some(Hierarchy::V1 {
                root: "/sys/fs/cgroup/cpu,cpuacct".into()
            })
        );
    }

    #[test]
    fn v2_only_when_it_is_mounted_at_sys_fs_cgroup() {
        let unified =
            "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n";
        assert_eq!(
            Hierarchy::from_mounts(unified),
            Some(Hierarchy::V2 {
                root: "/sys/fs/cgroup".into()
            })
        );
        // Hybrid: v2 beside v1, without controllers; the cpu controller is v1's.
        let hybrid = format!(
            "{LEGACY}cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"
        );
        assert_eq!(
            Hierarchy::from_mounts(&hybrid),
            Some(Hierarchy::V1 {
                root: "/sys/fs/cgroup/cpu".into()
            })
        );
        // A v1 mount of other controllers only, or nothing: no CPU controller.
        assert_eq!(
            Hierarchy::from_mounts("cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\n"),
            None
        );
        assert_eq!(Hierarchy::from_mounts(""), None);
    }

    #[test]
    fn each_hierarchy_writes_its_own_files() {
        let quota = Quota::for_memory(128, DEFAULT_PERIOD);
        let v1 = Hierarchy::V1 { root: "/x".into() };
        assert_eq!(
            v1.quota_files(quota),
            [
                ("cpu.cfs_period_us", "20000".to_owned()),
                ("cpu.cfs_quota_us", "1447".to_owned())
            ]
        );
        let v2 = Hierarchy::V2 { root: "/x".into() };
        assert_eq!(
            v2.quota_files(quota),
            [("cpu.max", "1447 20000".to_owned())]
        );
    }

    #[test]
    fn group_names_are_one_path_component() {
        assert_eq!(path_safe("local-cloud.stack/1 x"), "local-cloud.stack_1_x");
    }

    /// Wall and CPU time of a short CPU-bound shell loop run in a group of `memory_mb`.
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4, which also answers its CPU time; std's wait does not"
    )]
    fn spin(quota: &CpuQuota, memory_mb: u32) -> (Duration, Duration) {
        let group = quota.group("spin", memory_mb).expect("a group");
        let mut command = Command::new("sh");
        command.args(["-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"]);
        group.confine(&mut command);
        let started = Instant::now();
        let child = command.spawn().expect("sh starts");
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 reaps our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
        let wall = started.elapsed();
        assert_eq!(waited, child.id() as i32, "{}", io::Error::last_os_error());
        assert_eq!(status, 0);
        let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        let cpu = Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime));
        (wall, cpu)
    }

    #[test]
    fn a_process_runs_at_the_share_of_its_memory_size() {
        let quota = match CpuQuota::new(
            &format!("local-cloud-test.{}", std::process::id()),
            DEFAULT_PERIOD,
            "this test",
        ) {
            Ok(quota) => quota,
            Err(error) => {
                println!("skipped: {error}");
                return;
            }
        };
        let (small_wall, small_cpu) = spin(&quota, 128);
        let (full_wall, full_cpu) = spin(&quota, 1769);
        let small = small_wall.as_secs_f64() / small_cpu.as_secs_f64();
        let full = full_wall.as_secs_f64() / full_cpu.as_secs_f64();
        println!(
            "128 MB: {small_wall:?} wall for {small_cpu:?} CPU ({small:.1}x); \
             1769 MB: {full_wall:?} wall for {full_cpu:?} CPU ({full:.1}x)"
        );
        // 1769 / 128 = 13.8x in theory; the machine's other work only adds to both.
        assert!(small > 5.0, "128 MB ran at {small:.1}x its CPU time");
        assert!(small > 2.0 * full, "128 MB {small:.1}x, 1769 MB {full:.1}x");
        // Every group is gone once its process has ended and the group is dropped.
        let parent = quota.dir().to_owned();
        assert_eq!(
            std::fs::read_dir(&parent)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
                .count(),
            0
        );
        drop(quota);
        assert!(!parent.exists());
    }

    #[test]
    fn the_process_is_in_its_group_from_the_start() {
        let Ok(quota) = CpuQuota::new(
            &format!("local-cloud-test-start.{}", std::process::id()),
            DEFAULT_PERIOD,
            "this test",
        ) else {
            println!("skipped: the cgroup cpu controller is not writable");
            return;
        };
        let group = quota.group("cat", 256).expect("a group");
        // The process reads its own membership: it is there before it runs any code of its own.
        let mut command = Command::new("cat");
        command.arg("/proc/self/cgroup");
        group.confine(&mut command);
        let output = command.output().expect("cat runs");
        let text = String::from_utf8_lossy(&output.stdout);
        let relative = group
            .dir()
            .strip_prefix(quota.hierarchy().root())
            .unwrap()
            .display()
            .to_string();
        assert!(
            text.lines()
                .any(|line| line.ends_with(&format!(":/{relative}"))),
            "{relative} not in {text}"
        );
        assert_eq!(
            quota.hierarchy().read_quota(group.dir()),
            Some(Quota::for_memory(256, DEFAULT_PERIOD))
        );
    }
}
