//! sysbench's memory test: one event = one pass over a block, word by word (8-byte loads or
//! stores that the compiler may not merge or vectorise, as sysbench's ck_pr_load/store_64),
//! sequential or at uniformly random word offsets; one block shared by all threads (global)
//! or one per thread (local); each thread does total / block / threads events.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bakeoff_workload::Rng;

use crate::runner::Worker;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Oper {
    Read,
    Write,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Seq,
    Rnd,
}

/// A page-aligned, zeroed block of words, shareable between threads (stores are relaxed
/// atomics: plain 8-byte moves, as racy by design as sysbench's global scope).
pub struct Block {
    ptr: *mut AtomicU64,
    words: usize,
    layout: Layout,
}

// SAFETY: the block is only touched through atomics.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

impl Block {
    pub fn new(bytes: usize) -> Result<Block, String> {
        let layout = Layout::from_size_align(bytes.max(8), 4096).map_err(|e| e.to_string())?;
        // SAFETY: the layout has a nonzero size.
        let ptr = unsafe { alloc_zeroed(layout) } as *mut AtomicU64;
        if ptr.is_null() {
            return Err(format!("could not allocate a {bytes}-byte block"));
        }
        Ok(Block {
            ptr,
            words: bytes / 8,
            layout,
        })
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: ptr points to `words` zero-initialised AtomicU64 (all-zero is a valid
        // AtomicU64) that live as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.words) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr as *mut u8, self.layout) }
    }
}

pub struct Memory {
    pub block: Arc<Block>,
    pub oper: Oper,
    pub access: Access,
    /// Events this thread still may run (None: until the time is up).
    pub left: Option<u64>,
    pub rng: Rng,
}

impl Worker for Memory {
    fn event(&mut self) -> Result<bool, String> {
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return Ok(false);
            }
            *left -= 1;
        }
        let words = self.block.words();
        let n = words.len();
        match (self.access, self.oper) {
            (Access::Seq, Oper::Write) => {
                for (i, w) in words.iter().enumerate() {
                    w.store((n - i) as u64, Ordering::Relaxed);
                }
            }
            (Access::Seq, Oper::Read) => {
                for w in words {
                    // SAFETY: a valid, aligned word of the block; reads race with no writer
                    // (a read test has none). Volatile: every load happens, as ck_pr_load_64.
                    unsafe { std::ptr::read_volatile(w.as_ptr()) };
                }
            }
            (Access::Seq, Oper::None) => {
                for i in 0..n {
                    std::hint::black_box(i);
                }
            }
            (Access::Rnd, oper) => {
                let mut sum = 0u64;
                // The generator's state in registers for the pass (written back after).
                let mut rng = self.rng.clone();
                for i in 0..n {
                    // unit() < 1, so the offset is always inside the block.
                    let at = ((rng.unit() * n as f64) as usize).min(n - 1);
                    match oper {
                        Oper::Write => {
                            words[at].store(i as u64, Ordering::Relaxed);
                        }
                        Oper::Read => {
                            // SAFETY: as for the sequential read.
                            unsafe { std::ptr::read_volatile(words[at].as_ptr()) };
                        }
                        Oper::None => sum ^= at as u64,
                    }
                }
                std::hint::black_box(sum);
                self.rng = rng;
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_pass_stores_every_word_and_the_budget_ends_the_work() {
        let block = Arc::new(Block::new(1024).unwrap());
        let mut m = Memory {
            block: block.clone(),
            oper: Oper::Write,
            access: Access::Seq,
            left: Some(2),
            rng: Rng::seeded(1),
        };
        assert!(m.event().unwrap() && m.event().unwrap());
        assert!(!m.event().unwrap(), "two events, then no more work");
        assert_eq!(block.words().len(), 128);
        assert!(block.words().iter().all(|w| w.load(Ordering::Relaxed) > 0));
        assert_eq!(
            block.ptr as usize % 4096,
            0,
            "page-aligned like sysbench's buffer"
        );
    }
}
