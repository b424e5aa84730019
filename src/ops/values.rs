//! Values as options: the one place a flag's or a file's text becomes its value or its UsageError (exit 2),
//! read by `exectl_core::units`. Their value names say their kind (DURATION, SIZE, N, CPUS).

use exectl_core::error::UsageError;
use exectl_core::units::{self, Invalid};
use std::time::Duration;

/// A whole-number flag within `min..=max`.
pub fn count_flag(flag: &str, text: &str, min: u64, max: u64) -> Result<u64, UsageError> {
    checked(flag, text, units::count_in(text, min, max))
}

/// A duration flag within `min..=max`.
pub fn duration_flag(
    flag: &str,
    text: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, UsageError> {
    checked(flag, text, units::duration_in(text, min, max))
}

/// A flag's value as read by `core::units`, or the flag's UsageError (exit 2) naming the value.
pub fn checked<T>(flag: &str, text: &str, parsed: Result<T, Invalid>) -> Result<T, UsageError> {
    parsed.map_err(|i| UsageError::new(flag, text, i.problem, i.fix))
}

/// `--run-id` checked (a run id names a folder or a record: letters, digits, '.', '_' and '-', at most
/// 100, not starting with '.'), or `default` of the current unix time when none was given.
pub fn run_id(
    given: Option<&str>,
    example: &str,
    default: impl FnOnce(u64) -> String,
) -> Result<String, UsageError> {
    let Some(id) = given else {
        return Ok(default(crate::clock::unix_s()));
    };
    if !is_run_id(id) {
        return Err(UsageError::new(
            "--run-id",
            id,
            format!("only letters, digits, '.', '_' and '-' (at most {MAX_RUN_ID}, not starting with '.')"),
            format!("e.g. --run-id {example}"),
        ));
    }
    Ok(id.to_string())
}

/// The longest run id: it names a folder, and a file (RUN_ID.json) beside others.
const MAX_RUN_ID: usize = 100;

fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_RUN_ID
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// `--run-id` as [`run_id`] checks it, or, when none was given, `default` made from `name` (the value
/// of `field`, a name the user wrote, each character of it one of the id's) checked as `--run-id` is:
/// a 300-character campaign name made a run id that failed as "File name too long" after a deploy.
pub fn run_id_from_name(
    given: Option<&str>,
    example: &str,
    (field, name): (&str, &str),
    default: impl FnOnce(u64) -> String,
) -> Result<String, UsageError> {
    let id = run_id(given, example, default)?;
    if given.is_some() || is_run_id(&id) {
        return Ok(id);
    }
    let room = MAX_RUN_ID.saturating_sub(id.len().saturating_sub(name.chars().count()));
    Err(UsageError::new(
        field,
        name,
        format!(
            "the run id made from it, {}…, would be {} characters: a run id is at most {MAX_RUN_ID}",
            id.chars().take(24).collect::<String>(),
            id.len()
        ),
        format!("shorten it to at most {room} characters, or give --run-id (e.g. --run-id {example})"),
    ))
}

/// A run's folder: `--out DIR` when given, else `RUN_ID` under `runs_dir`; with the flag and the value
/// its check names.
pub fn run_folder(
    out: Option<&std::path::Path>,
    run_id: &str,
    runs_dir: &std::path::Path,
) -> (&'static str, String, std::path::PathBuf) {
    match out {
        Some(d) => ("--out", d.display().to_string(), d.to_path_buf()),
        None => ("--run-id", run_id.to_string(), runs_dir.join(run_id)),
    }
}

/// `--bcrypt-cost` (a campaign's `bcrypt_cost:`): bcrypt's own range, 4..=31.
pub fn bcrypt_cost(value: &str) -> Result<u32, UsageError> {
    Ok(count_flag("--bcrypt-cost", value, 4, 31)? as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_id_is_a_safe_folder_name_or_the_default() {
        let default = |now: u64| format!("X-{now}");
        assert_eq!(
            crate::ops::values::run_id(Some("E7-idle_1.a"), "E", default).unwrap(),
            "E7-idle_1.a"
        );
        let id = crate::ops::values::run_id(None, "E", default).unwrap();
        let now: u64 = id.strip_prefix("X-").unwrap().parse().unwrap();
        assert!(now > 1_700_000_000, "{id}");
        for bad in ["", ".hidden", "..", "a b", "a/b", &"x".repeat(101)] {
            let e = crate::ops::values::run_id(Some(bad), "B-1", default).unwrap_err();
            assert_eq!(e.field, "--run-id", "{bad:?}");
            assert!(e.to_string().contains("e.g. --run-id B-1"), "{e}");
        }
    }
}
