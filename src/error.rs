//! One error type for bad input, so every boundary can map it to exit code 2.

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

/// A transport failure of the engine API (no answer, connection refused or reset, timeout), as
/// opposed to an answer of the engine refusing a request (which is the command failing: exit 1).
fn engine_unreachable(e: &bollard::errors::Error) -> bool {
    use bollard::errors::Error as E;
    matches!(
        e,
        E::IOError { .. }
            | E::HyperResponseError { .. }
            | E::HyperLegacyError { .. }
            | E::RequestTimeoutError
            | E::SocketNotFoundError(_)
    )
}

/// Exit code for an error chain, by the kind of its causes: bad input first (nothing changed), then a
/// lock held by another, then an unreachable target; anything else is a failure on the target.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    let any = |f: &dyn Fn(&(dyn std::error::Error + 'static)) -> bool| err.chain().any(f);
    if is_usage(err) {
        exit::USAGE
    } else if any(&|e| {
        e.is::<crate::engine::lock::Locked>() || e.is::<crate::engine::lock::LockLost>()
    }) {
        exit::LOCKED
    } else if any(&|e| {
        e.is::<Unreachable>()
            || e.is::<crate::sut::ssh::SshError>()
            || e.downcast_ref::<bollard::errors::Error>()
                .is_some_and(engine_unreachable)
    }) {
        exit::UNREACHABLE
    } else {
        exit::FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn codes_by_kind_of_cause() {
        let usage = anyhow::Error::new(UsageError::new("--cpus", "x", "p", "f"));
        assert_eq!(
            exit_code(&usage.context("deploy would refuse")),
            exit::USAGE
        );
        let two = vec![
            UsageError::new("--cpus", "9", "p", "f"),
            UsageError::new("--lb-port", "80", "q", "g"),
        ];
        let both = UsageErrors::result(two).unwrap_err();
        assert_eq!(exit_code(&both), exit::USAGE);
        let text = format!("{both:#}");
        assert!(
            text.starts_with("2 problems:") && text.contains("\n  - invalid --lb-port"),
            "{text}"
        );
        let one = UsageErrors::result(vec![UsageError::new("--cpus", "9", "p", "f")]).unwrap_err();
        assert!(one.is::<UsageError>());
        assert!(UsageErrors::result(vec![]).is_ok());
        let locked = anyhow::Error::new(crate::engine::lock::LockLost {
            stack: "s".into(),
            taken_by: "t".into(),
        });
        assert_eq!(exit_code(&locked), exit::LOCKED);
        let down = anyhow::Error::new(Unreachable {
            what: "the engine does not answer".into(),
            fix: "start it".into(),
        });
        assert_eq!(exit_code(&down), exit::UNREACHABLE);
        let io = bollard::errors::Error::IOError {
            err: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(
            exit_code(&Err::<(), _>(io).context("listing").unwrap_err()),
            exit::UNREACHABLE
        );
        let refused = bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            message: "conflict".into(),
        };
        assert_eq!(exit_code(&anyhow::Error::new(refused)), exit::FAILED);
        assert_eq!(exit_code(&anyhow::anyhow!("boom")), exit::FAILED);
    }
}
