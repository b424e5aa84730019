//! `--levels 100,500,1000`: the user counts a bench runs, in order.

use crate::error::UsageError;
use crate::units;

/// Strictly ascending user counts, at least one.
pub type Levels = Vec<u64>;

/// Most users one level may ask for: far past one generator host, short of any overflow.
pub const MAX_USERS: u64 = 1_000_000;

pub fn parse_levels(text: &str) -> Result<Levels, UsageError> {
    let bad = |problem: String| {
        UsageError::new(
            "--levels",
            text,
            problem,
            "give ascending user counts separated by commas, e.g. --levels 100,500,1000,2500",
        )
    };
    let mut out: Levels = Vec::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(bad("an empty level".into()));
        }
        let n = units::count_in(part, 1, MAX_USERS)
            .map_err(|i| bad(format!("{part}: {}", i.problem)))?;
        if let Some(&last) = out.last() {
            if n <= last {
                return Err(bad(format!("{n} does not come after {last}: levels go up")));
            }
        }
        out.push(n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_counts_and_each_bad_one_named() {
        assert_eq!(parse_levels("100, 500,1000").unwrap(), vec![100, 500, 1000]);
        for (bad, says) in [
            ("", "empty"),
            ("100,,500", "empty"),
            ("500,100", "100 does not come after 500"),
            ("100,100", "does not come after"),
            ("0", "0"),
            ("1e30", "1e30"),
            ("100,abc", "abc"),
            ("2000000", "2000000"),
        ] {
            let e = parse_levels(bad).unwrap_err();
            assert_eq!(e.field, "--levels");
            assert!(e.problem.contains(says), "{bad}: {e}");
        }
    }
}
