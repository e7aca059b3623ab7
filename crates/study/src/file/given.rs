//! A `[[variant]]` that names a server the user runs (`server = "mysql://..."`) and what it
//! costs (`price_per_hour`, for any listed variant).

use std::path::PathBuf;

use super::spec::GivenServer;
use crate::reader::{one_of, Problems, Table};

/// The keys that set up a server bakeoff starts, which a given server does not take.
pub(super) const SETUP_KEYS: &[&str] = &[
    "allocator",
    "cpus",
    "numa",
    "instances",
    "binary",
    "settings",
];

/// `server` and the keys that go with it, read from a `[[variant]]`; None when it has no
/// `server` (then those keys are refused by name).
pub(super) fn given(p: &mut Problems, t: &mut Table) -> Option<GivenServer> {
    let server = t.string(p, "server");
    let defaults_file = t.string(p, "defaults_file");
    let defaults_group = t.string(p, "defaults_group");
    let password_command = t.string(p, "password_command");
    let existing = t.string(p, "existing_tables");
    let ssh = t.string(p, "ssh");
    let Some((url, span)) = server else {
        for (key, v) in [
            ("defaults_file", &defaults_file),
            ("defaults_group", &defaults_group),
            ("password_command", &password_command),
            ("existing_tables", &existing),
            ("ssh", &ssh),
        ] {
            if let Some((_, span)) = v {
                p.at(span.clone(), format!("`variant.{key}` is for a server you give: add server = \"mysql://user@host:3306/sbtest\""));
            }
        }
        return None;
    };
    if let Err(e) = bakeoff_driver::ServerUrl::parse(url) {
        p.at(span, format!("`variant.server`: {e}"));
        return None;
    }
    if let (Some((_, span)), None) = (&defaults_group, &defaults_file) {
        p.at(span.clone(), "`variant.defaults_group` names a group of `defaults_file`: add defaults_file = \"/path/to/my.cnf\"");
    }
    if let Some((h, span)) = &ssh {
        if let Err(e) = bakeoff_remote::HostUrl::parse(h) {
            p.at(span.clone(), format!("`variant.ssh`: {e}"));
        }
    }
    let use_existing_tables = match existing {
        None => false,
        Some((s, span)) => one_of(
            p,
            span,
            "variant.existing_tables",
            s,
            &[("refuse", false), ("use", true)],
        )
        .unwrap_or(false),
    };
    Some(GivenServer {
        url: url.to_string(),
        defaults_file: defaults_file.map(|(s, _)| PathBuf::from(s)),
        defaults_group: defaults_group.map(|(s, _)| s.to_string()),
        password_command: password_command.map(|(s, _)| s.to_string()),
        use_existing_tables,
        ssh: ssh.map(|(s, _)| s.to_string()),
    })
}

/// `price_per_hour`: a number >= 0.
pub(super) fn price(p: &mut Problems, t: &mut Table) -> Option<f64> {
    super::sections::money(p, t.get("price_per_hour"), "variant.price_per_hour")
}
