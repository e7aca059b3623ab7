//! sysbench's fileio test: block I/O over a set of files (16 KiB blocks, like InnoDB pages),
//! sequential or random, with periodic fsyncs.
//!
//! Safety: the files live in a directory this module creates and marks; it refuses a
//! directory it did not create, and cleanup removes only its own `test_file.N` files and marker.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bakeoff_workload::Rng;

use crate::runner::Worker;

const MARKER: &str = ".bakeoff-fileio";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Seqwr,
    Seqrewr,
    Seqrd,
    Rndrd,
    Rndwr,
    Rndrw,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "seqwr" => Mode::Seqwr,
            "seqrewr" => Mode::Seqrewr,
            "seqrd" => Mode::Seqrd,
            "rndrd" => Mode::Rndrd,
            "rndwr" => Mode::Rndwr,
            "rndrw" => Mode::Rndrw,
            _ => return None,
        })
    }

    fn sequential(self) -> bool {
        matches!(self, Mode::Seqwr | Mode::Seqrewr | Mode::Seqrd)
    }

    fn writes(self) -> bool {
        !matches!(self, Mode::Seqrd | Mode::Rndrd)
    }

    /// sysbench's "Doing ... test" line.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Seqwr => "sequential write (creation) test",
            Mode::Seqrewr => "sequential rewrite test",
            Mode::Seqrd => "sequential read test",
            Mode::Rndrd => "random read test",
            Mode::Rndwr => "random write test",
            Mode::Rndrw => "random r/w test",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileioSpec {
    pub dir: PathBuf,
    pub num: u32,
    pub block: u64,
    pub total: u64,
    pub mode: Mode,
    pub sync: bool,
    pub dsync: bool,
    pub direct: bool,
    /// Every N requests, fsync every file (0: never).
    pub fsync_freq: u64,
    pub fsync_all: bool,
    pub fsync_end: bool,
    pub fdatasync: bool,
    pub rw_ratio: f64,
    /// sysbench's --validate: blocks carry a checksum and their offset (written by prepare and
    /// by the test's writes), checked on every read.
    pub validate: bool,
    /// bakeoff's layout: `dir` is a directory bakeoff made and marked, which cleanup removes.
    /// Off: sysbench's, `test_file.N` right in `dir` (the working directory), which sysbench's
    /// and bakeoff's prepare and cleanup share; cleanup then removes those files only.
    pub marked: bool,
}

impl FileioSpec {
    /// sysbench's defaults for everything but where, how many files, how big, and the mode.
    pub fn new(dir: PathBuf, num: u32, total: u64, mode: Mode) -> FileioSpec {
        FileioSpec {
            dir,
            num,
            block: 16384,
            total,
            mode,
            sync: false,
            dsync: false,
            direct: false,
            fsync_freq: 100,
            fsync_all: false,
            fsync_end: true,
            fdatasync: false,
            rw_ratio: 1.5,
            validate: false,
            marked: true,
        }
    }

    pub fn file_size(&self) -> u64 {
        self.total / u64::from(self.num.max(1))
    }

    fn path(&self, i: u32) -> PathBuf {
        self.dir.join(format!("test_file.{i}"))
    }
}

/// Create (or reuse) the marked directory; refuse one bakeoff did not create, and one that
/// is not this user's own (a directory another user prepared and marked could hold links to
/// files of this user's, root's included).
fn own_dir(dir: &Path, create: bool) -> Result<(), String> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => {
            let marker = fs::symlink_metadata(dir.join(MARKER));
            let marked = marker.as_ref().is_ok_and(|m| m.is_file() && owned(m));
            if meta.is_dir() && owned(&meta) && marked {
                return Ok(());
            }
            Err(format!(
                "{} exists and bakeoff did not create it for this user (a directory of this user's own holding its own {MARKER}); give --file-dir a new directory",
                dir.display()
            ))
        }
        Err(_) if !create => Err(format!(
            "{} does not exist: run `bakeoff host fileio prepare` first",
            dir.display()
        )),
        Err(_) => {
            use std::io::Write;
            use std::os::unix::fs::DirBuilderExt;
            // Made here, exclusively and 0700: nobody else can have put anything in it.
            fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(dir.join(MARKER))
                .map_err(|e| format!("marking {}: {e}", dir.display()))?;
            f.write_all(b"files of bakeoff host fileio\n")
                .map_err(|e| format!("marking {}: {e}", dir.display()))
        }
    }
}

