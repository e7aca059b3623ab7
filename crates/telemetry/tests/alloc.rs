//! What a window without classes costs, counted by an allocator that tallies this thread's
//! allocations: a sysbench run (no event has a class) must not pay for classes, neither when
//! a window is made nor on the per-event and per-tick paths.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bakeoff_telemetry::{SbHistogram, Window};
use hdrhistogram::Histogram;

struct Counting;

thread_local! {
    /// (allocations, bytes) on this thread: the test harness's other threads do not count.
    static ALLOCATED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

// SAFETY: every call is passed on to the system allocator unchanged; the tally is a
// thread-local Cell with a const initialiser, which neither allocates nor needs a destructor.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| {
            let (n, b) = a.get();
            a.set((n + 1, b + layout.size() as u64));
        });
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// (allocations, bytes) that `f` made on this thread.
fn allocated<T>(f: impl FnOnce() -> T) -> ((u64, u64), T) {
    let (n0, b0) = ALLOCATED.with(Cell::get);
    let out = f();
    let (n1, b1) = ALLOCATED.with(Cell::get);
    ((n1 - n0, b1 - b0), out)
}

#[test]
fn a_window_costs_its_two_histograms_and_nothing_for_classes() {
    let (histograms, _) = allocated(|| {
        (
            Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap(),
            SbHistogram::default(),
        )
    });
    let (window, _) = allocated(Window::default);
    assert_eq!(window, histograms);
}

#[test]
fn events_without_classes_allocate_nothing_recorded_merged_reset_or_summarised() {
    let mut tick = Window::default();
    let mut total = Window::default();
    let (cost, _) = allocated(|| {
        for i in 1..=10_000u64 {
            tick.record_event(i * 1_000);
            tick.record_statements(1, 1, 0);
        }
        total.add(&tick);
        tick.reset();
        total.summary(1.0, 95.0)
    });
    assert_eq!(cost, (0, 0));
}
