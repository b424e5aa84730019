//! The kinds of failure and their exit codes: bad input (exit 2, naming the field, the value and the fix),
//! an unreachable target (3), a lock held by another (4); anything else fails on the target (1). Which
//! kind an error chain of the shell is, is `exectl::error::exit_code` (it knows the shell's types).

use std::fmt;

/// Bad input from the user: names the field, the value and the fix. Exit code 2, nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub field: String,
    pub value: String,
    pub problem: String,
    pub fix: String,
}

impl UsageError {
    pub fn new(
        field: impl Into<String>,
        value: impl fmt::Display,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        UsageError {
            field: field.into(),
            value: value.to_string(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} {:?}: {}; fix: {}",
            self.field, self.value, self.problem, self.fix
        )
    }
}

impl std::error::Error for UsageError {}

/// Several bad inputs found at once (deploy's and plan's preflight name every one, not only the first).
/// Exit code 2, as for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageErrors(pub Vec<UsageError>);

impl UsageErrors {
    /// Ok when there are none; one is itself; more are all of them.
    pub fn result(mut errors: Vec<UsageError>) -> anyhow::Result<()> {
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0).into()),
            _ => Err(UsageErrors(errors).into()),
        }
    }
}

impl fmt::Display for UsageErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problems:", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UsageErrors {}

/// Whether an error chain is bad input (one problem or several).
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.is::<UsageError>() || e.is::<UsageErrors>())
}

/// Exit codes: stable, documented in README, the same for every command.
pub mod exit {
    pub const OK: i32 = 0;
    /// A check failed (a leak, a service missing or unhealthy, a limit mismatch, a load that did not
    /// hold), or the command failed on the target.
    pub const FAILED: i32 = 1;
    /// Bad input: nothing was changed.
    pub const USAGE: i32 = 2;
    /// The target, its SSH server or its engine could not be reached, or refused the connection.
    pub const UNREACHABLE: i32 = 3;
    /// The stack is locked by another holder (or the lock was taken from this command).
    pub const LOCKED: i32 = 4;
}

/// The target or its engine could not be reached (exit 3). `fix` says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    pub what: String,
    pub fix: String,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; fix: {}", self.what, self.fix)
    }
}

impl std::error::Error for Unreachable {}
