//! pgbench's check of the open-files limit, made as it reads -c (before it connects or
//! builds a client): its soft limit against the clients plus three, in C's `int` arithmetic
//! (so a count near INT_MAX wraps, as pgbench prints it), never raised.

/// pgbench's refusal of `clients` under this process's soft limit, its hint line included.
pub fn room_for(clients: u32) -> Result<(), String> {
    let (soft, _) =
        bakeoff_engine::files::open_files_limit().map_err(|e| format!("getrlimit failed: {e}"))?;
    // `rlim.rlim_cur < nclients + 3`: the int sum, converted to rlim_t as C converts it.
    let needed = (clients as i32).wrapping_add(3);
    if soft >= needed as i64 as u64 {
        return Ok(());
    }
    Err(format!(
        "need at least {needed} open files, but system limit is {}\npgbench: hint: Reduce number of clients, or use limit/ulimit to increase the system limit.",
        soft as i64
    ))
}
