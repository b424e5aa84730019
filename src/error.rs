//! The exit code of an error chain, by the kind of its causes (the kinds and codes are
//! `exectl_core::error`; this knows the shell's own error types: the engine's, SSH's, the lock's).

use exectl_core::error::{exit, is_usage, Unreachable};

/// Exit code for an error chain, by the kind of its causes: bad input first (nothing changed), then a
/// lock held by another, then an unreachable target; anything else is a failure on the target.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    let any = |f: &dyn Fn(&(dyn std::error::Error + 'static)) -> bool| err.chain().any(f);
    if is_usage(err) {
        exit::USAGE
    } else if any(&|e| {
        e.is::<crate::engine::lock::Locked>()
            || e.is::<crate::engine::lock::LockLost>()
            || e.is::<crate::engine::run_lock::RunLocked>()
    }) {
        exit::LOCKED
    } else if any(&|e| e.is::<Unreachable>() || e.is::<crate::sut::ssh::SshError>())
        || crate::sut::transport_failure(err)
    {
        exit::UNREACHABLE
    } else {
        exit::FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use exectl_core::error::{UsageError, UsageErrors};

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