/// Owned by the user this process runs as.
fn owned(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    meta.uid() == unsafe { libc::geteuid() }
}

/// What prepare does with one file, as sysbench says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    Creating,
    /// There, but shorter than the test needs.
    Extending,
    /// There already at full size: nothing to write.
    Reusing,
}

/// Write the files block by block and fsync each; returns (bytes, seconds).
pub fn prepare(
    spec: &FileioSpec,
    mut on_file: impl FnMut(&Path, FileState),
) -> Result<(u64, f64), String> {
    if spec.marked {
        own_dir(&spec.dir, true)?;
    }
    let size = spec.file_size();
    let mut block = vec![0u8; spec.block as usize];
    let mut rng = Rng::seeded(0x5eed);
    let started = Instant::now();
    let mut written = 0u64;
    for i in 0..spec.num {
        let path = spec.path(i);
        let state = match fs::symlink_metadata(&path).map(|m| m.len()) {
            Err(_) => FileState::Creating,
            Ok(len) if len < size => FileState::Extending,
            Ok(_) => FileState::Reusing,
        };
        on_file(&path, state);
        // Never through a link: a test_file.N pointing elsewhere would be overwritten.
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut pos = f.metadata().map(|m| m.len()).unwrap_or(0) / spec.block * spec.block;
        while pos < size {
            let n = spec.block.min(size - pos) as usize;
            if spec.validate {
                crate::checksum::seal(&mut block[..n], pos, &mut rng);
            }
            f.write_all_at(&block[..n], pos)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            pos += n as u64;
            written += n as u64;
        }
        f.set_len(size)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        f.sync_all()
            .map_err(|e| format!("fsync {}: {e}", path.display()))?;
    }
    Ok((written, started.elapsed().as_secs_f64()))
}

/// Remove this test's files and marker; returns how many files went. Anything else in the
/// directory stays, and so does the directory then.
pub fn cleanup(spec: &FileioSpec) -> Result<u32, String> {
    if !spec.marked {
        return Ok(remove_numbered(spec));
    }
    own_dir(&spec.dir, false)?;
    let mut removed = 0;
    for entry in fs::read_dir(&spec.dir)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_prefix("test_file."))
            .is_some_and(|n| n.parse::<u32>().is_ok());
        if ours && entry.file_type().is_ok_and(|t| t.is_file()) {
            fs::remove_file(entry.path()).map_err(|e| e.to_string())?;
            removed += 1;
        }
    }
    let _ = fs::remove_file(spec.dir.join(MARKER));
    let _ = fs::remove_dir(&spec.dir); // only if empty: whatever else is there is not ours
    Ok(removed)
}

/// sysbench's cleanup: `test_file.0` .. `test_file.{num-1}` in the directory, nothing else.
fn remove_numbered(spec: &FileioSpec) -> u32 {
    (0..spec.num)
        .filter(|&i| fs::remove_file(spec.path(i)).is_ok())
        .count() as u32
}

/// Operations done, for the report.
#[derive(Debug, Default)]
pub struct Counters {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub fsyncs: AtomicU64,
}

enum Req {
    Read(u32, u64),
    Write(u32, u64),
    Fsync(u32),
}

