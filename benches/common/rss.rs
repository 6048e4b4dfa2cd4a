//! Memory figures of a process from `/proc/<pid>/status` (Linux): its resident set now
//! (`VmRSS`) and the high-water mark of it (`VmHWM`, the exact peak — sampling can miss
//! a short spike), which `reset_peak` restarts from the current RSS
//! (`/proc/<pid>/clear_refs`, Linux ≥ 4.0). All in KiB; `None` without procfs.
//!
//! Owns: reading those figures and printing them. Does not own: what is measured.
#![allow(dead_code)]

/// Field `field` (`VmRSS`, `VmHWM`) of `/proc/<pid>/status` (`pid` may be `self`).
fn status_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Resident set size of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(&pid.to_string(), "VmRSS")
}

/// Peak resident set size of process `pid` since it started or since
/// [`reset_peak`], in KiB.
pub fn peak_kib(pid: u32) -> Option<u64> {
    status_kib(&pid.to_string(), "VmHWM")
}

/// Peak resident set size of this process, in KiB.
pub fn own_peak_kib() -> Option<u64> {
    status_kib("self", "VmHWM")
}

/// Restarts `pid`'s peak from its current RSS; whether that worked.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// `kib` as `12.3 MiB`, or `n/a`.
pub fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}
