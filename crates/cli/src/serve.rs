//! `bakeoff server start`: a verified server variant to work against by hand or with other
//! tools, until Ctrl-C.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;

use crate::args::EmbeddedArgs;
use crate::exit::{EXIT_FAILED, INTERRUPTED};
use bakeoff_study::lab::{Running, Servers};

use crate::target::start_embedded;

pub fn start(e: &EmbeddedArgs) -> Result<ExitCode> {
    if e.variant.instances > 1 {
        anyhow::bail!("--instances: `server start` runs one server; start one per terminal, or use `bakeoff run --instances`");
    }
    let Servers::Started(mut started) = start_embedded(e)? else {
        anyhow::bail!("no server started");
    };
    let Some(Running::Here(mut server)) = started.pop() else {
        anyhow::bail!("no server started");
    };
    if let Some(problems) = server.variant_problems() {
        eprintln!("The variant did not take effect; stopping the server:\n{problems}");
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    let cnf = server.write_client_file()?;
    println!(
        "Server {} running (pid {}).",
        server.version(),
        server.pid().unwrap_or(0)
    );
    println!("  socket:       {}", server.socket().display());
    println!("  tcp:          127.0.0.1:{}", server.port());
    println!("  user / db:    {} / {}", server.user(), server.database());
    println!(
        "  credentials:  {} (mode 0600; removed when the server stops)",
        cnf.display()
    );
    println!();
    println!("Connect:");
    if server.protocol() == bakeoff_driver::Protocol::Postgres {
        let dir = server.socket().parent().unwrap_or(server.socket());
        println!(
            "  PGPASSFILE={} psql -h {} -p {} -U {} {}",
            cnf.display(),
            dir.display(),
            server.port(),
            server.user(),
            server.database()
        );
        println!(
            "  PGPASSWORD=\"$(sed -n '2s/.*://p' {})\" bakeoff run oltp_read_only --server postgresql://{}@127.0.0.1:{}/{}",
            cnf.display(),
            server.user(),
            server.port(),
            server.database()
        );
    } else {
        println!("  mariadb --defaults-file={}", cnf.display());
        println!(
            "  BAKEOFF_MYSQL_PASSWORD=\"$(sed -n 's/^password=//p' {})\" bakeoff run oltp_read_only --mysql-socket={}",
            cnf.display(),
            server.socket().display()
        );
    }
    println!();
    println!("Ctrl-C stops the server and removes its directory.");
    while !INTERRUPTED.load(Ordering::Relaxed) {
        if let Some(status) = server.exited() {
            eprintln!(
                "The server exited on its own ({status}); last lines of its error log:\n{}",
                server.error_log_tail(25)
            );
            return Ok(ExitCode::from(EXIT_FAILED));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("Stopping the server...");
    server.stop();
    // Ctrl-C is how this command is meant to end.
    Ok(ExitCode::SUCCESS)
}
