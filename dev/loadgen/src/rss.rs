//! Memory of the process under test, read from `/proc/<pid>/status` (Linux only).
//!
//! `VmHWM` is the peak resident set size since the process started; `VmRSS` is the current
//! one. Read-only: it never signals or otherwise touches the process.

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Memory {
    /// Current resident set, KiB.
    pub rss_kib: u64,
    /// Peak resident set, KiB.
    pub hwm_kib: u64,
}

/// Parses the `VmRSS` and `VmHWM` lines of a `/proc/<pid>/status` text.
pub fn parse_status(status: &str) -> Option<Memory> {
    let field = |name: &str| {
        status.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some(Memory {
        rss_kib: field("VmRSS")?,
        hwm_kib: field("VmHWM")?,
    })
}

pub fn read(pid: u32) -> Result<Memory, Error> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| Error::Proc { pid, why: e.to_string() })?;
    parse_status(&text).ok_or_else(|| Error::Proc {
        pid,
        why: "no VmRSS/VmHWM lines".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        let text = "Name:\ttamebi\nVmPeak:\t  900 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\nThreads:\t4\n";
        assert_eq!(
            parse_status(text),
            Some(Memory {
                rss_kib: 40000,
                hwm_kib: 51234
            })
        );
        assert_eq!(parse_status("Name:\tx\n"), None);
    }

    #[test]
    fn reads_this_process() {
        let m = read(std::process::id()).unwrap();
        assert!(m.rss_kib > 0 && m.hwm_kib >= m.rss_kib);
        assert!(matches!(read(u32::MAX), Err(Error::Proc { .. })));
    }
}
