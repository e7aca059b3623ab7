//! Host probes end to end: cpu, memory and fileio as sysbench reports them.

mod common;

use common::{bakeoff, text};

#[test]
fn host_probes_report_as_sysbench_and_sweep_threads() {
    let o = bakeoff(&["host", "cpu", "--time=1", "--cpu-max-prime=2000"], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for needle in [
        "Prime numbers limit: 2000",
        "CPU speed:",
        "events per second:",
        "General statistics:",
        "Threads fairness:",
    ] {
        assert!(out.contains(needle), "{needle} missing:\n{out}");
    }
    let o = bakeoff(
        &[
            "host",
            "memory",
            "--memory-total-size=64M",
            "--threads=1,2",
            "--format=json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2, "one run per thread count");
    for r in runs {
        // 64 MiB in 1 KiB blocks, split over the threads: the work ends the run, not the time.
        assert_eq!(r["result"]["total"]["events"], 65536, "{r}");
    }
    let o = bakeoff(&["host", "memory", "--memory-block-size=3K"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("power of 2"), "{}", text(&o).1);
}

#[test]
fn fileio_prepares_runs_and_cleans_up_only_its_own_marked_directory() {
    let base = bakeoff_testkit::scratch::dir("cli-fileio");
    let dir = base.join("files");
    let d = format!("--file-dir={}", dir.display());
    let common = ["--file-total-size=4M", "--file-num=4", d.as_str()];
    let o = bakeoff(
        &[&["host", "fileio", "prepare"][..], &common[..]].concat(),
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        text(&o).0.contains("4194304 bytes written"),
        "{}",
        text(&o).0
    );
    let o = bakeoff(
        &[
            &[
                "host",
                "fileio",
                "run",
                "--file-test-mode=rndrw",
                "--time=1",
            ][..],
            &common[..],
        ]
        .concat(),
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for needle in [
        "Doing random r/w test",
        "File operations:",
        "fsyncs/s:",
        "written, MiB/s:",
        "General statistics:",
    ] {
        assert!(out.contains(needle), "{needle} missing:\n{out}");
    }
    let fsyncs: f64 = out
        .lines()
        .find(|l| l.contains("fsyncs/s:"))
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(fsyncs > 0.0, "periodic fsyncs happen");
    std::fs::write(dir.join("keep.me"), "not bakeoff's").unwrap();
    let o = bakeoff(
        &[&["host", "fileio", "cleanup"][..], &common[..]].concat(),
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(dir.join("keep.me").exists() && !dir.join("test_file.0").exists());
    // A directory bakeoff did not create is refused.
    let foreign = format!("--file-dir={}", base.display());
    let o = bakeoff(
        &[
            "host",
            "fileio",
            "prepare",
            "--file-total-size=4M",
            "--file-num=4",
            foreign.as_str(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("did not create"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&base);
}

/// A directory another local user prepared and marked, its test_file.0 a link to a file of
/// ours: bakeoff (root, in CI) refuses the directory and writes nothing through the link; in
/// a marked directory of our own, a link in place of a test file is refused too.
#[test]
fn a_planted_fileio_directory_and_linked_files_are_left_untouched() {
    use std::os::unix::fs::{chown, symlink};
    let base = bakeoff_testkit::scratch::dir("cli-planted");
    let victim = base.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let prepare = |dir: &std::path::Path| {
        let d = format!("--file-dir={}", dir.display());
        bakeoff(
            &[
                "host",
                "fileio",
                "prepare",
                "--file-total-size=1M",
                "--file-num=1",
                &d,
            ],
            None,
        )
    };
    let planted = base.join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(
        planted.join(".bakeoff-fileio"),
        "files of bakeoff host fileio\n",
    )
    .unwrap();
    symlink(&victim, planted.join("test_file.0")).unwrap();
    // Another user's, where this process may give it away (root may; others test the link).
    let given_away = chown(&planted, Some(65534), Some(65534)).is_ok()
        && chown(planted.join(".bakeoff-fileio"), Some(65534), Some(65534)).is_ok();
    let o = prepare(&planted);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o).0);
    if given_away {
        assert!(text(&o).1.contains("did not create"), "{}", text(&o).1);
        chown(&planted, Some(0), Some(0)).unwrap();
        chown(planted.join(".bakeoff-fileio"), Some(0), Some(0)).unwrap();
        let o = prepare(&planted);
        assert_ne!(
            o.status.code(),
            Some(0),
            "a link in our own marked directory"
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let _ = std::fs::remove_dir_all(&base);
}
