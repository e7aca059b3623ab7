use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The servers a sysbench command line names: its sockets, or else every host x port pair
/// (sysbench's MySQL driver takes them round-robin, a connection each).
pub fn endpoints(sockets: &[std::path::PathBuf], hosts: &[String], ports: &[u16]) -> Vec<Endpoint> {
    if !sockets.is_empty() {
        return sockets.iter().cloned().map(Endpoint::Unix).collect();
    }
    hosts
        .iter()
        .flat_map(|host| {
            ports.iter().map(move |&port| Endpoint::Tcp {
                host: host.clone(),
                port,
            })
        })
        .collect()
}

/// A password. Debug and Display print `***` so it never reaches a log, report or JSON.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// From a command line or an environment variable, as is.
impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret::new(s))
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub endpoint: Endpoint,
    pub user: String,
    pub password: Secret,
    pub database: Option<String>,
    pub connect_timeout: Duration,
}

impl ConnectOptions {
    pub fn new(endpoint: Endpoint, user: &str, password: &str) -> Self {
        ConnectOptions {
            endpoint,
            user: user.to_string(),
            password: Secret::new(password),
            database: None,
            connect_timeout: Duration::from_secs(10),
        }
    }

    pub fn with_database(mut self, db: &str) -> Self {
        self.database = Some(db.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let o = ConnectOptions::new(Endpoint::Unix("/s".into()), "u", "hunter2");
        assert!(!format!("{o:?}").contains("hunter2"));
        assert_eq!(o.password.expose(), "hunter2");
    }
}