/// The request stream all threads draw from (sysbench's is global too).
struct Gen {
    file: u32,
    pos: u64,
    requests: u64,
    wrote: bool,
    fsyncs_due: u32,
    reads: u64,
    writes: u64,
    rng: Rng,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            file: 0,
            pos: 0,
            requests: 0,
            wrote: false,
            fsyncs_due: 0,
            reads: 0,
            writes: 0,
            rng: Rng::seeded(seed),
        }
    }

    fn next(&mut self, s: &FileioSpec) -> Req {
        if self.fsyncs_due > 0 {
            self.fsyncs_due -= 1;
            return Req::Fsync(s.num - 1 - self.fsyncs_due);
        }
        let size = s.file_size();
        let (file, pos) = if s.mode.sequential() {
            let at = (self.file, self.pos);
            // The last request of a file is what is left of it (see `Fileio::event`).
            self.pos += s.block;
            if self.pos >= size {
                self.pos = 0;
                self.file = (self.file + 1) % s.num;
            }
            at
        } else {
            // Whole blocks only, so a block size that does not divide the file size (sysbench's
            // GH-198) never reads past a file's end.
            let per_file = (size / s.block).max(1);
            let blocks = per_file * u64::from(s.num);
            let b = ((self.rng.unit() * blocks as f64) as u64).min(blocks - 1);
            (
                ((b / per_file) as u32).min(s.num - 1),
                b % per_file * s.block,
            )
        };
        let write = match s.mode {
            Mode::Seqrd | Mode::Rndrd => false,
            Mode::Rndrw => (self.reads + 1) as f64 / (self.writes + 1) as f64 >= s.rw_ratio,
            _ => true,
        };
        if write {
            self.writes += 1;
            self.wrote = true;
        } else {
            self.reads += 1;
        }
        self.requests += 1;
        if s.fsync_freq > 0 && !s.fsync_all && self.wrote && self.requests % s.fsync_freq == 0 {
            self.fsyncs_due = s.num;
        }
        if write {
            Req::Write(file, pos)
        } else {
            Req::Read(file, pos)
        }
    }
}

/// A block buffer aligned for O_DIRECT.
struct Buf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: owned by one worker at a time.
unsafe impl Send for Buf {}

