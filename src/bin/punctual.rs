//! The `punctual` command-line program. See `punctual --help` and [`punctual::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    punctual::cli::install_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = punctual::cli::main(&args, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(code)
}
