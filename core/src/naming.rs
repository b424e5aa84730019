//! The names of the objects exectl creates on a target: one rule, `exectl-STACK-NAME`, for containers,
//! volumes and the network. Pure. The compose template writes the same prefix for volumes and the
//! network (tests/plan.rs renders it and compares with these).

/// What every object of a stack's name starts with.
pub fn prefix(stack: &str) -> String {
    format!("exectl-{stack}")
}

/// A name as a folder's: lower case, each run of other characters than ASCII letters and digits one
/// `-`, none at either end (a campaign row's "Idle 100 · 1" is `idle-100-1`).
pub fn slug(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A service's container.
pub fn container(stack: &str, service: &str) -> String {
    format!("{}-{service}", prefix(stack))
}

/// One of the stack's volumes (`app-data`, `db-data`, `redis-data`).
pub fn volume(stack: &str, name: &str) -> String {
    format!("{}-{name}", prefix(stack))
}

/// Pure: whether a volume of the stack holds its database's data.
pub fn is_db_volume(stack: &str, volume_name: &str) -> bool {
    volume_name == volume(stack, "db-data")
}

#[cfg(test)]
mod slug_tests {
    #[test]
    fn a_slug_is_lower_case_words_joined_by_dashes() {
        assert_eq!(super::slug("Idle 100 · 1"), "idle-100-1");
        assert_eq!(super::slug("--a__B--"), "a-b");
        assert_eq!(super::slug("···"), "");
    }
}
