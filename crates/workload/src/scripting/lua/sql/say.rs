//! The SQL layer's lines in sysbench's logger's manner (its driver's FATAL and ALERT lines).

use std::cell::RefCell;

thread_local! {
    /// The SQL layer's last line on this thread, and how often it came again since.
    static LAST: RefCell<(String, u32)> = const { RefCell::new((String::new(), 0)) };
}

/// A line of sysbench's logger from the SQL layer (its FATAL and ALERT lines): a line that
/// repeats the one before is counted, not printed, and the count is said before the next
/// different line ("(last message repeated 2 times)"), as sysbench's logger does.
pub(super) fn log(line: String) {
    LAST.with_borrow_mut(|(last, repeats)| {
        if *last == line {
            *repeats += 1;
            return;
        }
        if *repeats > 0 {
            println!("(last message repeated {repeats} times)");
        }
        println!("{line}");
        *last = line;
        *repeats = 0;
    });
}
