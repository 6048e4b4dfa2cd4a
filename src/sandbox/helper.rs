//! The helper's side: `arbor __sandbox POLICY PROGRAM ARGS…` leaves arbor's session
//! and terminal, applies the policy to its own (single-threaded) process and `exec`s
//! the program; `arbor __sandbox --detach PROGRAM ARGS…` only leaves the session and
//! terminal; `arbor __sandbox --probe` applies a test policy and prints what worked as
//! JSON.
//!
//! Owns: the new session, the namespace masks, the Landlock ruleset, the seccomp
//! filter and `no_new_privs` (see the parent module's doc for the order and what each
//! covers).
//! Does not own: deciding whether to sandbox (`Sandbox::decide`). Linux only; on other
//! systems the helper refuses to run anything.

use std::ffi::OsString;

use super::error::StepError;
use super::{DETACH_ARG, EXIT_SANDBOX_FAILED, Policy};

/// The helper's entry: `args` are the arguments after `__sandbox`. Returns the exit
/// code when nothing was `exec`ed: [`EXIT_SANDBOX_FAILED`] when the policy could not be
/// applied (a new session included: the caller made the helper a process-group
/// leader) or the arguments are wrong, 127 when the program does not exist, 126 when
/// it cannot be run, 0 after `--probe`. Must run before the process starts a thread
/// (user namespaces need a single-threaded caller).
pub fn helper_main(args: Vec<OsString>) -> i32 {
    let mut args = args.into_iter();
    let Some(first) = args.next() else {
        return fail(
            "usage: arbor __sandbox POLICY-JSON PROGRAM [ARGS…] | --detach PROGRAM [ARGS…] | --probe",
        );
    };
    if first == "--probe" {
        let probe = linux::probe_self();
        println!(
            "{}",
            serde_json::to_string(&probe).unwrap_or_else(|_| "{}".into())
        );
        return 0;
    }
    if first == DETACH_ARG {
        let Some(program) = args.next() else {
            return fail("no program to run");
        };
        if let Err(e) = new_session() {
            return fail(&e.to_string());
        }
        // Without CAP_SYS_ADMIN the kernel refuses `TIOCSTI`/`TIOCLINUX` on a terminal
        // that is not the caller's controlling one, and it now has none; with it (root)
        // the kernel allows them on any terminal: filter them. The filter sets
        // `no_new_privs`, which costs a process that is already privileged nothing.
        if has_sys_admin()
            && let Err(e) = linux::seccomp(true)
        {
            return fail(&e.to_string());
        }
        return exec(program, args.collect());
    }
    let policy: Policy = match first.to_str().map(serde_json::from_str) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return fail(&format!("bad policy: {e}")),
        None => return fail("bad policy: not UTF-8"),
    };
    let Some(program) = args.next() else {
        return fail("no program to run");
    };
    if let Err(e) = new_session() {
        return fail(&e.to_string());
    }
    if let Err(e) = linux::apply(&policy) {
        return fail(&e.to_string());
    }
    exec(program, args.collect())
}

/// Makes this process the leader of a new session and process group (group id = its
/// pid) with no controlling terminal, so nothing it runs can reach arbor's terminal.
#[cfg(unix)]
fn new_session() -> Result<(), StepError> {
    nix::unistd::setsid().map(drop).map_err(|e| {
        StepError(format!("cannot leave arbor's terminal (setsid: {e}; the caller must not make the helper a process-group leader)"))
    })
}

#[cfg(not(unix))]
fn new_session() -> Result<(), StepError> {
    Err("the sandbox runs on Linux only".into())
}

/// Whether this process holds CAP_SYS_ADMIN (bit 21 of `CapEff` in
/// `/proc/self/status`); when that cannot be read, whether it runs as root.
fn has_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let effective = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        });
    match effective {
        Some(caps) => caps & (1 << CAP_SYS_ADMIN) != 0,
        #[cfg(unix)]
        None => nix::unistd::geteuid().is_root(),
        #[cfg(not(unix))]
        None => false,
    }
}

fn fail(message: &str) -> i32 {
    eprintln!("arbor sandbox: {message}");
    EXIT_SANDBOX_FAILED
}

