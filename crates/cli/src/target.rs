//! The servers a run starts, as its options describe them (the lab, `bakeoff_study::lab`,
//! starts them), and what is printed as each one is ready.

use anyhow::Result;
use bakeoff_server::ServerSpec;
use bakeoff_study::cell::start_servers;
use bakeoff_study::lab::{Running, Servers};

use crate::args::EmbeddedArgs;
use crate::output;

/// The server spec of each instance of the variant the options describe.
pub(crate) fn specs(e: &EmbeddedArgs) -> Result<Vec<ServerSpec>> {
    let variants = e.variant.variants().map_err(anyhow::Error::msg)?;
    let binary = match (&e.server_binary, e.db_driver.as_str()) {
        (Some(b), _) => Some(b.clone()),
        (None, "pgsql") => Some(bakeoff_server::find_postgres_binary()?),
        (None, _) => None,
    };
    check_settings(e, binary.as_deref())?;
    Ok(variants
        .into_iter()
        .map(|variant| ServerSpec {
            binary: binary.clone(),
            options: e.server_options.clone(),
            variant,
            start_timeout: std::time::Duration::from_secs(e.server_start_timeout),
            ..ServerSpec::default()
        })
        .collect())
}

/// Every `--set` and `--server-option` name checked against the server binary before a
/// server starts, as `study check` checks a study's: a misspelt name is said at once, with
/// the nearest one the server knows, instead of after a start that fails on it.
fn check_settings(e: &EmbeddedArgs, binary: Option<&std::path::Path>) -> Result<()> {
    let engine = match (binary, e.db_driver.as_str()) {
        (Some(b), _) => bakeoff_server::Engine::of_binary(b),
        (None, "pgsql") => bakeoff_server::Engine::PostgreSql,
        (None, _) => bakeoff_server::Engine::default(),
    };
    let named = e
        .variant
        .settings
        .iter()
        .map(|s| ("--set", s.name.clone(), s.value.clone()));
    // A plugin loaded by the options brings settings the binary alone does not list.
    let plugins = e.server_options.iter().any(|o| o.contains("plugin"));
    let options = e
        .server_options
        .iter()
        .filter(|_| !plugins)
        .filter_map(|o| option_setting(o))
        .map(|(name, value)| ("--server-option", name, value));
    let refused: Vec<String> = named
        .chain(options)
        .filter_map(|(option, name, value)| {
            bakeoff_study::setting_refused(engine, binary, &name, &value)
                .map(|why| format!("{option} {why}"))
        })
        .collect();
    match refused.is_empty() {
        true => Ok(()),
        false => Err(anyhow::anyhow!(
            "{}\nnothing was started",
            refused.join("\n")
        )),
    }
}

/// The setting a server option sets (`name[=value]`, the lab adds the dashes), and its value
/// ("" for none). The files a server reads its defaults from are options, not settings, and
/// are left to the server.
fn option_setting(option: &str) -> Option<(String, String)> {
    let bare = option.trim_start_matches('-');
    let (name, value) = bare.split_once('=').unwrap_or((bare, ""));
    let name = name.trim();
    let not_settings = [
        "no-defaults",
        "defaults-file",
        "defaults-extra-file",
        "defaults-group-suffix",
        "print-defaults",
    ];
    (!name.is_empty() && !not_settings.contains(&name.replace('_', "-").as_str()))
        .then(|| (name.to_string(), value.to_string()))
}

/// Start every instance of the variant the options describe, here, printing each one's
/// checks (`bakeoff server start`).
pub(crate) fn start_embedded(e: &EmbeddedArgs) -> Result<Servers> {
    let instances = e.variant.instances;
    let up = |i: usize, running: &Running, spec: &ServerSpec| {
        print_server_up(running, i, instances, spec)
    };
    Ok(start_servers(None, &specs(e)?, None, up)?)
}

/// A server is up: where, as which variant, and each axis as verified.
pub(crate) fn print_server_up(running: &Running, index: usize, instances: u32, spec: &ServerSpec) {
    match running {
        Running::Here(server) => eprintln!(
            "Embedded server {}{} ready on {} ({})",
            server.version(),
            if instances > 1 {
                format!(" #{}", index + 1)
            } else {
                String::new()
            },
            server.socket().display(),
            spec.variant
        ),
        Running::There(server) => eprintln!(
            "Server {} ready on {} at {}:{} ({})",
            server.version, server.host, server.address, server.port, spec.variant
        ),
    }
    for c in running.checks() {
        eprintln!("{}", output::check_line(c));
    }
}