impl Buf {
    fn new(size: usize) -> Result<Buf, String> {
        let layout =
            std::alloc::Layout::from_size_align(size.max(512), 4096).map_err(|e| e.to_string())?;
        // SAFETY: nonzero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err("out of memory for the I/O buffer".into());
        }
        Ok(Buf { ptr, layout })
    }

    fn slice(&mut self, n: usize) -> &mut [u8] {
        // SAFETY: ptr holds layout.size() >= n initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, n.min(self.layout.size())) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

pub struct Fileio {
    spec: Arc<FileioSpec>,
    files: Arc<Vec<File>>,
    gen: Arc<Mutex<Gen>>,
    counters: Arc<Counters>,
    buf: Buf,
    /// What a validated write fills its block with.
    rng: Rng,
}

/// One worker per thread over the prepared files (checked for their size), and the counters
/// they share.
pub fn workers(
    spec: &FileioSpec,
    threads: u32,
    seed: u64,
) -> Result<(Vec<Box<dyn Worker>>, Arc<Counters>), String> {
    if spec.marked {
        own_dir(&spec.dir, false)?;
    }
    let mut flags = libc::O_NOFOLLOW;
    if spec.sync {
        flags |= libc::O_SYNC;
    }
    if spec.dsync {
        flags |= libc::O_DSYNC;
    }
    if spec.direct {
        flags |= libc::O_DIRECT;
    }
    let mut files = Vec::new();
    for i in 0..spec.num {
        let path = spec.path(i);
        let f = OpenOptions::new()
            .read(true)
            .write(spec.mode.writes())
            .custom_flags(flags)
            .open(&path)
            .map_err(|e| format!("{}: {e}; run `bakeoff host fileio prepare` with the same --file-num and --file-total-size", path.display()))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        // A sequential write (re)creates the files as it goes; every other mode needs them whole.
        if len < spec.file_size() && spec.mode != Mode::Seqwr {
            return Err(format!(
                "{} has {len} bytes, the test needs {}: prepare again with the same --file-total-size and --file-num",
                path.display(),
                spec.file_size()
            ));
        }
        files.push(f);
    }
    let shared = Arc::new(spec.clone());
    let files = Arc::new(files);
    let gen = Arc::new(Mutex::new(Gen::new(seed)));
    let counters = Arc::new(Counters::default());
    let workers = (0..threads)
        .map(|i| {
            Ok(Box::new(Fileio {
                spec: shared.clone(),
                files: files.clone(),
                gen: gen.clone(),
                counters: counters.clone(),
                buf: Buf::new(spec.block as usize)?,
                rng: Rng::seeded(seed ^ 0x9e37_79b9 ^ u64::from(i)),
            }) as Box<dyn Worker>)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((workers, counters))
}

impl Fileio {
    fn fsync(&self, file: u32) -> Result<(), String> {
        let f = &self.files[file as usize];
        let r = if self.spec.fdatasync {
            f.sync_data()
        } else {
            f.sync_all()
        };
        r.map_err(|e| format!("fsync of test_file.{file}: {e}"))?;
        self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Worker for Fileio {
    fn event(&mut self) -> Result<bool, String> {
        let req = match self.gen.lock() {
            Ok(mut g) => g.next(&self.spec),
            Err(_) => return Err("request generator poisoned".into()),
        };
        // The block, or what is left of the file when the block size does not divide it
        // (sysbench's GH-198: a request never runs past a file's end).
        let len = |pos: u64| {
            self.spec
                .block
                .min(self.spec.file_size().saturating_sub(pos)) as usize
        };
        match req {
            Req::Read(file, pos) => {
                let n = len(pos);
                let got = self.files[file as usize]
                    .read_at(self.buf.slice(n), pos)
                    .map_err(|e| format!("reading test_file.{file} at {pos}: {e}"))?;
                if got < n {
                    return Err(format!(
                        "short read of test_file.{file} at {pos}: {got} of {n} bytes"
                    ));
                }
                if self.spec.validate {
                    crate::checksum::verify(self.buf.slice(n), pos, file)?;
                }
                self.counters.reads.fetch_add(1, Ordering::Relaxed);
            }
            Req::Write(file, pos) => {
                let n = len(pos);
                if self.spec.validate {
                    crate::checksum::seal(self.buf.slice(n), pos, &mut self.rng);
                }
                self.files[file as usize]
                    .write_all_at(self.buf.slice(n), pos)
                    .map_err(|e| format!("writing test_file.{file} at {pos}: {e}"))?;
                self.counters.writes.fetch_add(1, Ordering::Relaxed);
                if self.spec.fsync_all {
                    self.fsync(file)?;
                }
            }
            Req::Fsync(file) => self.fsync(file)?,
        }
        Ok(true)
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.spec.fsync_end && !self.spec.fsync_all && self.spec.mode.writes() {
            for i in 0..self.spec.num {
                self.fsync(i)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, mode: Mode) -> FileioSpec {
        FileioSpec::new(dir.to_path_buf(), 4, 4 * 16384 * 8, mode)
    }

    #[test]
    fn rndrw_interleaves_three_reads_to_two_writes_and_fsyncs_every_file_each_100_requests() {
        let s = spec(Path::new("/nonexistent"), Mode::Rndrw);
        let mut g = Gen::new(1);
        let (mut r, mut w, mut f) = (0, 0, 0);
        for _ in 0..(100 + 4) * 5 {
            match g.next(&s) {
                Req::Read(file, pos) => {
                    assert!(file < 4 && pos % 16384 == 0 && pos < s.file_size());
                    r += 1
                }
                Req::Write(..) => w += 1,
                Req::Fsync(_) => f += 1,
            }
        }
        assert_eq!(
            (r, w, f),
            (300, 200, 20),
            "3:2 at ratio 1.5; 4 fsyncs per 100 requests"
        );
    }

    #[test]
    fn a_directory_not_created_by_bakeoff_is_refused_and_cleanup_keeps_foreign_files() {
        let base = std::env::temp_dir().join(format!("bakeoff-fileio-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        let e = prepare(&spec(&base, Mode::Rndrw), |_, _| {}).unwrap_err();
        assert!(e.contains("did not create"), "{e}");
        let dir = base.join("probe");
        let s = spec(&dir, Mode::Rndrw);
        let (bytes, _) = prepare(&s, |_, _| {}).unwrap();
        assert_eq!(bytes, s.total);
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        assert_eq!(cleanup(&s).unwrap(), 4);
        assert!(
            dir.join("notes.txt").exists(),
            "a foreign file is left alone"
        );
        let _ = fs::remove_dir_all(&base);
    }
}
