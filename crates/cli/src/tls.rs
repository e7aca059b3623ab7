//! `--mysql-ssl` and its files, in both grammars, as the driver's [`Tls`].

use std::path::{Path, PathBuf};

use bakeoff_driver::{SslMode, Tls};

/// The modes `--mysql-ssl` takes, for its errors.
const MODES: &str =
    "DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY (or sysbench 1.0.20's on/off)";

/// clap's check of `--mysql-ssl`: the value as given, once it names a mode.
pub fn parse_mode(v: &str) -> Result<String, String> {
    match SslMode::parse(v) {
        Some(_) => Ok(v.to_string()),
        None => Err(format!("'{v}' is not a TLS mode: use one of {MODES}")),
    }
}

/// sysbench 1.0.20's `--mysql-ssl=on` reads these from the working directory.
const SYSBENCH_CA: &str = "cacert.pem";
const SYSBENCH_CERT: &str = "client-cert.pem";
const SYSBENCH_KEY: &str = "client-key.pem";

/// What the options say, with sysbench 1.0.20's files for `on` (where they are, and the
/// options name no others), checked: a file that cannot be read is named now, before a
/// server is started or a connection opened.
pub fn options(
    mode: &str,
    ca: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
    cipher: Option<&str>,
) -> Result<Tls, String> {
    let parsed =
        SslMode::parse(mode).ok_or_else(|| format!("--mysql-ssl={mode}: use one of {MODES}"))?;
    let sysbench_on = matches!(
        mode.to_ascii_lowercase().as_str(),
        "on" | "1" | "true" | "yes"
    );
    // As 1.0.20 passes them to the client library, which fails on a file that is not there.
    let default = |given: Option<&Path>, file: &str| -> Result<Option<PathBuf>, String> {
        match given {
            Some(p) => Ok(Some(p.to_path_buf())),
            None if !sysbench_on => Ok(None),
            None if Path::new(file).exists() => Ok(Some(PathBuf::from(file))),
            None => Err(format!(
                "--mysql-ssl=on reads {file} from the working directory, as sysbench 1.0.20 does, and there is none in {}: put it there, name the files with --mysql-ssl-ca, --mysql-ssl-cert and --mysql-ssl-key, or use --mysql-ssl=REQUIRED (no files)",
                std::env::current_dir().map_or(".".into(), |d| d.display().to_string())
            )),
        }
    };
    let mut tls = Tls::new(parsed);
    tls.ca = default(ca, SYSBENCH_CA)?;
    tls.cert = default(cert, SYSBENCH_CERT)?;
    tls.key = default(key, SYSBENCH_KEY)?;
    tls.cipher = cipher.filter(|c| !c.is_empty()).map(str::to_string);
    if parsed == SslMode::Disabled && (ca.is_some() || cert.is_some() || key.is_some()) {
        return Err("--mysql-ssl-ca, --mysql-ssl-cert and --mysql-ssl-key need TLS: add --mysql-ssl=REQUIRED (or VERIFY_CA, VERIFY_IDENTITY)".into());
    }
    tls.check()?;
    Ok(tls)
}
