//! How bakeoff reaches a server it did not start: the `--mysql-*` options (sysbench's), or a
//! server URL with its password's source; TLS, the auth plugins' options and compression.

use clap::Args;

use super::values::{parse_bool, parse_max_packet};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "MySQL/MariaDB connection")]
pub struct MysqlArgs {
    /// A server you run, by URL, instead of the --mysql-* connection options:
    /// mysql://USER@HOST:3306/DATABASE?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/ca.pem (options:
    /// ssl-mode, ssl-ca, ssl-cert, ssl-key, ssl-cipher, socket, connect-timeout,
    /// get-server-public-key, server-public-key-path, enable-cleartext-plugin; the database
    /// defaults to sbtest). Never a password: it comes from MYSQL_PWD, --defaults-file or
    /// --password-command. bakeoff never starts, stops or reconfigures it.
    #[arg(long, value_name = "URL", conflicts_with_all = [
        "mysql_host", "mysql_socket", "mysql_user", "mysql_db", "mysql_ssl", "mysql_ssl_ca",
        "mysql_ssl_cert", "mysql_ssl_key", "mysql_ssl_cipher",
    ])]
    pub server: Option<String>,
    /// A MySQL option file whose [client] group (then --defaults-group) gives the --server's
    /// password (and user, when the URL names none), as the MySQL client reads it.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub defaults_file: Option<std::path::PathBuf>,
    /// The option file's group read after [client], e.g. client_bench.
    #[arg(long, value_name = "GROUP", requires = "defaults_file")]
    pub defaults_group: Option<String>,
    /// A command whose output is the --server's password, run again at every connect (an IAM
    /// token: `aws rds generate-db-auth-token ...`; send it with enable-cleartext-plugin=true
    /// over TLS).
    #[arg(long, value_name = "COMMAND", requires = "server")]
    pub password_command: Option<String>,
    /// The --server's own machine, over ssh (ssh://[user@]host[:port]): bakeoff finds the
    /// process listening on the server's port there and reads its CPU and memory, as for a
    /// server it started. Nothing there is started or changed. Without it, the server's CPU
    /// is unknown.
    #[arg(long, value_name = "ADDRESS", requires = "server")]
    pub server_ssh: Option<String>,
    /// On a server you give, whose sbtest tables `run` writes to: refuse (the default) runs
    /// only on tables `bakeoff prepare` made (each carries its marker); use runs on tables
    /// that are there, yours or sysbench's, if each is an ordinary table your account owns
    /// with no trigger or rule on it. A study's `existing_tables` says the same.
    #[arg(long, value_name = "refuse|use", value_parser = ["refuse", "use"], default_value = "refuse")]
    pub existing_tables: String,
    /// Server host (TCP); without it and --mysql-socket, bakeoff runs its embedded MariaDB.
    /// A list (db1,db2) spreads the connections over every host x port pair round-robin, as
    /// sysbench does; prepare and cleanup use the first.
    #[arg(long, value_delimiter = ',', value_name = "HOST[,HOST...]")]
    pub mysql_host: Vec<String>,
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "3306",
        value_name = "PORT[,PORT...]"
    )]
    pub mysql_port: Vec<u16>,
    /// Unix socket(s) of the server; a list spreads the connections over them.
    #[arg(long, value_delimiter = ',', value_name = "PATH[,PATH...]")]
    pub mysql_socket: Vec<std::path::PathBuf>,
    #[arg(long, default_value = "sbtest")]
    pub mysql_user: String,
    /// Password (also read from BAKEOFF_MYSQL_PASSWORD, which other users cannot see in `ps`).
    #[arg(
        long,
        env = "BAKEOFF_MYSQL_PASSWORD",
        default_value = "",
        hide_env_values = true
    )]
    pub mysql_password: bakeoff_driver::Secret,
    #[arg(long, default_value = "sbtest")]
    pub mysql_db: String,
    /// Seconds a connection may take to open, handshake included. A server whose listen
    /// queue (back_log, capped by net.core.somaxconn) is full is waited for within it, as a
    /// blocking connect waits.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub mysql_connect_timeout: u64,
    /// Server error codes that restart the event instead of stopping the run, or "all".
    #[arg(long, default_value = "1213,1020,1205")]
    pub mysql_ignore_errors: String,
    #[arg(long, default_value = "innodb")]
    pub mysql_storage_engine: String,
    /// auto = server-side prepared statements; disable = values substituted into text.
    #[arg(long, default_value = "auto", value_parser = ["auto", "disable"])]
    pub db_ps_mode: String,
    /// TLS on every connection: DISABLED, PREFERRED (TLS when the server offers it), REQUIRED,
    /// VERIFY_CA (the certificate signed by --mysql-ssl-ca) or VERIFY_IDENTITY (and naming the
    /// host): the MySQL client's --ssl-mode. sysbench 1.0.20's `on` is REQUIRED with its files
    /// from the working directory (cacert.pem, client-cert.pem, client-key.pem) unless the
    /// options below name others; `off` is DISABLED.
    #[arg(long, default_value = "off", value_parser = crate::tls::parse_mode, value_name = "MODE")]
    pub mysql_ssl: String,
    /// The CA certificate (PEM) that signs the server's certificate.
    #[arg(long, value_name = "FILE")]
    pub mysql_ssl_ca: Option<std::path::PathBuf>,
    /// The client's certificate (PEM), for accounts that REQUIRE X509.
    #[arg(long, value_name = "FILE")]
    pub mysql_ssl_cert: Option<std::path::PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub mysql_ssl_key: Option<std::path::PathBuf>,
    /// Cipher suites allowed, `:`-separated, by OpenSSL's names (ECDHE-RSA-AES128-GCM-SHA256)
    /// or IANA's (TLS_AES_128_GCM_SHA256).
    #[arg(long, value_name = "LIST")]
    pub mysql_ssl_cipher: Option<String>,
    /// caching_sha2_password on a plain TCP connection may ask the server for its RSA public
    /// key to encrypt the password with (the MySQL client's --get-server-public-key).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub mysql_get_server_public_key: bool,
    /// The server's RSA public key (PEM), for caching_sha2_password and sha256_password on a
    /// plain TCP connection (the MySQL client's --server-public-key-path).
    #[arg(long, value_name = "FILE")]
    pub mysql_server_public_key_path: Option<std::path::PathBuf>,
    /// Answer accounts on mysql_clear_password (LDAP, PAM, IAM tokens), which sends the
    /// password as it is: only over TLS or a unix socket even then.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub mysql_enable_cleartext_plugin: bool,
    /// The compressed protocol (zlib) on every connection, as sysbench's switch asks: for a
    /// server across a slow link; it costs both sides CPU per byte.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub mysql_compression: bool,
    /// The largest packet a server may send (a row, a statement's answer), and the most a
    /// compressed frame may inflate to; bigger is refused before it is read (K, M, G).
    /// The default is the largest max_allowed_packet MySQL and MariaDB take.
    #[arg(long, value_name = "SIZE", value_parser = parse_max_packet, default_value = "1G")]
    pub max_packet: usize,
    /// The most rows bakeoff keeps of one result set (admin queries, a script's con:query()).
    #[arg(long, value_name = "N", default_value_t = bakeoff_driver::Limits::MAX_ROWS as u64)]
    pub max_rows: u64,
    /// Seconds a statement of bakeoff's own outside the timed run (its checks, prepare's and
    /// cleanup's) may wait for the server's answer; 0: no limit. The timed run's statements
    /// and a Lua script's connections have none, as sysbench's have none.
    #[arg(long, value_name = "SECONDS", default_value_t = bakeoff_driver::Limits::READ_TIMEOUT.as_secs())]
    pub read_timeout: u64,
    /// The same for DDL and loads (CREATE TABLE, LOAD DATA, CREATE INDEX), which take as
    /// long as the data; 0 (the default): no limit.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub ddl_timeout: u64,
    /// Seconds a statement of the run may wait for the server's answer before the server
    /// counts as stalled and the run ends with that said (also a run of fixed work, which no
    /// clock ends); 0 (the default): no limit, as sysbench and pgbench wait, since long
    /// statements are legitimate.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub stall_timeout: u64,
}

impl MysqlArgs {
    /// What a server may make bakeoff hold or wait for.
    pub fn limits(&self) -> bakeoff_driver::Limits {
        let secs = |s: u64| (s > 0).then(|| std::time::Duration::from_secs(s));
        bakeoff_driver::Limits {
            max_packet: self.max_packet,
            max_rows: usize::try_from(self.max_rows).unwrap_or(usize::MAX),
            read_timeout: secs(self.read_timeout),
            ddl_timeout: secs(self.ddl_timeout),
            stall_timeout: secs(self.stall_timeout),
        }
    }

    /// What the auth plugins beyond the password's hash may do.
    pub fn auth(&self) -> bakeoff_driver::AuthOptions {
        bakeoff_driver::AuthOptions {
            get_server_public_key: self.mysql_get_server_public_key,
            server_public_key: self.mysql_server_public_key_path.clone(),
            cleartext: self.mysql_enable_cleartext_plugin,
            ..Default::default()
        }
    }
}