/// Replaces this process with `program args`; returns only on failure.
#[cfg(unix)]
fn exec(program: OsString, args: Vec<OsString>) -> i32 {
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(&program).args(args).exec();
    eprintln!(
        "arbor sandbox: cannot run {}: {error}",
        program.to_string_lossy()
    );
    if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

#[cfg(not(unix))]
fn exec(_program: OsString, _args: Vec<OsString>) -> i32 {
    fail("the sandbox runs on Linux only")
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::libc;
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::super::Policy;
    use super::super::error::StepError;
    use super::super::probe::Probe;

    /// Devices every sandboxed command may write (and use ioctls on). Not `/dev/tty`:
    /// the command has no controlling terminal (it runs in a session of its own), so
    /// nothing it runs needs it. `/dev/ptmx` and `/dev/pts` stay, for commands that
    /// make a pseudo-terminal of their own (`script`, `expect`).
    const WRITABLE_DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/ptmx",
        "/dev/pts",
    ];

    /// Applies `policy` to this process (see the parent module's doc).
    pub(super) fn apply(policy: &Policy) -> Result<(), StepError> {
        // Step 1: the masks, when user namespaces work (else the deny list stays
        // readable; the parent's probe already said so).
        if namespaces().is_ok() {
            mask(&policy.deny_read)?;
            guard_git(&policy.pinned, &policy.read_only)?;
        }
        nix::sys::prctl::set_no_new_privs()
            .map_err(|e| StepError(format!("cannot set no_new_privs: {e}")))?;
        landlock(policy)?;
        seccomp(policy.network)
    }

    /// Enters a new user and mount namespace, mapping this process's uid and gid to
    /// themselves, with every mount private (nothing propagates out).
    fn namespaces() -> Result<(), StepError> {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| StepError(format!("unshare(user, mount): {e}")))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| StepError(format!("cannot write {file}: {e}")))
        };
        write("/proc/self/setgroups", "deny".into())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(|e| StepError(format!("cannot make the mounts private: {e}")))
    }

    /// Hides each existing path of `deny`: an empty read-only tmpfs over a directory,
    /// `/dev/null` over a file.
    fn mask(deny: &[std::path::PathBuf]) -> Result<(), StepError> {
        for path in deny {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            let result = if meta.is_dir() {
                mount(
                    Some("tmpfs"),
                    path,
                    Some("tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some("size=4k,mode=0755"),
                )
            } else {
                mount(
                    Some("/dev/null"),
                    path,
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )
            };
            result.map_err(|e| StepError(format!("cannot hide {}: {e}", path.display())))?;
        }
        Ok(())
    }

    /// The git guard (`git_guard`): each of `pinned` bound onto itself (a mount point
    /// cannot be renamed or removed), then each of `read_only` bound onto itself and
    /// remounted read-only, keeping the flags the kernel locks on the mount it came
    /// from (`nosuid`, `nodev`, `noexec`: a user namespace may not clear them).
    fn guard_git(
        pinned: &[std::path::PathBuf],
        read_only: &[std::path::PathBuf],
    ) -> Result<(), StepError> {
        let bind = |path: &std::path::Path| {
            mount(
                Some(path),
                path,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .map_err(|e| StepError(format!("cannot guard {}: {e}", path.display())))
        };
        for path in pinned {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                bind(path)?;
            }
        }
        for path in read_only {
            match std::fs::symlink_metadata(path) {
                Ok(m) if !m.is_symlink() => {}
                _ => continue,
            }
            bind(path)?;
            let locked = nix::sys::statvfs::statvfs(path)
                .map(|s| s.flags())
                .map_err(|e| StepError(format!("cannot guard {}: {e}", path.display())))?;
            let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
            use nix::sys::statvfs::FsFlags;
            for (has, keep) in [
                (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
                (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
                (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
                (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
                (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
                (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
            ] {
                if locked.contains(has) {
                    flags |= keep;
                }
            }
            mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
                .map_err(|e| StepError(format!("cannot guard {}: {e}", path.display())))?;
        }
        Ok(())
    }

    /// Restricts this process with Landlock: read and execute everywhere, write
    /// beneath `policy.writable` and [`WRITABLE_DEVICES`], no TCP without the network,
    /// no signals or abstract sockets outside. Returns the kernel's Landlock ABI.
    fn landlock(policy: &Policy) -> Result<i32, StepError> {
        let error = |e: landlock::RulesetError| StepError(format!("Landlock: {e}"));
        let all = AccessFs::from_all(ABI::V5);
        let mut scopes = landlock::BitFlags::<Scope>::from(Scope::Signal);
        if !policy.network {
            scopes |= Scope::AbstractUnixSocket;
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(error)?
            .scope(scopes)
            .map_err(error)?;
        if !policy.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(error)?;
        }
        let status = ruleset
            .create()
            .map_err(error)?
            .add_rules(landlock::path_beneath_rules(
                ["/"],
                AccessFs::from_read(ABI::V5),
            ))
            .map_err(error)?
            .add_rules(landlock::path_beneath_rules(WRITABLE_DEVICES, all))
            .map_err(error)?
            .add_rules(landlock::path_beneath_rules(&policy.writable, all))
            .map_err(error)?
            .no_new_privs(true)
            .restrict_self()
            .map_err(error)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(StepError::from("Landlock is not enabled in this kernel"));
        }
        Ok(match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => kernel_abi.unwrap_or(effective_abi as i32),
            _ => 0,
        })
    }

    /// The `ioctl` requests that put bytes into a terminal's input or act on the
    /// console: `TIOCSTI` (type a byte), `TIOCLINUX` (the console's selection paste,
    /// among others). Compared on the low 32 bits, as the kernel reads them.
    #[allow(clippy::unnecessary_cast)] // `Ioctl` is `c_ulong` on glibc, `c_int` on musl.
    const DENIED_IOCTLS: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

    /// Installs the seccomp filter: [`DENIED_IOCTLS`] always, and without `network`
    /// `socket`/`socketpair` of any family but `AF_UNIX` and `io_uring_setup`, fail
    /// with `EPERM`.
    pub(super) fn seccomp(network: bool) -> Result<(), StepError> {
        let error = |e: seccompiler::BackendError| StepError(format!("seccomp: {e}"));
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|e| StepError(format!("seccomp: {e}")))?;
        let not_unix = || {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .and_then(|c| SeccompRule::new(vec![c]))
        };
        let ioctl = |request: u64| {
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        /// What a system call's rules match on.
        #[derive(Clone, Copy)]
        enum On {
            /// Every call.
            All,
            /// A socket family other than `AF_UNIX`.
            NotUnix,
            /// A [`DENIED_IOCTLS`] request.
            Ioctl,
        }
        let mut numbers = vec![(libc::SYS_ioctl, On::Ioctl)];
        if !network {
            numbers.extend([
                (libc::SYS_socket, On::NotUnix),
                (libc::SYS_socketpair, On::NotUnix),
                (libc::SYS_io_uring_setup, On::All),
            ]);
        }
        // x32 system calls reach the same entry points with this bit set; x32's own
        // `ioctl` is number 514.
        if cfg!(target_arch = "x86_64") {
            let x32: Vec<_> = numbers.iter().map(|&(n, c)| (n | 0x4000_0000, c)).collect();
            numbers.extend(x32);
            numbers.push((514 | 0x4000_0000, On::Ioctl));
        }
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for (number, on) in numbers {
            let rule = match on {
                On::All => Vec::new(),
                On::NotUnix => vec![not_unix().map_err(error)?],
                On::Ioctl => DENIED_IOCTLS
                    .iter()
                    .map(|&r| ioctl(r))
                    .collect::<Result<_, _>>()
                    .map_err(error)?,
            };
            rules.insert(number, rule);
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(error)?;
        let program: seccompiler::BpfProgram = filter.try_into().map_err(error)?;
        seccompiler::apply_filter(&program).map_err(|e| StepError(format!("seccomp: {e}")))
    }

    /// Tries every step on this process with a test policy (nothing writable, no
    /// network, a temp directory as the path to hide) and reports each.
    pub(super) fn probe_self() -> Probe {
        let mut probe = Probe::default();
        let hidden = tempfile::tempdir();
        probe.userns = namespaces().and_then(|()| {
            let dir = hidden
                .as_ref()
                .map_err(|e| StepError(format!("no temp dir: {e}")))?;
            mask(&[dir.path().to_path_buf()])?;
            nix::mount::umount(dir.path()).map_err(|e| StepError(format!("umount: {e}")))
        });
        drop(hidden);
        probe.no_new_privs = nix::sys::prctl::set_no_new_privs()
            .map_err(|e| StepError(format!("cannot set no_new_privs: {e}")));
        let policy = Policy::default();
        match landlock(&policy) {
            Ok(abi) => {
                probe.landlock_abi = Some(abi);
                probe.landlock = Ok(());
            }
            Err(e) => probe.landlock = Err(e),
        }
        probe.seccomp = seccomp(false);
        probe.probed = true;
        probe
    }
}

#[cfg(not(target_os = "linux"))]
mod linux {
    use super::super::Policy;
    use super::super::error::StepError;
    use super::super::probe::Probe;

    pub(super) fn apply(_: &Policy) -> Result<(), StepError> {
        Err(StepError::from("the sandbox runs on Linux only"))
    }

    pub(super) fn seccomp(_network: bool) -> Result<(), StepError> {
        Err(StepError::from("the sandbox runs on Linux only"))
    }

    pub(super) fn probe_self() -> Probe {
        let why = || Err(StepError::from("the sandbox runs on Linux only"));
        Probe {
            probed: true,
            landlock_abi: None,
            landlock: why(),
            userns: why(),
            seccomp: why(),
            no_new_privs: why(),
        }
    }
}
