//! The processes on this machine as /proc shows them now, for tests that look for what
//! bakeoff left behind.

/// One process: its pid, state letter (`ps`'s STAT: `S`, `T` stopped, `Z` zombie...), command
/// line (arguments joined by spaces) and working directory.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub state: char,
    pub cmdline: String,
    pub cwd: String,
}

impl Proc {
    /// As a test prints it: pid, state, command line.
    pub fn line(&self) -> String {
        format!("{} {} {}", self.pid, self.state, self.cmdline)
    }
}

/// Every process but zombies (a process killed and not yet reaped is gone for a test's
/// purposes).
pub fn living() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            Some(Proc {
                pid,
                state,
                cmdline: String::from_utf8_lossy(&cmd).replace('\0', " "),
                cwd: cwd.display().to_string(),
            })
        })
        .filter(|p| p.state != 'Z')
        .collect()
}
