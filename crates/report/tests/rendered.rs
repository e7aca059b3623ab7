//! The report as people see it: the PNG charts drawn, and the HTML page rendered by a real
//! browser (Debian's headless Chromium) with its charts drawn and no script errors.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bakeoff_report::{build, charts, html, Options, Rasterizer, Source};
use bakeoff_store::Store;
use common::{fixture, pixels_of};
use resvg::tiny_skia::Pixmap;

/// The first two series colours of every chart (Okabe-Ito blue and vermillion).
const BLUE: (u8, u8, u8) = (0x00, 0x72, 0xB2);
const VERMILLION: (u8, u8, u8) = (0xD5, 0x5E, 0x00);

fn model(name: &str) -> bakeoff_report::Model {
    let db = fixture(name, "");
    let store = Store::open(db.path()).unwrap();
    build(
        &Source::from_store(&store, None).unwrap(),
        &Options::default(),
    )
    .unwrap()
}

#[test]
fn png_charts_are_drawn_at_twice_their_size_with_their_series() {
    let m = model("png");
    let chart = charts(&m)
        .into_iter()
        .find(|c| c.name == "oltp_point_select-throughput")
        .unwrap();
    let png = Rasterizer::new().unwrap().png(&chart.svg).unwrap();
    let img = Pixmap::decode_png(&png).unwrap();
    assert_eq!((img.width(), img.height()), (1520, 880));
    let (blue, red) = (
        pixels_of(img.data(), BLUE),
        pixels_of(img.data(), VERMILLION),
    );
    assert!(
        blue > 500 && red > 500,
        "series drawn: {blue} blue, {red} vermillion pixels"
    );
    // Text drawn: the axis labels are dark grey-to-black glyphs.
    assert!(pixels_of(img.data(), (0x22, 0x22, 0x22)) + pixels_of(img.data(), (0, 0, 0)) > 2000);
}

/// Run Chromium headless on `page` with `args`; (stdout, stderr). Killed after a minute.
fn chromium(dir: &Path, page: &Path, args: &[String]) -> (String, String) {
    let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|b| Path::new(b).exists())
        .unwrap_or_else(|| {
            panic!("this test renders the report in Chromium and found none: install it with `sudo apt-get install chromium` (scripts/test does)")
        });
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let mut child = Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
    )
}

#[test]
fn chromium_renders_the_report_with_its_charts_and_no_script_errors() {
    let m = model("browser");
    let dir = bakeoff_testkit::scratch::dir("browser");
    let page = dir.join("report.html");
    std::fs::write(&page, html(&m)).unwrap();

    // The DOM as the browser parsed it: every chart an SVG element, nothing rejected.
    let (dom, log) = chromium(&dir, &page, &["--dump-dom".into()]);
    let svgs = dom.matches("<svg").count();
    assert_eq!(svgs, charts(&m).len(), "every chart in the parsed page");
    assert!(!dom.contains("parsererror"), "an SVG failed to parse");
    for bad in ["Uncaught", ":CONSOLE("] {
        assert!(!log.contains(bad), "the page logged {bad}:\n{log}");
    }

    // What a reader sees at the top of the page: the first throughput chart, drawn.
    let shot = dir.join("shot.png");
    let (_, log) = chromium(
        &dir,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1100,1000".into(),
        ],
    );
    for bad in ["Uncaught", ":CONSOLE("] {
        assert!(!log.contains(bad), "the page logged {bad}:\n{log}");
    }
    let img = Pixmap::load_png(&shot).unwrap_or_else(|e| panic!("no screenshot: {e}\n{log}"));
    let (blue, red) = (
        pixels_of(img.data(), BLUE),
        pixels_of(img.data(), VERMILLION),
    );
    assert!(
        blue > 300 && red > 300,
        "the throughput chart's lines are on screen: {blue} blue, {red} vermillion pixels"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
