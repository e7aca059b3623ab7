//! Memory allocators, preloaded into the server (LD_PRELOAD) and verified in /proc/PID/maps:
//! the loader silently ignores a preload it cannot open, so "asked for" proves nothing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Allocator {
    /// The C library's malloc: nothing preloaded.
    #[default]
    Glibc,
    Jemalloc,
    Tcmalloc,
    Mimalloc,
    /// Any shared library, e.g. a build of one of the above.
    Path(PathBuf),
}

/// Library file names of the known allocators, most wanted first, and the Debian package.
const KNOWN: [(&str, &[&str], &str); 3] = [
    (
        "jemalloc",
        &["libjemalloc.so.2", "libjemalloc.so.1", "libjemalloc.so"],
        "libjemalloc2",
    ),
    (
        "tcmalloc",
        &[
            "libtcmalloc_minimal.so.4",
            "libtcmalloc.so.4",
            "libtcmalloc_minimal.so",
        ],
        "libtcmalloc-minimal4",
    ),
    (
        "mimalloc",
        &["libmimalloc.so.2", "libmimalloc.so.2.0", "libmimalloc.so"],
        "libmimalloc2.0",
    ),
];

impl FromStr for Allocator {
    type Err = String;

    fn from_str(s: &str) -> Result<Allocator, String> {
        Ok(match s {
            "glibc" | "system" | "default" => Allocator::Glibc,
            "jemalloc" => Allocator::Jemalloc,
            "tcmalloc" => Allocator::Tcmalloc,
            "mimalloc" => Allocator::Mimalloc,
            p if p.contains('/') => Allocator::Path(PathBuf::from(p)),
            _ => {
                return Err(format!(
                    "'{s}' is not an allocator; use glibc, jemalloc, tcmalloc, mimalloc, or a path to a .so file"
                ))
            }
        })
    }
}

impl fmt::Display for Allocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allocator::Glibc => f.write_str("glibc"),
            Allocator::Jemalloc => f.write_str("jemalloc"),
            Allocator::Tcmalloc => f.write_str("tcmalloc"),
            Allocator::Mimalloc => f.write_str("mimalloc"),
            Allocator::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

impl From<Allocator> for String {
    fn from(a: Allocator) -> String {
        a.to_string()
    }
}

/// The library file a preload uses, with what the package manager knows of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Library {
    /// Canonical path: what /proc/PID/maps shows.
    pub path: PathBuf,
    pub package: Option<String>,
    pub version: Option<String>,
}

impl Allocator {
    /// The library to preload; `Ok(None)` for glibc. The error says how to install it.
    pub fn library(&self) -> Result<Option<Library>, String> {
        let path = match self {
            Allocator::Glibc => return Ok(None),
            Allocator::Path(p) => {
                if !p.is_file() {
                    return Err(format!("allocator library {} does not exist", p.display()));
                }
                p.clone()
            }
            known => {
                let name = known.to_string();
                let (_, files, package) = KNOWN
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .ok_or_else(|| format!("unknown allocator {name}"))?;
                find_library(files).ok_or_else(|| {
                    format!("{name} is not installed (looked for {} in the library directories); install it with `sudo apt-get install {package}`, or give its path: --allocator=/path/to/lib.so", files.join(", "))
                })?
            }
        };
        let path = path
            .canonicalize()
            .map_err(|e| format!("allocator library {}: {e}", path.display()))?;
        let (package, version) = package_of(&path);
        Ok(Some(Library {
            path,
            package,
            version,
        }))
    }
}

fn library_dirs() -> Vec<PathBuf> {
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/usr/lib/{triple}"),
        format!("/lib/{triple}"),
        "/usr/lib64".into(),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

fn find_library(files: &[&str]) -> Option<PathBuf> {
    files.iter().find_map(|f| {
        library_dirs()
            .into_iter()
            .map(|d| d.join(f))
            .find(|p| p.is_file())
    })
}

/// (package, version) from dpkg, when the file belongs to a package.
fn package_of(path: &Path) -> (Option<String>, Option<String>) {
    let query = |args: &[&str]| -> Option<String> {
        let out = Command::new("dpkg-query").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    // dpkg knows the path it installed, which may be the usrmerge alias of the canonical one.
    let candidates = [
        path.to_path_buf(),
        PathBuf::from(path.to_string_lossy().replacen("/usr/lib/", "/lib/", 1)),
    ];
    let package = candidates.iter().find_map(|p| {
        query(&["-S", &p.to_string_lossy()])
            .and_then(|line| line.split(':').next().map(str::to_string))
    });
    let version = package
        .as_ref()
        .and_then(|p| query(&["-W", "-f=${Version}", p]));
    (package, version)
}

/// Whether a process's memory map (the text of /proc/PID/maps) has `lib` mapped; for glibc,
/// that none of the known allocators is.
pub fn check_maps(maps: &str, wanted: &Allocator, lib: Option<&Library>) -> Result<(), String> {
    match lib {
        Some(l) => {
            let p = l.path.to_string_lossy();
            if maps.lines().any(|line| line.ends_with(p.as_ref())) {
                Ok(())
            } else {
                Err(format!(
                    "{} is not mapped in the server: the preload did not take effect",
                    p
                ))
            }
        }
        None => {
            let found: Vec<&str> = KNOWN
                .iter()
                .flat_map(|(_, files, _)| files.iter())
                .filter(|f| maps.lines().any(|line| line.contains(*f)))
                .copied()
                .collect();
            if found.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{wanted} was asked for, but the server has {} mapped (linked in, or preloaded from outside)",
                    found.join(", ")
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_ones_say_what_is_accepted() {
        assert_eq!(
            "jemalloc".parse::<Allocator>().unwrap(),
            Allocator::Jemalloc
        );
        assert_eq!(
            "/opt/je/lib.so".parse::<Allocator>().unwrap(),
            Allocator::Path("/opt/je/lib.so".into())
        );
        assert!("hoard"
            .parse::<Allocator>()
            .unwrap_err()
            .contains("jemalloc"));
    }

    #[test]
    fn maps_check_finds_the_library_or_says_the_preload_failed() {
        let lib = Library {
            path: "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2".into(),
            package: None,
            version: None,
        };
        let maps = "7f0-7f1 r-xp 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n";
        assert!(check_maps(maps, &Allocator::Jemalloc, Some(&lib)).is_ok());
        let e = check_maps(
            "7f0-7f1 r-xp 0 0 0 /usr/lib/libc.so.6\n",
            &Allocator::Jemalloc,
            Some(&lib),
        )
        .unwrap_err();
        assert!(e.contains("did not take effect"), "{e}");
        let e = check_maps(maps, &Allocator::Glibc, None).unwrap_err();
        assert!(e.contains("libjemalloc.so.2"), "{e}");
    }
}

/// For the agent protocol, which carries variants as their text.
impl TryFrom<String> for Allocator {
    type Error = String;
    fn try_from(s: String) -> Result<Allocator, String> {
        s.parse()
    }
}
