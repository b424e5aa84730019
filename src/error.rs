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

/// Exit code for an error chain: 2 when the root cause is bad input, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
    {
        2
    } else {
        1
    }
}
