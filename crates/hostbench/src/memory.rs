//! sysbench's memory test: one event = one pass over a block, word by word (8-byte loads or
//! stores emitted one instruction each, as sysbench's ck_pr_load/store_64 emit them),
//! sequential or at uniformly random word offsets; one block shared by all threads (global)
//! or one per thread (local); each thread does total / block / threads events.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::AtomicU64;
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

/// A page-aligned, zeroed block of words, shareable between threads (every access is one
/// 8-byte move, as racy by design as sysbench's global scope).
pub struct Block {
    ptr: *mut AtomicU64,
    words: usize,
    layout: Layout,
}

// SAFETY: the block is only touched through whole-word accesses (atomics, volatile or one
// mov each), which tear nothing on the 64-bit targets bakeoff builds for.
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

/// One 8-byte store, emitted as one instruction and never merged or vectorised, like
/// ConcurrencyKit's ck_pr_store_64 in sysbench.
#[inline(always)]
fn store_word(w: &AtomicU64, v: u64) {
    // SAFETY: a valid, aligned word of the block; racing stores of the global scope are
    // sysbench's design, and volatile word stores tear nothing on 64-bit targets.
    unsafe { std::ptr::write_volatile(w.as_ptr(), v) }
}

/// The sequential write's store of "words left to the block's end" into word `w`, computed
/// from the pointers as sysbench's `SIZE_T_STORE(buf, end - buf)` is, in the instructions
/// gcc emits for it (mov, sub, sar, store). The same value from a loop counter costs two
/// instructions a word instead of four, and a 1 MiB write pass measured 1.2x sysbench's.
#[inline(always)]
fn store_words_left(w: &AtomicU64, end: *const AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: w is a valid, aligned word of the block; the asm writes only it.
    unsafe {
        std::arch::asm!(
            "mov {t}, {end}",
            "sub {t}, {p}",
            "sar {t}, 3",
            "mov qword ptr [{p}], {t}",
            p = in(reg) w.as_ptr(),
            end = in(reg) end,
            t = out(reg) _,
            options(nostack)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    store_word(w, (end as usize - w.as_ptr() as usize) as u64 / 8);
}

/// One 8-byte load, emitted as is (ck_pr_load_64).
#[inline(always)]
fn load_word(w: &AtomicU64) {
    // SAFETY: as for store_word.
    unsafe { std::ptr::read_volatile(w.as_ptr()) };
}

/// A sequential pass eight words per loop turn, as the Debian sysbench binary's passes are
/// compiled (gcc unrolls them 8x): the loop's own overhead per word is then the same, and a
/// figure measured on a block in cache agrees with sysbench's. Without the unrolling a 1 MiB
/// read pass measured 0.38x sysbench's; with LLVM's own choices a write pass measured 1.2x.
#[inline(always)]
fn pass(words: &[AtomicU64], mut each: impl FnMut(&AtomicU64)) {
    let chunks = words.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        each(&c[0]);
        each(&c[1]);
        each(&c[2]);
        each(&c[3]);
        each(&c[4]);
        each(&c[5]);
        each(&c[6]);
        each(&c[7]);
    }
    tail.iter().for_each(each);
}

/// n uniformly random word offsets in [0, n), as sysbench's `(size_t)(sb_rand_uniform_double()
/// * n)`, with the loop doing per word what the Debian sysbench binary's loop does (perf
/// annotate on it): the generator's state read from memory and written back, the block size
/// read and converted again, the buffer pointer read again. A loop-carried state in registers
/// is several cycles a word faster: with it, random passes measured 1.04x-1.09x sysbench's
/// side by side (pinned, 9 pairs); mirrored, 1.01x and 0.94x-0.97x in two runs.
#[inline(always)]
fn random_offsets(n: usize, rng: &mut Rng, mut each: impl FnMut(usize, usize)) {
    for i in 0..n {
        let scale = std::hint::black_box(n) as i64 as f64;
        // SAFETY: unit() is in [0, 1) and n < 2^53, so the product is finite, non-negative
        // and below n: representable, no saturation needed (Rust's checked cast costs three
        // more instructions a word than sysbench's plain conversion).
        let at: usize = unsafe { (rng.unit_via_memory() * scale).to_int_unchecked() };
        debug_assert!(at < n, "offset {at} outside a block of {n} words");
        each(i, at);
    }
}

/// One access at each of `words.len()` random offsets.
#[inline(always)]
fn random_pass(words: &[AtomicU64], rng: &mut Rng, mut each: impl FnMut(usize, &AtomicU64)) {
    random_offsets(words.len(), rng, |i, at| {
        let base = std::hint::black_box(words.as_ptr());
        // SAFETY: random_offsets gives offsets below words.len(); base is words' start.
        each(i, unsafe { &*base.add(at) })
    });
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
                let end = words.as_ptr_range().end;
                pass(words, |w| store_words_left(w, end));
            }
            (Access::Seq, Oper::Read) => {
                pass(words, load_word);
            }
            (Access::Seq, Oper::None) => {
                for i in 0..n {
                    std::hint::black_box(i);
                }
            }
            (Access::Rnd, oper) => {
                let rng = &mut self.rng;
                match oper {
                    Oper::Write => random_pass(words, rng, |i, w| store_word(w, i as u64)),
                    Oper::Read => random_pass(words, rng, |_, w| load_word(w)),
                    Oper::None => {
                        let mut sum = 0usize;
                        random_offsets(n, rng, |_, at| sum ^= at);
                        std::hint::black_box(sum);
                    }
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

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

    #[test]
    fn random_passes_touch_words_across_the_whole_block_and_only_it() {
        let block = Arc::new(Block::new(64 * 8).unwrap());
        let mut m = Memory {
            block: block.clone(),
            oper: Oper::Write,
            access: Access::Rnd,
            left: None,
            rng: Rng::seeded(7),
        };
        for _ in 0..200 {
            m.event().unwrap(); // offsets are checked against the block in debug builds
        }
        let words = block.words();
        assert!(
            words[0].load(Ordering::Relaxed) > 0 && words[63].load(Ordering::Relaxed) > 0,
            "both ends written"
        );
        let written = words
            .iter()
            .filter(|w| w.load(Ordering::Relaxed) > 0)
            .count();
        assert!(written >= 60, "{written} of 64 words written");
        m.oper = Oper::Read;
        assert!(m.event().unwrap());
    }
}
