//! Scheduling policy of the client threads.

/// Put the calling thread under SCHED_BATCH (Linux). CFS then does not let its wakeups preempt
/// the running thread: on a machine shared with the server, the server keeps its CPU until its
/// time slice ends instead of being interrupted by every response it sends. Unprivileged
/// threads may choose it. Returns whether it took effect.
pub fn batch_this_thread() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param for SCHED_BATCH.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) == 0 }
}
