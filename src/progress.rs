//! What an operation reports while it runs (`Event`) and where it goes (`Progress`): a person's lines
//! (`Human`: lines on stderr, deploy's spinner, prepare's bar), or nowhere (`Silent`). Below every
//! layer, so that what an operation calls reports through its sink too; `ops` hands them on.

/// Something an operation reports while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A step of a long operation, for a human ("deploying stack s (ha ×2) on the local engine").
    Step(&'a str),
    /// What happened to one service of the stack during a deploy or teardown.
    Service { service: &'a str, what: &'a str },
    /// How far a counted step is (rows seeded, requests sent).
    Count { done: u64, total: u64 },
    /// Something a human should read and the outcome does not carry (a `note:` or `warning:` line).
    Note(&'a str),
}

/// Where an operation's events go: human lines, `--json` events, or nowhere (`Silent`). Shared by the
/// tasks of one operation, hence `&self` and `Sync`.
pub trait Progress: Sync {
    fn event(&self, event: Event<'_>);
}

/// Progress for a person: its lines on stderr, and on a terminal a spinner or a bar beside them. Notes
/// are always said (on stderr, with `--json` too: stdout is the outcome); steps and services unless
/// `quiet` (`--json`, load's `--quiet`). Three modes: `lines` (most commands; a load slice, whose stdout
/// is its messages), `deploying` (deploy's spinner, its steps on stdout) and `counting` (prepare's bar of
/// rows). Whatever is drawn is cleared when the sink is dropped: drop it before printing the outcome.
pub struct Human {
    quiet: bool,
    /// Steps on stdout (deploy's: the plan it applies is part of its output); on stderr otherwise.
    steps_on_stdout: bool,
    /// A deploy's stack: each service's line is `STACK SERVICE: WHAT`, not `  SERVICE: WHAT`.
    stack: Option<String>,
    drawn: Option<Drawn>,
}

/// What is drawn on the terminal beside the lines.
enum Drawn {
    /// Ticking, its message the last service heard of; lines are printed above it.
    Spinner(indicatif::ProgressBar),
    /// How far the count is (`Event::Count`); put away while a line is printed.
    Bar(indicatif::ProgressBar),
}

impl Human {
    /// Lines on stderr, nothing drawn: steps, `  SERVICE: WHAT`, and notes.
    pub fn lines(quiet: bool) -> Human {
        Human {
            quiet,
            steps_on_stdout: false,
            stack: None,
            drawn: None,
        }
    }

    /// A deploy of `stack`: a spinner on a terminal ("deploying STACK", then the last service heard of)
    /// unless `quiet`, each service's line on stderr as `STACK SERVICE: WHAT`, the steps on stdout.
    pub fn deploying(stack: &str, quiet: bool) -> Human {
        let drawn = (!quiet && stderr_is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b.set_message(format!("deploying {stack}"));
            Drawn::Spinner(b)
        });
        Human {
            quiet,
            steps_on_stdout: true,
            stack: Some(stack.to_string()),
            drawn,
        }
    }

    /// A counted run: with `bar`, a bar of `template` (indicatif's, its `{bar:30}` drawn with `=> `) on
    /// a terminal, following each `Event::Count`; steps and notes on stderr either way.
    pub fn counting(bar: bool, template: &str) -> Human {
        let drawn = (bar && stderr_is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(0);
            b.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .expect("template")
                    .progress_chars("=> "),
            );
            Drawn::Bar(b)
        });
        Human {
            quiet: false,
            steps_on_stdout: false,
            stack: None,
            drawn,
        }
    }

    /// A line on stderr, above what is drawn.
    fn err(&self, line: &str) {
        match &self.drawn {
            Some(Drawn::Spinner(b)) => b.println(line),
            Some(Drawn::Bar(b)) => b.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// A line on stdout, what is drawn put away meanwhile.
    fn out(&self, line: &str) {
        match &self.drawn {
            Some(Drawn::Spinner(b) | Drawn::Bar(b)) => b.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }
}

fn stderr_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}

impl Progress for Human {
    fn event(&self, e: Event<'_>) {
        match e {
            Event::Note(line) => self.err(line),
            Event::Step(line) if !self.quiet => match self.steps_on_stdout {
                true => self.out(line),
                false => self.err(line),
            },
            Event::Service { service, what } if !self.quiet => match &self.stack {
                Some(stack) => {
                    self.err(&format!("{stack} {service}: {what}"));
                    if let Some(Drawn::Spinner(b)) = &self.drawn {
                        b.set_message(format!("deploying {stack}: last {service}"));
                    }
                }
                None => self.err(&format!("  {service}: {what}")),
            },
            Event::Count { done, total } => {
                if let Some(Drawn::Bar(b)) = &self.drawn {
                    b.set_length(total);
                    b.set_position(done);
                }
            }
            Event::Step(_) | Event::Service { .. } => {}
        }
    }
}

impl Drop for Human {
    fn drop(&mut self) {
        if let Some(Drawn::Spinner(b) | Drawn::Bar(b)) = &self.drawn {
            b.finish_and_clear();
        }
    }
}

/// Reports nothing: for programs that only want the outcome.
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: Event<'_>) {}
}
