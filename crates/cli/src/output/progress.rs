//! Progress lines as the flux CLI prints them on stderr (`► ` action, `✚ ` generate, `◎ `
//! waiting, `✔ ` success, `⚠️ ` warning, `✗ ` failure), and the spinner shown while waiting on a
//! controller. Tables and data go to stdout (`--export`, `get`); only these go to stderr, so a
//! script can pipe one without the other.

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::time::Duration;

fn line(symbol: &str, message: impl Display) {
    let mut err = std::io::stderr().lock();
    // A closed stderr must not abort the command whose result is elsewhere.
    let _ = writeln!(err, "{symbol} {message}");
}

pub fn action(message: impl Display) {
    line("►", message)
}

pub fn generate(message: impl Display) {
    line("✚", message)
}

pub fn waiting(message: impl Display) {
    line("◎", message)
}

pub fn success(message: impl Display) {
    line("✔", message)
}

pub fn warning(message: impl Display) {
    line("⚠️", message)
}

pub fn failure(message: impl Display) {
    line("✗", message)
}

/// Asks a yes/no question on stderr, as flux's confirmation prompts do, and reads the answer
/// from stdin: only `y` or `yes` (any case) is yes, so a closed stdin never confirms.
pub fn confirm(question: &str) -> std::io::Result<bool> {
    let mut err = std::io::stderr().lock();
    write!(err, "? {question} [y/N] ")?;
    err.flush()?;
    drop(err);
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Animates a spinner on its own line of stderr while alive, only when stderr is a terminal:
/// piped or captured output then reads exactly like flux's.
pub struct Spinner {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    /// Prints `◎ <message>` and, on a terminal, starts the animation below it.
    pub fn start(message: &str) -> Spinner {
        waiting(message);
        Spinner::start_quiet()
    }

    /// The animation alone, for waits whose `◎` lines are printed elsewhere.
    pub fn start_quiet() -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner {
                stop: None,
                task: None,
            };
        }
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
            let started = tokio::time::Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            for frame in FRAMES.iter().cycle() {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tick.tick() => {
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r{frame} {}s", started.elapsed().as_secs());
                        let _ = err.flush();
                    }
                }
            }
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        });
        Spinner {
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the animation and clears its line.
    pub async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
