//! The lab's pg_hba.conf: who may log in, from where, how. First match wins.

use std::net::IpAddr;

use super::queries::ADMIN;
use crate::ServerSpec;

pub(crate) fn rules(spec: &ServerSpec, bind: IpAddr) -> String {
    let (db, user) = (&spec.database, &spec.user);
    let mut out = String::from("# Written by bakeoff's server lab for this run.\n");
    // The socket lies in the 0700 run directory: only the server's user and root reach it.
    out += &format!("local all {ADMIN} trust\n");
    // The load account on this machine: any database it may connect to (it owns only the
    // load database and can create none, but a test or a user may give it more).
    out += &format!("local all {user} scram-sha-256\n");
    out += &format!("host all {user} 127.0.0.1/32 scram-sha-256\n");
    out += &format!("host all {user} ::1/128 scram-sha-256\n");
    if let Some(l) = &spec.listen {
        let _ = bind;
        for c in &l.clients {
            let mask = if c.is_ipv4() { 32 } else { 128 };
            out += &format!("hostssl {db} {user} {c}/{mask} scram-sha-256\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_hosts_get_tls_only_lines_and_nobody_else_a_line() {
        let mut spec = ServerSpec::default();
        spec.listen = Some(crate::Listen {
            address: "10.0.0.1".parse().unwrap(),
            clients: vec!["10.0.0.2".parse().unwrap()],
        });
        let r = rules(&spec, "10.0.0.1".parse().unwrap());
        assert!(
            r.contains("hostssl sbtest sbtest 10.0.0.2/32 scram-sha-256"),
            "{r}"
        );
        assert!(!r.contains("0.0.0.0") && !r.contains(" all all "), "{r}");
        assert!(
            !r.contains("hostssl all"),
            "client hosts reach the load database only: {r}"
        );
        assert!(r.contains("local all bakeoff trust"));
    }
}
