//! A server that listens for other hosts (`ServerSpec::listen`) is a door onto the network.
//! The lab keeps it narrow: one address (never an unspecified one, which means every
//! interface), accounts for the named client hosts only, passwords checked, TLS required
//! with a certificate of this run's CA. Options that would undo any of that are refused
//! before anything is started, with the reason.

use crate::{ServerError, ServerSpec};

/// Option names (dashes, no `loose-` prefix) that undo the lab's network settings, and why.
const UNDOES: &[(&str, &str)] = &[
    (
        "bind-address",
        "the lab binds the server to the one address the client hosts reach it by",
    ),
    (
        "skip-grant-tables",
        "it turns off every password and privilege check",
    ),
    (
        "skip-networking",
        "the client hosts could not reach the server at all",
    ),
];

/// Refuse a listening spec that would bind every address or carries an option from `UNDOES`
/// (in the server options or the variant's settings).
pub(crate) fn check(spec: &ServerSpec) -> Result<(), ServerError> {
    let Some(listen) = &spec.listen else {
        return Ok(());
    };
    if spec.tls.is_none() {
        return Err(ServerError::Refused(
            "a server for client hosts needs its certificate (ServerSpec::tls, made by lab_tls): its load account over the network requires TLS".into(),
        ));
    }
    if listen.address.is_unspecified() {
        return Err(ServerError::Refused(format!(
            "a server for client hosts would listen on {} (every address of its host): the lab listens on one address only; name the address the client hosts reach it by",
            listen.address
        )));
    }
    let given = spec
        .options
        .iter()
        .map(|o| option_name(o))
        .chain(spec.variant.settings.iter().map(|s| option_name(&s.name)));
    for name in given {
        if let Some((undone, why)) = undoes(&name) {
            return Err(ServerError::Refused(format!(
                "option '{name}' is refused for a server that listens for client hosts ({undone}: {why}); leave it out"
            )));
        }
    }
    Ok(())
}

/// The name of `name[=value]`, as the server reads it: dashes for underscores, lowercase,
/// without leading dashes or the `loose-` prefix.
fn option_name(option: &str) -> String {
    let name = option.trim().trim_start_matches('-');
    let name = name.split('=').next().unwrap_or(name);
    let name = name.to_ascii_lowercase().replace('_', "-");
    name.strip_prefix("loose-").unwrap_or(&name).to_string()
}

/// The entry of `UNDOES` that `name` sets, in any spelling the server accepts: the name itself,
/// with a `skip-`/`enable-`/`disable-` switch around its stem, or a prefix of it (the server
/// takes unambiguous prefixes of option names).
fn undoes(name: &str) -> Option<(&'static str, &'static str)> {
    let bare = |n: &str| {
        let n = n.strip_prefix("enable-").unwrap_or(n);
        let n = n.strip_prefix("disable-").unwrap_or(n);
        n.strip_prefix("skip-").unwrap_or(n).to_string()
    };
    let stem = bare(name);
    UNDOES.iter().copied().find(|(full, _)| {
        let full_stem = bare(full);
        stem == full_stem || (name.len() >= 4 && full.starts_with(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Listen;

    fn listening(options: &[&str], address: [u8; 4]) -> ServerSpec {
        ServerSpec {
            options: options.iter().map(|s| s.to_string()).collect(),
            listen: Some(Listen {
                address: address.into(),
                clients: vec![[169, 254, 77, 3].into()],
            }),
            tls: Some(crate::lab_ca().unwrap().server_tls(address.into()).unwrap()),
            ..ServerSpec::default()
        }
    }

    #[test]
    fn a_listening_server_never_binds_every_address() {
        let e = check(&listening(&[], [0, 0, 0, 0]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("0.0.0.0") && e.contains("every address"), "{e}");
        let v6 = ServerSpec {
            listen: Some(Listen {
                address: std::net::Ipv6Addr::UNSPECIFIED.into(),
                clients: vec![],
            }),
            ..listening(&[], [169, 254, 77, 2])
        };
        assert!(check(&v6).is_err());
        assert!(check(&listening(&[], [169, 254, 77, 2])).is_ok());
        let plain = ServerSpec {
            tls: None,
            ..listening(&[], [169, 254, 77, 2])
        };
        let e = check(&plain).unwrap_err().to_string();
        assert!(e.contains("requires TLS"), "{e}");
    }

    #[test]
    fn options_that_undo_the_lab_are_refused_in_every_spelling() {
        for bad in [
            "bind-address=0.0.0.0",
            "--bind_address=::",
            "skip-grant-tables",
            "loose-skip-grant-tables",
            "enable-skip-grant-tables",
            "skip_networking=1",
            "skip-grant",
            "bind-addr=0.0.0.0",
            "Skip-Networking",
            "bind=0.0.0.0",
        ] {
            let e = check(&listening(&[bad], [169, 254, 77, 2]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("refused") && e.contains("leave it out"),
                "{bad}: {e}"
            );
        }
        let mut spec = listening(&[], [169, 254, 77, 2]);
        spec.variant.settings = vec!["bind_address=0.0.0.0".parse().unwrap()];
        assert!(check(&spec).is_err());
        // Ordinary options pass, and a loopback server may be given anything.
        let ok = listening(
            &[
                "skip-name-resolve",
                "innodb_buffer_pool_size=1G",
                "port=3307",
            ],
            [169, 254, 77, 2],
        );
        assert!(check(&ok).is_ok(), "{:?}", check(&ok));
        let loopback = ServerSpec {
            options: vec!["skip-grant-tables".into()],
            ..ServerSpec::default()
        };
        assert!(check(&loopback).is_ok());
    }
}
