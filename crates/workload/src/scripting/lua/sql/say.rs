//! sysbench's logger, for the lines bakeoff prints in its manner (its driver's FATAL and
//! ALERT lines, a run's FATAL lines): one for the whole process, as sysbench's is.

use std::sync::Mutex;

/// The logger's last line, and how often it came again since.
static LAST: Mutex<(String, u32)> = Mutex::new((String::new(), 0));

/// A line of sysbench's logger: a line that repeats the one before (from any thread) is
/// counted, not printed, and the count is said before the next different line ("(last
/// message repeated 2 times)"), as sysbench's logger does.
pub fn log(line: String) {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let (text, repeats) = &mut *last;
    if *text == line {
        *repeats += 1;
        return;
    }
    if *repeats > 0 {
        println!("(last message repeated {repeats} times)");
    }
    println!("{line}");
    *text = line;
    *repeats = 0;
}
